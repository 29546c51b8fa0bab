"""Dice fairness (issue 49): dice sets in play at a table, the fairness report, and acknowledging a
`dice_bias_suspected` alert.

- `POST /v1/tables/{id}/dice-sets` (admin): a set of dice goes into play (the one in play goes out: a
  fresh watch); `GET` lists them (dealer, surveillance, admin).
- `GET /v1/tables/{id}/fairness` (dealer, surveillance, admin): the tests over any window (`since`,
  `until`, `dice_set_id`; default the set in play), as the dashboard's panel and `throwbox fairness` show.
- `POST /v1/tables/{id}/fairness/alerts/{alert_id}/acknowledge` (surveillance, admin): surveillance has
  looked at a `dice_bias_suspected` alert; the alert stays, and the chart may alert again.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from api import fairness_service
from api.deps import Admin, DatabaseDep, IdPath, Viewer, Watcher
from api.schemas import DB_INT_MAX
from api.schemas.admin import AlertOut
from api.schemas.errors import AUTH_RESPONSES, MESSAGE_OR_VALIDATION, errors

router = APIRouter(tags=["fairness"], responses=AUTH_RESPONSES)

# A time is ISO 8601 text, as the document says (`format: date-time`): pydantic alone would also take a number
# (`0.5`, or the text "0.5") as seconds since 1970, which the schema refuses.
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")


def _iso_text(value: object) -> object:
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_DATETIME.match(value)):
        return value
    raise ValueError("a time must be ISO 8601 text, e.g. 2026-12-06T18:00:00Z")


IsoDateTime = Annotated[datetime, BeforeValidator(_iso_text)]


class DiceSetIn(BaseModel):
    """A set of dice put into play."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, description="The set's name or serial numbers.")
    per_position: bool = Field(
        default=False,
        description="The camera follows each die: the faces of a first roll are in the same die order.",
    )
    in_play_at: IsoDateTime | None = Field(default=None, description="When it went into play; default now.")
    out_of_play_at: IsoDateTime | None = Field(
        default=None, description="When it went out of play, if known."
    )


class DiceSetOut(BaseModel):
    """A dice set and how many valid rolls its watch has counted."""

    id: int
    table_id: str
    name: str
    per_position: bool
    in_play_at: datetime
    out_of_play_at: datetime | None
    rolls: int
    registered_by: str


class AcknowledgeIn(BaseModel):
    """What surveillance found."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(default="", max_length=4000)


def _utc(at: datetime | None) -> datetime | None:
    return None if at is None else (at if at.tzinfo else at.replace(tzinfo=UTC))


@router.post(
    "/v1/tables/{table_id}/dice-sets",
    status_code=status.HTTP_201_CREATED,
    response_model=DiceSetOut,
    responses=errors(
        400,
        (404, "No such table."),
        (422, "A malformed dice set, or out_of_play_at not after in_play_at."),
        unprocessable=MESSAGE_OR_VALIDATION,
    ),
)
def register_dice_set(table_id: str, body: DiceSetIn, principal: Admin, database: DatabaseDep) -> DiceSetOut:
    """Put a set of dice into play (admin); the set in play goes out of play and its watch ends."""
    document = fairness_service.register_dice_set(
        database=database,
        table_id=table_id,
        name=body.name,
        per_position=body.per_position,
        in_play_at=_utc(body.in_play_at),
        out_of_play_at=_utc(body.out_of_play_at),
        actor=principal.actor,
    )
    return DiceSetOut.model_validate(document)


@router.get(
    "/v1/tables/{table_id}/dice-sets",
    response_model=list[DiceSetOut],
    responses=errors((404, "No such table.")),
)
def list_dice_sets(table_id: str, _: Viewer, database: DatabaseDep) -> list[DiceSetOut]:
    """A table's dice sets, newest first (dealer, surveillance, admin)."""
    return [
        DiceSetOut.model_validate(d) for d in fairness_service.dice_sets(database=database, table_id=table_id)
    ]


@router.get(
    "/v1/tables/{table_id}/fairness", responses=errors((404, "No such table or dice set at it."), 422)
)
def fairness_report(
    table_id: str,
    _: Viewer,
    database: DatabaseDep,
    since: IsoDateTime | None = None,
    until: IsoDateTime | None = None,
    dice_set_id: Annotated[int | None, Query(ge=1, le=DB_INT_MAX)] = None,
) -> dict[str, Any]:
    """The fairness tests of a table's dice over a window (dealer, surveillance, admin)."""
    return fairness_service.report(
        database=database, table_id=table_id, since=_utc(since), until=_utc(until), dice_set_id=dice_set_id
    )


@router.post(
    "/v1/tables/{table_id}/fairness/alerts/{alert_id}/acknowledge",
    response_model=AlertOut,
    responses=errors(
        400, (404, "No such dice-bias alert at this table."), (409, "The alert is already acknowledged.")
    ),
)
def acknowledge_bias_alert(
    table_id: str, alert_id: IdPath, body: AcknowledgeIn, principal: Watcher, database: DatabaseDep
) -> AlertOut:
    """Acknowledge a `dice_bias_suspected` alert of this table (surveillance, admin)."""
    return fairness_service.acknowledge_bias_alert(
        database=database, table_id=table_id, alert_id=alert_id, actor=principal.actor, note=body.note
    )
