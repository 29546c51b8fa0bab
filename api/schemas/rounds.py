"""Rounds, wagers, dealer calls and corrections (rolls: api/schemas/rolls.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

# Money is decimal text, never a JSON number (a float cannot hold every sum of cents). A stake: up to 14
# digits, 6 after the point (the rules engine refuses what is not a positive sum of whole cents, by clause);
# a payment: whole cents, not negative.
STAKE_PATTERN = r"^-?[0-9]{1,8}(\.[0-9]{1,6})?$"
PAID_PATTERN = r"^[0-9]{1,12}(\.[0-9]{1,2})?$"


def _money_text(pattern: str) -> Callable[[object], object]:
    """A check that money came as text fitting `pattern` (searched as JSON Schema does), before Decimal."""
    compiled = re.compile(pattern)

    def check(value: object) -> object:
        if not isinstance(value, str) or compiled.search(value) is None:
            raise ValueError(f'money must be decimal text matching {pattern}, e.g. "5.00"')
        return value

    return check


Stake = Annotated[
    Decimal,
    BeforeValidator(_money_text(STAKE_PATTERN)),
    WithJsonSchema({"type": "string", "pattern": STAKE_PATTERN, "examples": ["5.00"]}),
]
Paid = Annotated[
    Decimal,
    BeforeValidator(_money_text(PAID_PATTERN)),
    WithJsonSchema({"type": "string", "pattern": PAID_PATTERN, "examples": ["20.00"]}),
]


Face = Annotated[int, Field(ge=1, le=6)]


class WagerIn(BaseModel):
    """One wager at one seat; the rules engine validates it and names the clause it breaks."""

    model_config = ConfigDict(extra="forbid")

    seat: int = Field(ge=-1000, le=1000, description="Betting position (1..5 in High Roll Dice).")
    kind: Literal["pip_street", "like_kind", "extra_roll", "millionaire_row"]
    amount: Stake = Field(
        max_digits=14, decimal_places=6, description='The stake as decimal text ("5.00"): money is decimal.'
    )
    face: int | None = Field(default=None, ge=-1000, le=1000, description="Pip Street face 1..6.")
    count: Annotated[int, Field(ge=-1000, le=1000)] | Literal["no_match"] | None = Field(
        default=None, description='Like Kind / Millionaire Row circle; "no_match" on six dice.'
    )


class WagersIn(BaseModel):
    """Wagers to place together: all are accepted or none."""

    model_config = ConfigDict(extra="forbid")

    wagers: list[WagerIn] = Field(min_length=1, max_length=200)


class DealerCallIn(BaseModel):
    """What the dealer announced for a roll; a mismatch with the dice raises an alert."""

    model_config = ConfigDict(extra="forbid")

    roll: Literal[1, 2] = Field(description="1: the first roll; 2: the Extra Roll (final count).")
    winner: int | None = Field(default=None, ge=1, le=6)
    match_count: int = Field(ge=0, le=10, description="Like Kind count called (final count on roll 2).")


class PayoutIn(BaseModel):
    """What the dealer paid a seat for a settled round (net winnings, stakes returned on top)."""

    model_config = ConfigDict(extra="forbid")

    seat: int = Field(ge=1, le=1000)
    paid: Paid = Field(ge=0, max_digits=14, decimal_places=2, description='Money as decimal text: "20.00".')


class PayoutOut(BaseModel):
    """Whether the payment matches the settlement."""

    matches: bool
    seat: int
    paid: str
    settlement_says: str
    alert_id: int | None


class DealerCallOut(BaseModel):
    """Whether the call matches the dice."""

    matches: bool
    called: dict[str, Any]
    dice_show: dict[str, Any]
    alert_id: int | None


class CorrectionIn(BaseModel):
    """A supervisor's correction: the dice as they really were; the engine settles the wagers again."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=3, max_length=2000)
    # The faces as the engine takes them: 1..6; ten or six dice (which, by the round's game, the engine
    # checks); an Extra Roll rethrows 1..8 dice (a first roll of ten keeps at least two of its winning face).
    first_roll: list[Face] = Field(min_length=6, max_length=10, description="All the dice of the first roll.")
    extra_roll: list[Face] | None = Field(
        default=None,
        min_length=1,
        max_length=8,
        description="The rethrown dice of the Extra Roll, if bought.",
    )


class CorrectionOut(BaseModel):
    """A correction: a new entry linked to the round (and to the correction it supersedes)."""

    id: int
    round_id: int
    supersedes_id: int | None
    reason: str
    settlement: dict[str, Any]
    made_by: str
    created_at: datetime


class RoundOut(BaseModel):
    """A round: its wagers, steps, the engine's view of it, and any corrections."""

    id: int
    table_id: str
    game: str
    phase: str
    config: dict[str, Any]
    wagers: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    summary: dict[str, Any]
    settlement: dict[str, Any] | None
    opened_by: str
    opened_at: datetime
    settled_at: datetime | None
    closed_at: datetime | None
    corrections: list[CorrectionOut]
