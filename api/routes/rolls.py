"""Rolls: the rules engine's door. The reader (or a dealer terminal, keyed by hand) submits a throw; the
engine advances the round and settles; everything is committed before the answer.

- A `roll_id` sent again with the same body returns the first answer (`duplicate: true`), applied once;
  with a different body it is refused (409).
- "invalid" and "void" throws advance nothing: the answer says `rethrow: true`.
- "no_decision" (the reader cannot tell) advances nothing and raises an alert: a person must look and the
  dealer keys the roll.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query, Request, Response, status
from pydantic import WithJsonSchema
from sqlalchemy import select

from api import rounds
from api.db.models import Roll
from api.deps import DatabaseDep, MetricsDep, RollSubmitter, SettingsDep, Viewer
from api.leases import WORKER_ID_PATTERN
from api.lookup import check_table
from api.routes.learning import after_confirmation
from api.schemas import DB_INT_MAX
from api.schemas.errors import AUTH_RESPONSES, RULES_OR_VALIDATION, errors
from api.schemas.rolls import RollAnswer, RollSubmission

router = APIRouter(tags=["rolls"], responses=AUTH_RESPONSES)


@router.post(
    "/v1/tables/{table_id}/rolls",
    status_code=status.HTTP_201_CREATED,
    response_model=RollAnswer,
    responses={
        200: {
            "description": "This roll id was already applied; the first answer is repeated.",
            "model": RollAnswer,
        },
        **errors(
            400,
            (
                403,
                "This key's role may not do this; a `source` other than the key's role's; a bound worker "
                "key naming another worker id.",
            ),
            (404, "No such table, evidence frame or read."),
            (
                409,
                "No open round, wrong round, wrong phase, a roll id reused with other data, or a table "
                "worker's lease taken over by another worker since (`lease_superseded`).",
            ),
            (422, "A malformed roll, or refused by the rules engine (e.g. wrong number of dice), by clause."),
            unprocessable=RULES_OR_VALIDATION,
        ),
    },
)
def submit_roll(
    table_id: str,
    body: RollSubmission,
    request: Request,
    response: Response,
    principal: RollSubmitter,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
    # Headers are never null: the schema says the value when it is sent (as the events' Last-Event-ID).
    lease_epoch: Annotated[
        int | None,
        Header(alias="X-Throwbox-Lease-Epoch", ge=0, le=DB_INT_MAX),
        WithJsonSchema(
            {
                "type": "integer",
                "minimum": 0,
                "maximum": DB_INT_MAX,
                "description": "A table worker's lease epoch (POST /v1/tables/{id}/lease): fences its rolls.",
            }
        ),
    ] = None,
    worker_id: Annotated[
        str | None,
        Header(alias="X-Throwbox-Worker-Id", pattern=WORKER_ID_PATTERN),
        WithJsonSchema({"type": "string", "pattern": WORKER_ID_PATTERN, "description": "The worker's id."}),
    ] = None,
) -> RollAnswer:
    """Submit a throw (reader, dealer, worker). Its `source` is the key's role's: the camera (`reader`) for
    reader and worker keys, `dealer` for dealer keys; a body naming another is refused (403). A table worker
    sends its lease epoch and id (headers): a roll from a worker another has taken the table over from is
    refused (409, `lease_superseded`). A worker key bound to a worker id sends as that worker (its id when
    the header is absent; 403 for another)."""
    submitted = rounds.submit_roll_as(
        database=database,
        table_id=table_id,
        body=body,
        principal=principal,
        webhook_urls=settings.webhook_urls,
        metrics=metrics,
        lease_epoch=lease_epoch,
        worker_id=worker_id,
    )
    if submitted.duplicate:
        response.status_code = status.HTTP_200_OK
    elif submitted.answer.source == "dealer" and submitted.answer.verdict == "valid":
        after_confirmation(request, database=database, settings=settings, table_id=table_id)
    return submitted.answer


@router.get(
    "/v1/tables/{table_id}/rolls", response_model=list[RollAnswer], responses=errors((404, "No such table."))
)
def list_rolls(
    table_id: str,
    _: Viewer,
    database: DatabaseDep,
    round_id: Annotated[int | None, Query(ge=1, le=DB_INT_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[RollAnswer]:
    """Rolls at a table, newest first (dealer, surveillance, admin)."""
    check_table(database, table_id)
    query = select(Roll).where(Roll.table_id == table_id)
    if round_id is not None:
        query = query.where(Roll.round_id == round_id)
    with database.read_session() as session:
        rows = session.scalars(query.order_by(Roll.created_at.desc()).limit(limit)).all()
        return [rounds.roll_answer(row, duplicate=False) for row in rows]


@router.get("/v1/rolls/{roll_id}", response_model=RollAnswer, responses=errors(404))
def get_roll(roll_id: str, _: Viewer, database: DatabaseDep) -> RollAnswer:
    """One roll and what it did (dealer, surveillance, admin)."""
    with database.read_session() as session:
        row = session.get(Roll, roll_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no roll {roll_id!r}")
        return rounds.roll_answer(row, duplicate=False)
