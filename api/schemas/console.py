"""The table console's documents (issue 56): a roll waiting for a person, a person's decision of it, and a
mismatch between the dealer's keyed roll and the reader's sure faces, for surveillance."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import DB_INT_MAX
from api.schemas.rolls import ROLL_ID_PATTERN, RollAnswer


class WaitingDieOut(BaseModel):
    """One die of the read, as the reader saw it (in reading order: how a person keys the faces)."""

    index: int = Field(description="The die's place in the read's document (a decision names dice so).")
    order: int = Field(description="Its place in reading order, 0 first: rows top to bottom, left to right.")
    face: int | None = Field(description="The reader's face (None: it could not tell).")
    guess: int | None = Field(description="The face model's most probable face, sure or not.")
    confidence: float
    box_xyxy: list[float]
    uncertain: bool = Field(description="The reader is not sure of this die: a person must look.")
    kept: bool = Field(description="An Extra Roll's kept die (in a layout box): not keyed.")
    notes: list[str]


class WaitingRollOut(BaseModel):
    """A roll the reader left to a person (`no_decision`), the newest of its table's open round."""

    roll_id: str
    table_id: str
    round_id: int
    phase: str
    kind: Literal["first_roll", "extra_roll"]
    dice_expected: int | None = Field(description="How many dice the person keys (an Extra Roll: rethrown).")
    read_id: str | None
    evidence_sha256: str | None
    reasons: list[str] = Field(description="Why the reader stopped, in plain words.")
    dice: list[WaitingDieOut]
    waiting_since: datetime


class DieCallIn(BaseModel):
    """The person's word on one die of the read: its face, or struck out (there is no die there)."""

    model_config = ConfigDict(extra="forbid")

    face: int | None = Field(default=None, ge=1, le=6)
    struck: bool = False


class AddedDieIn(BaseModel):
    """A die the camera missed, added by a click on the frame: its box (frame pixels) and face."""

    model_config = ConfigDict(extra="forbid")

    box_xyxy: list[float] = Field(min_length=4, max_length=4)
    face: int = Field(ge=1, le=6)


class DecisionIn(BaseModel):
    """A person's decision of a waiting roll: the faces (one entry per die of the read, in the read's order,
    plus the dice the camera missed), or the roll called invalid or void by its rule (675a.4(b)-(c))."""

    model_config = ConfigDict(extra="forbid")

    table_id: str = Field(max_length=64)
    roll_id: str = Field(pattern=ROLL_ID_PATTERN, description="The waiting roll decided.")
    round_id: int = Field(ge=1, le=DB_INT_MAX, description="Its round: a round that moved on is refused.")
    call: Literal["valid", "off_table", "die_on_die", "cocked_multi_side"] = Field(
        description="valid (the faces as keyed); off_table or die_on_die (invalid, 675a.4(b)); "
        "cocked_multi_side (void, 675a.4(c))."
    )
    dice: list[DieCallIn] = Field(max_length=40)
    added: list[AddedDieIn] = Field(default_factory=list, max_length=20)


class DecisionOut(BaseModel):
    """What a decision did: the dealer roll it became (the rules engine's answer), and any mismatch."""

    roll_id: str
    dealer_roll_id: str
    read_id: str
    duplicate: bool
    mismatch: bool = Field(
        description="The person overruled a die the reader was sure of: surveillance sees it."
    )
    alert_id: int | None
    answer: RollAnswer


class MismatchOut(BaseModel):
    """A roll where the dealer's keyed result and the reader's sure faces disagree."""

    roll_id: str
    dealer_roll_id: str
    table_id: str
    round_id: int
    read_id: str
    evidence_sha256: str | None
    verdict: str
    faces: list[int] = Field(description="The dealer's keyed faces, in reading order.")
    boxes: list[dict[str, Any]] = Field(description="Each box: the reader's face and the person's.")
    decided_by: str
    created_at: datetime
    acknowledged_at: datetime | None
    acknowledged_by: str | None


class AcknowledgeIn(BaseModel):
    """Surveillance's acknowledgement of a mismatch, with an optional note."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=2000)
