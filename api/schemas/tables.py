"""Tables: game, paytable, interpretation settings, calibration and camera."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

TABLE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
GameId = Literal["hrd10", "hrd6"]


class TableIn(BaseModel):
    """A table to create."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=TABLE_ID_PATTERN, description="Letters, digits, _ . -; at most 64.")
    game: GameId
    paytable: dict[str, Any] | None = Field(
        default=None, description="A paytable document; none: the regulation's default table."
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="Interpretation settings of the rules engine."
    )
    calibration_id: str | None = Field(default=None, max_length=200)
    camera_source: str | None = Field(default=None, max_length=500)


class TableUpdate(BaseModel):
    """Fields to change on a table (applies to rounds opened afterwards)."""

    model_config = ConfigDict(extra="forbid")

    paytable: dict[str, Any] | None = Field(default=None, description="A paytable; null: the default table.")
    # Settings may be changed, never set to null (the route refuses it): the schema says so.
    settings: Annotated[
        dict[str, Any] | None,
        WithJsonSchema({"type": "object", "description": "Interpretation settings of the rules engine."}),
    ] = None
    calibration_id: str | None = Field(default=None, max_length=200)
    camera_source: str | None = Field(default=None, max_length=500)


class TableOut(BaseModel):
    """A table as stored."""

    id: str
    game: str
    paytable: dict[str, Any] | None
    settings: dict[str, Any]
    calibration_id: str | None
    camera_source: str | None
    created_at: datetime
    updated_at: datetime
