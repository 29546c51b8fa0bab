"""Rounds: opened, bet on and closed by the dealer; read by dealer, surveillance and admin; corrected
only by a supervisor (a key with the supervisor capability, or an admin), as a new linked entry."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api import audit
from api.alerts import raise_alert
from api.db.models import Correction, GameTable, Round, Wager
from api.deps import DatabaseDep, Dealer, IdPath, MetricsDep, NotWorker, SettingsDep, Viewer
from api.events import publish
from api.rounds import (
    NotFoundError,
    RulesRefusedError,
    StateConflictError,
    advance,
    steps_of,
    wager_document,
    wager_documents,
)
from api.schemas.errors import AUTH_RESPONSES, RULES_OR_VALIDATION, errors
from api.schemas.rounds import (
    CorrectionIn,
    CorrectionOut,
    DealerCallIn,
    DealerCallOut,
    PayoutIn,
    PayoutOut,
    RoundOut,
    WagersIn,
)

router = APIRouter(tags=["rounds"], responses=AUTH_RESPONSES)

REFUSED = errors(
    (422, "A malformed request, or refused by the rules engine: every problem names its clause."),
    unprocessable=RULES_OR_VALIDATION,
)


def load_round(session: Session, round_id: int, *, lock: bool = False) -> Round:
    """The round row (locked for update when `lock`).

    Raises:
        NotFoundError: no such round.
    """
    row = session.get(Round, round_id, with_for_update=lock)
    if row is None:
        raise NotFoundError(f"no round {round_id}")
    return row


def round_out(session: Session, row: Round) -> RoundOut:
    """Response form of a round."""
    corrections = session.scalars(
        select(Correction).where(Correction.round_id == row.id).order_by(Correction.id)
    ).all()
    return RoundOut(
        id=row.id,
        table_id=row.table_id,
        game=row.game,
        phase=row.phase,
        config=row.config,
        wagers=wager_documents(session, row.id),
        steps=steps_of(row),
        summary=row.state.get("summary", {}),
        settlement=row.settlement,
        opened_by=row.opened_by,
        opened_at=row.opened_at,
        settled_at=row.settled_at,
        closed_at=row.closed_at,
        corrections=[CorrectionOut.model_validate(c, from_attributes=True) for c in corrections],
    )


def http_error(exc: Exception) -> HTTPException:
    """The HTTP answer to a service error."""
    if isinstance(exc, RulesRefusedError):
        return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=exc.detail())
    if isinstance(exc, NotFoundError):
        return HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc))
    return HTTPException(status.HTTP_409_CONFLICT, detail=str(exc))


@router.post(
    "/v1/tables/{table_id}/rounds",
    status_code=status.HTTP_201_CREATED,
    response_model=RoundOut,
    responses={**errors(404, (409, "A round is already open at this table.")), **REFUSED},
)
def open_round(table_id: str, principal: Dealer, database: DatabaseDep, settings: SettingsDep) -> RoundOut:
    """Open a round for betting (dealer); one open round per table."""
    try:
        with database.session() as session:
            table = session.get(GameTable, table_id, with_for_update=True)
            if table is None:
                raise NotFoundError(f"no table {table_id!r}")
            current = session.scalars(
                select(Round.id).where(Round.table_id == table_id, Round.closed_at.is_(None))
            ).first()
            if current is not None:
                raise StateConflictError(f"round {current} is still open at table {table_id!r}")
            config = {"game": table.game, "paytable": table.paytable, "settings": table.settings}
            result = advance(config=config, wagers=[], steps=[])
            row = Round(
                table_id=table_id,
                game=table.game,
                phase=result.round.phase.value,
                config=config,
                state={"steps": [], "summary": result.summary},
                opened_by=principal.actor,
            )
            session.add(row)
            session.flush()
            audit.append(
                session,
                actor=principal.actor,
                action="round.open",
                subject=f"round:{row.id}",
                payload={"table_id": table_id, "config": config},
            )
            publish(
                session,
                event_type="round_opened",
                table_id=table_id,
                data={"round_id": row.id, "game": table.game},
                webhook_urls=settings.webhook_urls,
            )
            return round_out(session, row)
    except IntegrityError as exc:  # two dealers at once: the partial unique index keeps one open round
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"a round is already open at {table_id!r}"
        ) from exc
    except (NotFoundError, StateConflictError, RulesRefusedError) as exc:
        raise http_error(exc) from exc


@router.get(
    "/v1/tables/{table_id}/rounds/current",
    response_model=RoundOut,
    responses={204: {"description": "No round is open at the table."}, **errors((404, "No such table."))},
)
def current_round(table_id: str, _: Viewer, database: DatabaseDep) -> RoundOut | Response:
    """The open round at a table (dealer, surveillance, admin); 204 (no body) when none is open.

    "No open round" is an answer about a table that exists, not a missing resource: it was a 404 until
    2026-12-06, which flooded the log of every client that polls between rounds; 404 now means only that
    there is no such table. The 200 body is unchanged, so clients that read the round keep working; one
    that tested for 404 must test for 204 (or for "not 200").
    """
    with database.read_session() as session:
        row = session.scalars(
            select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None))
        ).first()
        if row is None:
            if session.get(GameTable, table_id) is None:
                raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
            return Response(status_code=status.HTTP_204_NO_CONTENT)
        return round_out(session, row)


@router.get("/v1/rounds", response_model=list[RoundOut])
def list_rounds(
    _: Viewer,
    database: DatabaseDep,
    table_id: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[RoundOut]:
    """Rounds, newest first (dealer, surveillance, admin)."""
    query = select(Round)
    if table_id is not None:
        query = query.where(Round.table_id == table_id)
    with database.read_session() as session:
        return [
            round_out(session, row) for row in session.scalars(query.order_by(Round.id.desc()).limit(limit))
        ]


@router.get("/v1/rounds/{round_id}", response_model=RoundOut, responses=errors(404))
def get_round(round_id: IdPath, _: Viewer, database: DatabaseDep) -> RoundOut:
    """One round with its wagers, steps, settlement and corrections (dealer, surveillance, admin)."""
    try:
        with database.read_session() as session:
            return round_out(session, load_round(session, round_id))
    except NotFoundError as exc:
        raise http_error(exc) from exc


@router.post(
    "/v1/rounds/{round_id}/wagers",
    status_code=status.HTTP_201_CREATED,
    response_model=RoundOut,
    responses={**errors(400, 404, (409, "The round is closed.")), **REFUSED},
)
def place_wagers(
    round_id: IdPath, body: WagersIn, principal: Dealer, database: DatabaseDep, settings: SettingsDep
) -> RoundOut:
    """Place wagers by seat (dealer): all or none, validated by the rules engine."""
    new = [
        {"seat": w.seat, "kind": w.kind, "amount": str(w.amount), "face": w.face, "count": w.count}
        for w in body.wagers
    ]
    try:
        with database.session() as session:
            row = load_round(session, round_id, lock=True)
            if row.closed_at is not None:
                raise StateConflictError(f"round {round_id} is closed")
            placed = wager_documents(session, round_id)
            result = advance(config=row.config, wagers=placed, steps=steps_of(row), new_wagers=new)
            accepted = [wager_document(w, game=row.game) for w in result.round.wagers[len(placed) :]]
            for doc in accepted:
                session.add(Wager(round_id=round_id, document=doc, placed_by=principal.actor))
            row.state = {"steps": steps_of(row), "summary": result.summary}
            audit.append(
                session,
                actor=principal.actor,
                action="round.wagers",
                subject=f"round:{round_id}",
                payload={"wagers": accepted},
            )
            publish(
                session,
                event_type="wager_placed",
                table_id=row.table_id,
                data={"round_id": round_id, "wagers": accepted},
                webhook_urls=settings.webhook_urls,
            )
            session.flush()
            return round_out(session, row)
    except (NotFoundError, StateConflictError, RulesRefusedError) as exc:
        raise http_error(exc) from exc


@router.post(
    "/v1/rounds/{round_id}/no-more-bets",
    response_model=RoundOut,
    responses={**errors(404, (409, "The round is closed.")), **REFUSED},
)
def no_more_bets(
    round_id: IdPath, principal: Dealer, database: DatabaseDep, settings: SettingsDep
) -> RoundOut:
    """Close betting (dealer); Extra Roll stakes are collected now (593.4(a))."""
    step = {"op": "no_more_bets"}
    try:
        with database.session() as session:
            row = load_round(session, round_id, lock=True)
            if row.closed_at is not None:
                raise StateConflictError(f"round {round_id} is closed")
            steps = steps_of(row)
            result = advance(
                config=row.config, wagers=wager_documents(session, round_id), steps=steps, new_step=step
            )
            row.state = {"steps": [*steps, step], "summary": result.summary}
            row.phase = result.round.phase.value
            audit.append(
                session,
                actor=principal.actor,
                action="round.no_more_bets",
                subject=f"round:{round_id}",
                payload={"settlements": result.summary["settlements"]},
            )
            publish(
                session,
                event_type="no_more_bets",
                table_id=row.table_id,
                data={"round_id": round_id, "phase": row.phase},
                webhook_urls=settings.webhook_urls,
            )
            session.flush()
            return round_out(session, row)
    except (NotFoundError, StateConflictError, RulesRefusedError) as exc:
        raise http_error(exc) from exc


@router.post(
    "/v1/rounds/{round_id}/dealer-calls",
    response_model=DealerCallOut,
    responses=errors(400, 404, (409, "The round has no such roll yet.")),
)
def dealer_call(
    round_id: IdPath,
    body: DealerCallIn,
    principal: Dealer,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> DealerCallOut:
    """Record what the dealer called for a roll (dealer); a call the dice do not show raises an alert."""
    try:
        with database.session() as session:
            row = load_round(session, round_id, lock=True)
            summary = row.state.get("summary", {})
            if body.roll == 1:
                first = summary.get("first_roll")
                if first is None:
                    raise StateConflictError(f"round {round_id} has no first roll yet")
                shows = {"winner": first["winner"], "match_count": first["match_count"]}
            else:
                extra = summary.get("extra_roll")
                if extra is None:
                    raise StateConflictError(f"round {round_id} has no Extra Roll")
                shows = {"winner": extra["winner"], "match_count": extra["final_count"]}
            called = {"winner": body.winner, "match_count": body.match_count}
            matches = called == shows
            audit.append(
                session,
                actor=principal.actor,
                action="round.dealer_call",
                subject=f"round:{round_id}",
                payload={"roll": body.roll, "called": called, "dice_show": shows, "matches": matches},
            )
            alert_id = None
            if not matches:
                alert = raise_alert(
                    session,
                    kind="dealer_call_mismatch",
                    message=f"roll {body.roll}: the dealer called {called}, the dice show {shows}",
                    actor=principal.actor,
                    table_id=row.table_id,
                    round_id=round_id,
                    data={"roll": body.roll, "called": called, "dice_show": shows},
                    webhook_urls=settings.webhook_urls,
                    metrics=metrics,
                )
                alert_id = alert.id
            return DealerCallOut(matches=matches, called=called, dice_show=shows, alert_id=alert_id)
    except (NotFoundError, StateConflictError) as exc:
        raise http_error(exc) from exc


@router.post(
    "/v1/rounds/{round_id}/payouts",
    response_model=PayoutOut,
    responses=errors(400, 404, (409, "The round is not settled: nothing is due yet.")),
)
def record_payout(
    round_id: IdPath,
    body: PayoutIn,
    principal: Dealer,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> PayoutOut:
    """Record what the dealer paid a seat (dealer); a payment the settlement does not show raises an alert.

    The settlement compared is the latest correction's, if the round was corrected, else the round's.
    """
    try:
        with database.session() as session:
            row = load_round(session, round_id, lock=True)
            if row.settlement is None:
                raise StateConflictError(f"round {round_id} is not settled; nothing is due yet")
            latest = session.scalars(
                select(Correction).where(Correction.round_id == round_id).order_by(Correction.id.desc())
            ).first()
            settlement = latest.settlement if latest is not None else row.settlement
            seat = settlement.get("seats", {}).get(str(body.seat))
            due = Decimal(seat["won"]) if seat is not None else Decimal("0.00")
            paid = body.paid.quantize(Decimal("0.01"))
            matches = paid == due
            audit.append(
                session,
                actor=principal.actor,
                action="round.payout",
                subject=f"round:{round_id}",
                payload={"seat": body.seat, "paid": str(paid), "due": str(due), "matches": matches},
            )
            alert_id = None
            if not matches:
                alert = raise_alert(
                    session,
                    kind="payout_mismatch",
                    message=f"seat {body.seat}: the dealer paid {paid}, the settlement says {due}",
                    actor=principal.actor,
                    table_id=row.table_id,
                    round_id=round_id,
                    data={"seat": body.seat, "paid": str(paid), "due": str(due)},
                    webhook_urls=settings.webhook_urls,
                    metrics=metrics,
                )
                alert_id = alert.id
            return PayoutOut(
                matches=matches, seat=body.seat, paid=str(paid), settlement_says=str(due), alert_id=alert_id
            )
    except (NotFoundError, StateConflictError) as exc:
        raise http_error(exc) from exc


@router.post(
    "/v1/rounds/{round_id}/corrections",
    status_code=status.HTTP_201_CREATED,
    response_model=CorrectionOut,
    responses={
        **errors(
            400,
            (403, "Only a supervisor key or an admin may correct a round."),
            404,
            (409, "The round is not settled, or the corrected dice do not settle it."),
        ),
        **REFUSED,
    },
)
def correct(
    round_id: IdPath, body: CorrectionIn, principal: NotWorker, database: DatabaseDep, settings: SettingsDep
) -> CorrectionOut:
    """Correct a settled round (supervisor key or admin): the engine settles the wagers again on the
    corrected dice; the result is a new entry linked to the round, which itself never changes."""
    if not principal.may_correct:
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail="only a supervisor key or an admin may correct")
    steps: list[dict[str, Any]] = [
        {"op": "no_more_bets"},
        {"op": "roll", "faces": body.first_roll, "verdict": "valid"},
    ]
    if body.extra_roll is not None:
        steps.append({"op": "roll", "faces": body.extra_roll, "verdict": "valid"})
    try:
        with database.session() as session:
            row = load_round(session, round_id, lock=True)
            if row.settled_at is None:
                raise StateConflictError(f"round {round_id} is not settled yet")
            result = advance(config=row.config, wagers=wager_documents(session, round_id), steps=steps)
            if not result.complete:
                raise StateConflictError(
                    f"the corrected dice leave the round in phase {result.round.phase.value}: "
                    "give the Extra Roll too"
                )
            previous = session.scalars(
                select(Correction.id).where(Correction.round_id == round_id).order_by(Correction.id.desc())
            ).first()
            correction = Correction(
                round_id=round_id,
                supersedes_id=previous,
                reason=body.reason,
                settlement=result.answer(),
                made_by=principal.actor,
            )
            session.add(correction)
            session.flush()
            audit.append(
                session,
                actor=principal.actor,
                action="round.correction",
                subject=f"round:{round_id}",
                payload={
                    "correction_id": correction.id,
                    "reason": body.reason,
                    "steps": steps,
                    "settlement": correction.settlement,
                },
            )
            publish(
                session,
                event_type="correction",
                table_id=row.table_id,
                data={
                    "round_id": round_id,
                    "correction_id": correction.id,
                    "settlement": correction.settlement,
                },
                webhook_urls=settings.webhook_urls,
            )
            return CorrectionOut.model_validate(correction, from_attributes=True)
    except (NotFoundError, StateConflictError, RulesRefusedError) as exc:
        raise http_error(exc) from exc
