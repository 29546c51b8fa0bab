"""Tables: game, paytable, interpretation settings, calibration and camera."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from api.schemas.game import ANY_PAYTABLE_SCHEMA, SETTINGS_SCHEMA, paytable_follows_game

TABLE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
GameId = Literal["hrd10", "hrd6"]
# What can name a stored calibration (calibration.store): a table id that is a file name (no `..`, no
# path), or a recorded calibration id `table@created#checksum`. Whether one is stored under it, the route
# finds (404).
CALIBRATION_ID_PATTERN = (
    r"^[A-Za-z0-9](?!.*\.\.)[A-Za-z0-9_.-]{0,63}(?:@[0-9A-Za-z:+.-]{1,40}#[0-9a-f]{1,64})?$"
)
_CALIBRATION_ID = re.compile(CALIBRATION_ID_PATTERN.removesuffix("$"))


def _calibration_id(value: str | None) -> str | None:
    """Refuse a calibration id that cannot name a calibration file (a path, `..`, too long)."""
    if value is not None and _CALIBRATION_ID.fullmatch(value) is None:
        raise ValueError(
            "cannot name a calibration: use a table id (1-64 of letters, digits, '_', '-', '.', no '..') or "
            "a recorded calibration id table@created#checksum"
        )
    return value


# Checked in Python (the pattern's look-ahead is not in pydantic's own regex engine); stated in the schema.
CalibrationId = Annotated[
    str | None,
    AfterValidator(_calibration_id),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": 200, "pattern": CALIBRATION_ID_PATTERN},
                {"type": "null"},
            ],
            "description": "The stored calibration the table's camera is read through (`throwbox calibrate "
            "table`): its table id, or a recorded id `table@created#checksum`; null: none.",
        }
    ),
]


class TableIn(BaseModel):
    """A table to create."""

    # The schema says what the rules engine checks: the paytable is the table's own game's.
    model_config = ConfigDict(extra="forbid", json_schema_extra=paytable_follows_game())

    id: str = Field(pattern=TABLE_ID_PATTERN, description="Letters, digits, _ . -; at most 64.")
    game: GameId
    paytable: Annotated[dict[str, Any] | None, WithJsonSchema(ANY_PAYTABLE_SCHEMA)] = None
    settings: Annotated[dict[str, Any], WithJsonSchema(SETTINGS_SCHEMA)] = Field(default_factory=dict)
    calibration_id: CalibrationId = Field(default=None, max_length=200)
    camera_source: str | None = Field(default=None, max_length=500)


class TableUpdate(BaseModel):
    """Fields to change on a table (applies to rounds opened afterwards)."""

    model_config = ConfigDict(extra="forbid")

    # A paytable of the stored table's game (a rule the schema cannot state: the engine refuses another).
    paytable: Annotated[dict[str, Any] | None, WithJsonSchema(ANY_PAYTABLE_SCHEMA)] = None
    # Settings may be changed, never set to null (the route refuses it): the schema says so.
    settings: Annotated[dict[str, Any] | None, WithJsonSchema(SETTINGS_SCHEMA)] = None
    calibration_id: CalibrationId = Field(default=None, max_length=200)
    camera_source: str | None = Field(default=None, max_length=500)


class TableFaultOut(BaseModel):
    """One thing wrong with the table itself (api/table_faults.py): it stops this table, not the others."""

    part: Literal["calibration", "enrollment", "camera"]
    detail: str


class TableOut(BaseModel):
    """A table as stored, with what is wrong with it now (`faults`, empty when nothing is)."""

    id: str
    game: str
    paytable: dict[str, Any] | None
    settings: dict[str, Any]
    calibration_id: str | None
    camera_source: str | None
    created_at: datetime
    updated_at: datetime
    faults: list[TableFaultOut] = Field(
        default_factory=list,
        description="The table's own trouble now: a calibration or enrollment that cannot be loaded, a "
        "camera lost, moved or unfit (an unacknowledged alert), a live loop that could not start.",
    )
