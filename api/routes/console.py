"""The table console (issue 56): the page at `/console` and its routes under `/v1/console`.

- `GET /v1/console/waiting`: the rolls the reader left to a person, with their reads (dealer, surveillance,
  admin).
- `POST /v1/console/decisions`: a person's decision of one, submitted as a dealer roll naming its read
  (dealer keys only, a supervisor's too: the roll is the dealer's).
- `GET /v1/console/mismatches`, `POST /v1/console/mismatches/{roll_id}/acknowledge`: the rolls where the
  dealer's keyed faces and the reader's sure faces disagree, and surveillance's one-click acknowledgement.

The logic is `api.console` and `api.console_decisions`; this module only speaks HTTP.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request, Response, status
from fastapi.responses import FileResponse
from sqlalchemy import select

from api import console, console_decisions, rounds
from api.db.models import ConsoleDecision, GameTable
from api.deps import DatabaseDep, Dealer, MetricsDep, SettingsDep, Viewer, Watcher
from api.routes.dashboard import STATIC_DIR
from api.routes.learning import after_confirmation
from api.schemas.console import (
    AcknowledgeIn,
    DecisionIn,
    DecisionOut,
    MismatchOut,
    WaitingDieOut,
    WaitingRollOut,
)
from api.schemas.errors import ANY_UNPROCESSABLE, AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/console", tags=["console"], responses=AUTH_RESPONSES)


def _http_error(exc: rounds.ServiceError) -> HTTPException:
    if isinstance(exc, rounds.RulesRefusedError):
        return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=exc.detail())
    if isinstance(exc, console_decisions.DecisionRefusedError):
        return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=str(exc))
    if isinstance(exc, rounds.NotFoundError):
        return HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc))
    return HTTPException(status.HTTP_409_CONFLICT, detail=str(exc))


def _waiting_out(waiting: console.WaitingRoll) -> WaitingRollOut:
    return WaitingRollOut(
        roll_id=waiting.roll_id,
        table_id=waiting.table_id,
        round_id=waiting.round_id,
        phase=waiting.phase,
        kind=waiting.kind,
        dice_expected=waiting.dice_expected,
        read_id=waiting.read_id,
        evidence_sha256=waiting.evidence_sha256,
        reasons=list(waiting.reasons),
        dice=[
            WaitingDieOut(
                index=d.index,
                order=d.order,
                face=d.face,
                guess=d.guess,
                confidence=d.confidence,
                box_xyxy=list(d.box_xyxy),
                uncertain=d.uncertain,
                kept=d.kept,
                notes=list(d.notes),
            )
            for d in waiting.dice
        ],
        waiting_since=waiting.waiting_since,
    )


@router.get("/waiting", response_model=list[WaitingRollOut], responses=errors(404))
def waiting(
    _: Viewer,
    database: DatabaseDep,
    table_id: Annotated[str | None, Query(max_length=64)] = None,
) -> list[WaitingRollOut]:
    """The rolls waiting for a person: one per table at most, or none (dealer, surveillance, admin)."""
    with database.read_session() as session:
        if table_id is not None:
            if session.get(GameTable, table_id) is None:
                raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
            tables = [table_id]
        else:
            tables = list(session.scalars(select(GameTable.id).order_by(GameTable.id)))
        found = [console.waiting_roll(session, t) for t in tables]
        return [_waiting_out(w) for w in found if w is not None]


@router.post(
    "/decisions",
    status_code=status.HTTP_201_CREATED,
    response_model=DecisionOut,
    responses={
        200: {
            "description": "This decision was submitted before; the first answer is repeated.",
            "model": DecisionOut,
        },
        **errors(
            400,
            (404, "No such table, or no such roll at it."),
            (409, "The roll no longer waits for a person (the round moved on), or was decided otherwise."),
            (422, "A decision that does not fit the read, or a roll the rules engine refuses, by clause."),
            unprocessable=ANY_UNPROCESSABLE,
        ),
    },
)
def decide(
    body: DecisionIn,
    request: Request,
    response: Response,
    principal: Dealer,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> DecisionOut:
    """Decide a waiting roll (dealer): submitted as a dealer roll naming the read it decides; the person's
    box corrections are kept as labelled boxes beside it."""
    decision = console_decisions.Decision(
        roll_id=body.roll_id,
        round_id=body.round_id,
        call=body.call,
        dice=tuple(console_decisions.DieCall(face=d.face, struck=d.struck) for d in body.dice),
        added=tuple(
            console_decisions.AddedDie(
                box_xyxy=(a.box_xyxy[0], a.box_xyxy[1], a.box_xyxy[2], a.box_xyxy[3]), face=a.face
            )
            for a in body.added
        ),
    )
    try:
        decided = console_decisions.decide(
            database=database,
            table_id=body.table_id,
            decision=decision,
            actor=principal.actor,
            webhook_urls=settings.webhook_urls,
            metrics=metrics,
        )
    except rounds.ServiceError as exc:
        raise _http_error(exc) from exc
    if decided.duplicate:
        response.status_code = status.HTTP_200_OK
    elif decided.answer.verdict == "valid":
        after_confirmation(request, database=database, settings=settings, table_id=body.table_id)
    return DecisionOut(
        roll_id=body.roll_id,
        dealer_roll_id=decided.dealer_roll_id,
        read_id=decided.read_id,
        duplicate=decided.duplicate,
        mismatch=decided.mismatch,
        alert_id=decided.alert_id,
        answer=decided.answer,
    )


def _mismatch_out(row: ConsoleDecision) -> MismatchOut:
    return MismatchOut.model_validate(row, from_attributes=True)


@router.get("/mismatches", response_model=list[MismatchOut])
def list_mismatches(
    _: Watcher,
    database: DatabaseDep,
    table_id: Annotated[str | None, Query(max_length=64)] = None,
    open_only: bool = True,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[MismatchOut]:
    """Rolls where the dealer's keyed faces and the reader's sure faces disagree, newest first
    (surveillance, admin); `open_only` (the default): not yet acknowledged."""
    with database.read_session() as session:
        rows = console_decisions.mismatches(session, table_id=table_id, open_only=open_only, limit=limit)
        return [_mismatch_out(row) for row in rows]


@router.post(
    "/mismatches/{roll_id}/acknowledge",
    response_model=MismatchOut,
    responses=errors(400, (404, "No mismatch of that roll."), (409, "It is already acknowledged.")),
)
def acknowledge_mismatch(
    roll_id: str, principal: Watcher, database: DatabaseDep, body: AcknowledgeIn | None = None
) -> MismatchOut:
    """Acknowledge a mismatch (surveillance, admin): one click, kept in the audit trail with who and when."""
    note = "" if body is None else body.note
    return console_decisions.acknowledge(database=database, roll_id=roll_id, actor=principal.actor, note=note)


def install(app: FastAPI) -> None:
    """Serve the console page at `/console` (its files are the dashboard's `/static/`)."""

    @app.get("/console", include_in_schema=False)
    def console_page() -> FileResponse:
        """The table console."""
        return FileResponse(STATIC_DIR / "console.html", media_type="text/html")
