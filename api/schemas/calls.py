"""Dealer calls at a table: what the dealer announced or keyed for a roll, checked against the camera."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TableCallIn(BaseModel):
    """The face the dealer announced, the match count, or a full roll keyed at a dealer terminal."""

    model_config = ConfigDict(extra="forbid")

    roll: Literal[1, 2] = Field(default=1, description="1: the first roll; 2: the Extra Roll.")
    winner: int | None = Field(default=None, ge=1, le=6, description="The winning face announced.")
    match_count: int | None = Field(
        default=None, ge=0, le=10, description="The Like Kind count announced (the final count on roll 2)."
    )
    faces: list[int] | None = Field(
        default=None,
        min_length=1,
        max_length=10,
        description="Every die keyed at the terminal (on roll 2 only the rethrown dice), any order.",
    )

    @model_validator(mode="after")
    def _something_called(self) -> TableCallIn:
        if self.winner is None and self.match_count is None and self.faces is None:
            raise ValueError("call a winner, a match count or the faces")
        if self.faces is not None and any(not 1 <= f <= 6 for f in self.faces):
            raise ValueError("faces must be 1..6")
        return self


class TableCallOut(BaseModel):
    """Whether the call matches what the camera read (as the rules engine recorded it)."""

    round_id: int
    roll: int
    matches: bool
    called: dict[str, Any]
    camera_shows: dict[str, Any]
    mismatched: list[str]
    evidence_sha256: str | None
    alert_id: int | None
