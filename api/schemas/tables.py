"""Tables: game, paytable, interpretation settings, calibration and camera."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from api.schemas.game import ANY_PAYTABLE_SCHEMA, SETTINGS_SCHEMA, paytable_follows_game

TABLE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
GameId = Literal["hrd10", "hrd6"]


class TableIn(BaseModel):
    """A table to create."""

    # The schema says what the rules engine checks: the paytable is the table's own game's.
    model_config = ConfigDict(extra="forbid", json_schema_extra=paytable_follows_game())

    id: str = Field(pattern=TABLE_ID_PATTERN, description="Letters, digits, _ . -; at most 64.")
    game: GameId
    paytable: Annotated[dict[str, Any] | None, WithJsonSchema(ANY_PAYTABLE_SCHEMA)] = None
    settings: Annotated[dict[str, Any], WithJsonSchema(SETTINGS_SCHEMA)] = Field(default_factory=dict)
    calibration_id: str | None = Field(default=None, max_length=200)
    camera_source: str | None = Field(default=None, max_length=500)


class TableUpdate(BaseModel):
    """Fields to change on a table (applies to rounds opened afterwards)."""

    model_config = ConfigDict(extra="forbid")

    # A paytable of the stored table's game (a rule the schema cannot state: the engine refuses another).
    paytable: Annotated[dict[str, Any] | None, WithJsonSchema(ANY_PAYTABLE_SCHEMA)] = None
    # Settings may be changed, never set to null (the route refuses it): the schema says so.
    settings: Annotated[dict[str, Any] | None, WithJsonSchema(SETTINGS_SCHEMA)] = None
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
