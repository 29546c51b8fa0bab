"""The roll contract: what a reader or a dealer terminal submits (`RollSubmission`) and what the rules engine
answers (`RollAnswer`), over `POST /v1/tables/{table_id}/rolls`.

One model on both sides: the route parses the body into `RollSubmission`, the live loop (api/live.py), the
demo croupier (api/demo_table.py) and `throwbox loadtest` build one and send `RollSubmission.wire()`; the
service (api/rounds.py, `submit_roll`) answers with a `RollAnswer`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import DB_INT_MAX

ROLL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"


class RollSubmission(BaseModel):
    """A throw, from the reader or keyed by the dealer. Sending the same `roll_id` again applies it once."""

    model_config = ConfigDict(extra="forbid")

    roll_id: str = Field(pattern=ROLL_ID_PATTERN, description="The submitter's id of this throw.")
    source: Literal["reader", "dealer"] | None = Field(
        default=None,
        description="Who the roll is from. The server says it from the key's role (reader and worker keys: "
        "`reader`, the camera; dealer keys: `dealer`, keyed by hand); a body that names another is refused "
        "(403). May be left out.",
    )
    verdict: Literal["valid", "invalid", "void", "no_decision"]
    faces: list[int] = Field(
        max_length=10, description="The faces read (only the rethrown dice on an Extra Roll)."
    )
    reasons: list[str] = Field(default_factory=list, max_length=20)
    round_id: int | None = Field(
        default=None, ge=1, le=DB_INT_MAX, description="The round the submitter means; checked."
    )
    evidence_sha256: str | None = Field(
        default=None, pattern=SHA256_PATTERN, description="An evidence frame uploaded to /v1/evidence."
    )
    read_id: str | None = Field(default=None, max_length=64, description="The read this roll came from.")

    def wire(self) -> dict[str, Any]:
        """The JSON body a client sends: the fields it set, and only those (the rest take their defaults)."""
        return self.model_dump(mode="json", exclude_unset=True)


class RollAnswer(BaseModel):
    """What a roll did: applied or not, whether to rethrow, the round's phase and any settlement."""

    roll_id: str
    table_id: str
    round_id: int | None
    applied: bool
    duplicate: bool
    rethrow: bool
    needs_review: bool
    verdict: str
    source: str
    faces: list[int]
    message: str
    phase: str | None
    settled: bool
    round: dict[str, Any] | None = None
    created_at: datetime | None = None
