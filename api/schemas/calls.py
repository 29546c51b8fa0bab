"""Dealer calls at a table: what the dealer announced or keyed for a roll, checked against the camera."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Face = Annotated[int, Field(ge=1, le=6)]


class TableCallIn(BaseModel):
    """The face the dealer announced, the match count, or a full roll keyed at a dealer terminal."""

    # At least one of winner, match_count and faces: said in the schema too, so clients see it.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": [name], "properties": {name: {"not": {"type": "null"}}}}
                for name in ("winner", "match_count", "faces")
            ]
        },
    )

    roll: Literal[1, 2] = Field(default=1, description="1: the first roll; 2: the Extra Roll.")
    winner: int | None = Field(default=None, ge=1, le=6, description="The winning face announced.")
    match_count: int | None = Field(
        default=None, ge=0, le=10, description="The Like Kind count announced (the final count on roll 2)."
    )
    faces: list[Face] | None = Field(
        default=None,
        min_length=1,
        max_length=10,
        description="Every die keyed at the terminal (on roll 2 only the rethrown dice), any order.",
    )

    @model_validator(mode="after")
    def _something_called(self) -> TableCallIn:
        if self.winner is None and self.match_count is None and self.faces is None:
            raise ValueError("call a winner, a match count or the faces")
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
