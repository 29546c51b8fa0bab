"""The round routes' service: open a round, place wagers, close betting, compare the dealer's calls and
payments, correct a settled round; read rounds back. Each function is one transaction.

Its routes (api/routes/rounds.py) only parse and answer; the errors raised here (api/errors.py) become HTTP
answers in api/http_errors.py. The rules engine decides every step, through api/rounds.py's replay.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api import audit
from api.alerts import raise_alert
from api.auth import Principal
from api.db.models import Correction, GameTable, Roll, Round, Wager
from api.db.session import Database
from api.errors import ForbiddenError, NotFoundError, StateConflictError
from api.events import publish
from api.lookup import require_table
from api.metrics import Metrics
from api.rounds import advance, steps_of, wager_document, wager_documents
from api.schemas.calls import TableCallIn, TableCallOut
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


def load_round(session: Session, round_id: int, *, lock: bool = False) -> Round:
    """The round row (locked for update when `lock`).

    Raises:
        NotFoundError: no such round.
    """
    row = session.get(Round, round_id, with_for_update=lock)
    if row is None:
        raise NotFoundError(f"no round {round_id}")
    return row


def _open_round_row(session: Session, round_id: int) -> Round:
    """The round, locked, refused when it is closed (409)."""
    row = load_round(session, round_id, lock=True)
    if row.closed_at is not None:
        raise StateConflictError(f"round {round_id} is closed")
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


def open_round(*, database: Database, table_id: str, actor: str, webhook_urls: list[str]) -> RoundOut:
    """Open a round for betting at the table, with the table's configuration as it is now.

    Raises:
        NotFoundError: no such table.
        StateConflictError: a round is already open there (also when two dealers open one at once).
        RulesRefusedError: the table's paytable or settings no longer pass the engine.
    """
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
                opened_by=actor,
            )
            session.add(row)
            session.flush()
            audit.append(
                session,
                actor=actor,
                action="round.open",
                subject=f"round:{row.id}",
                payload={"table_id": table_id, "config": config},
            )
            publish(
                session,
                event_type="round_opened",
                table_id=table_id,
                data={"round_id": row.id, "game": table.game},
                webhook_urls=webhook_urls,
            )
            return round_out(session, row)
    except IntegrityError as exc:  # two dealers at once: the partial unique index keeps one open round
        raise StateConflictError(f"a round is already open at {table_id!r}") from exc


def current_round(*, database: Database, table_id: str) -> RoundOut | None:
    """The open round at the table; None when none is open.

    Raises:
        NotFoundError: no such table.
    """
    with database.read_session() as session:
        row = session.scalars(
            select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None))
        ).first()
        if row is None:
            if session.get(GameTable, table_id) is None:
                raise NotFoundError(f"no table {table_id!r}")
            return None
        return round_out(session, row)


def list_rounds(*, database: Database, table_id: str | None, limit: int) -> list[RoundOut]:
    """Rounds, newest first, of one table or all.

    Raises:
        NotFoundError: `table_id` names no table.
    """
    query = select(Round)
    with database.read_session() as session:
        if table_id is not None:
            if session.get(GameTable, table_id) is None:
                raise NotFoundError(f"no table {table_id!r}")
            query = query.where(Round.table_id == table_id)
        return [
            round_out(session, row) for row in session.scalars(query.order_by(Round.id.desc()).limit(limit))
        ]


def get_round(*, database: Database, round_id: int) -> RoundOut:
    """One round with its wagers, steps, settlement and corrections (NotFoundError: none)."""
    with database.read_session() as session:
        return round_out(session, load_round(session, round_id))


def place_wagers(
    *, database: Database, round_id: int, body: WagersIn, actor: str, webhook_urls: list[str]
) -> RoundOut:
    """Place wagers by seat, all or none, as the rules engine allows them.

    Raises:
        NotFoundError: no such round.
        StateConflictError: the round is closed, or not taking wagers.
        RulesRefusedError: a wager the engine refuses, by clause.
    """
    new = [
        {"seat": w.seat, "kind": w.kind, "amount": str(w.amount), "face": w.face, "count": w.count}
        for w in body.wagers
    ]
    with database.session() as session:
        row = _open_round_row(session, round_id)
        placed = wager_documents(session, round_id)
        result = advance(config=row.config, wagers=placed, steps=steps_of(row), new_wagers=new)
        accepted = [wager_document(w, game=row.game) for w in result.round.wagers[len(placed) :]]
        for doc in accepted:
            session.add(Wager(round_id=round_id, document=doc, placed_by=actor))
        row.state = {"steps": steps_of(row), "summary": result.summary}
        audit.append(
            session,
            actor=actor,
            action="round.wagers",
            subject=f"round:{round_id}",
            payload={"wagers": accepted},
        )
        publish(
            session,
            event_type="wager_placed",
            table_id=row.table_id,
            data={"round_id": round_id, "wagers": accepted},
            webhook_urls=webhook_urls,
        )
        session.flush()
        return round_out(session, row)


def no_more_bets(*, database: Database, round_id: int, actor: str, webhook_urls: list[str]) -> RoundOut:
    """Close betting; the engine collects the Extra Roll stakes now (593.4(a)).

    Raises:
        NotFoundError: no such round.
        StateConflictError: the round is closed, or past betting.
        RulesRefusedError: the engine refuses the step, by clause.
    """
    step = {"op": "no_more_bets"}
    with database.session() as session:
        row = _open_round_row(session, round_id)
        steps = steps_of(row)
        result = advance(
            config=row.config, wagers=wager_documents(session, round_id), steps=steps, new_step=step
        )
        row.state = {"steps": [*steps, step], "summary": result.summary}
        row.phase = result.round.phase.value
        audit.append(
            session,
            actor=actor,
            action="round.no_more_bets",
            subject=f"round:{round_id}",
            payload={"settlements": result.summary["settlements"]},
        )
        publish(
            session,
            event_type="no_more_bets",
            table_id=row.table_id,
            data={"round_id": round_id, "phase": row.phase},
            webhook_urls=webhook_urls,
        )
        session.flush()
        return round_out(session, row)


def _dice_show(row: Round, roll: int) -> dict[str, Any]:
    """What the round's roll `roll` (1, or 2 for the Extra Roll) showed: its winner and match count."""
    summary = row.state.get("summary", {})
    if roll == 1:
        first = summary.get("first_roll")
        if first is None:
            raise StateConflictError(f"round {row.id} has no first roll yet")
        return {"winner": first["winner"], "match_count": first["match_count"]}
    extra = summary.get("extra_roll")
    if extra is None:
        raise StateConflictError(f"round {row.id} has no Extra Roll")
    return {"winner": extra["winner"], "match_count": extra["final_count"]}


def dealer_call(
    *,
    database: Database,
    round_id: int,
    body: DealerCallIn,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> DealerCallOut:
    """Record what the dealer called for a roll; a call the dice do not show raises an alert.

    Raises:
        NotFoundError: no such round.
        StateConflictError: the round has no such roll yet.
    """
    with database.session() as session:
        row = load_round(session, round_id, lock=True)
        shows = _dice_show(row, body.roll)
        called = {"winner": body.winner, "match_count": body.match_count}
        matches = called == shows
        audit.append(
            session,
            actor=actor,
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
                actor=actor,
                table_id=row.table_id,
                round_id=round_id,
                data={"roll": body.roll, "called": called, "dice_show": shows},
                webhook_urls=webhook_urls,
                metrics=metrics,
            )
            alert_id = alert.id
        return DealerCallOut(matches=matches, called=called, dice_show=shows, alert_id=alert_id)


def record_payout(
    *,
    database: Database,
    round_id: int,
    body: PayoutIn,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> PayoutOut:
    """Record what the dealer paid a seat; a payment the settlement does not show raises an alert.

    The settlement compared is the latest correction's, if the round was corrected, else the round's.

    Raises:
        NotFoundError: no such round.
        StateConflictError: the round is not settled (nothing is due yet).
    """
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
            actor=actor,
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
                actor=actor,
                table_id=row.table_id,
                round_id=round_id,
                data={"seat": body.seat, "paid": str(paid), "due": str(due)},
                webhook_urls=webhook_urls,
                metrics=metrics,
            )
            alert_id = alert.id
        return PayoutOut(
            matches=matches, seat=body.seat, paid=str(paid), settlement_says=str(due), alert_id=alert_id
        )


def correct(
    *, database: Database, round_id: int, body: CorrectionIn, principal: Principal, webhook_urls: list[str]
) -> CorrectionOut:
    """Correct a settled round: the engine settles its wagers again on the corrected dice; the result is a
    new entry linked to the round, which itself never changes.

    Raises:
        ForbiddenError: the key is neither a supervisor's nor an admin's.
        NotFoundError: no such round.
        StateConflictError: the round is not settled, or the corrected dice do not settle it.
        RulesRefusedError: the engine refuses the corrected dice, by clause.
    """
    if not principal.may_correct:
        raise ForbiddenError("only a supervisor key or an admin may correct")
    steps: list[dict[str, Any]] = [
        {"op": "no_more_bets"},
        {"op": "roll", "faces": body.first_roll, "verdict": "valid"},
    ]
    if body.extra_roll is not None:
        steps.append({"op": "roll", "faces": body.extra_roll, "verdict": "valid"})
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
            data={"round_id": round_id, "correction_id": correction.id, "settlement": correction.settlement},
            webhook_urls=webhook_urls,
        )
        return CorrectionOut.model_validate(correction, from_attributes=True)


# --- a dealer's call at the table (issue 8) -------------------------------------------------------------


def _camera_shows(row: Round, roll: int) -> dict[str, Any] | None:
    summary = row.state.get("summary", {})
    if roll == 1:
        first = summary.get("first_roll")
        if first is None:
            return None
        return {"winner": first["winner"], "match_count": first["match_count"], "faces": first["faces"]}
    extra = summary.get("extra_roll")
    if extra is None:
        return None
    return {"winner": extra["winner"], "match_count": extra["final_count"], "faces": extra["faces"]}


def table_call(
    *,
    database: Database,
    table_id: str,
    body: TableCallIn,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> TableCallOut:
    """Compare a dealer's call with the roll the camera read for the table's latest round with that roll; a
    mismatch raises a `dealer_call_mismatch` alert with the camera's evidence frame.

    Raises:
        NotFoundError: no such table.
        StateConflictError: no recent round at the table has that roll yet.
    """
    with database.session() as session:
        require_table(session, table_id)
        shows = None
        row = None
        for candidate in session.scalars(
            select(Round).where(Round.table_id == table_id).order_by(Round.id.desc()).limit(5)
        ):
            shows = _camera_shows(candidate, body.roll)
            if shows is not None:
                row = candidate
                break
        if row is None or shows is None:
            raise StateConflictError(f"no recent round at table {table_id!r} has roll {body.roll} yet")
        applied = session.scalars(
            select(Roll).where(Roll.round_id == row.id, Roll.applied.is_(True)).order_by(Roll.created_at)
        ).all()
        evidence = applied[body.roll - 1].evidence_sha256 if len(applied) >= body.roll else None
        called: dict[str, Any] = {}
        mismatched: list[str] = []
        if body.winner is not None:
            called["winner"] = body.winner
            if body.winner != shows["winner"]:
                mismatched.append("winner")
        if body.match_count is not None:
            called["match_count"] = body.match_count
            if body.match_count != shows["match_count"]:
                mismatched.append("match_count")
        if body.faces is not None:
            called["faces"] = body.faces
            if Counter(body.faces) != Counter(shows["faces"]):
                mismatched.append("faces")
        matches = not mismatched
        audit.append(
            session,
            actor=actor,
            action="table.dealer_call",
            subject=f"round:{row.id}",
            payload={"roll": body.roll, "called": called, "camera_shows": shows, "matches": matches},
        )
        alert_id = None
        if not matches:
            alert = raise_alert(
                session,
                kind="dealer_call_mismatch",
                message=f"roll {body.roll}: the dealer called {called}, the camera read {shows} "
                f"({', '.join(mismatched)} differ)",
                actor=actor,
                table_id=table_id,
                round_id=row.id,
                data={
                    "roll": body.roll,
                    "called": called,
                    "dice_show": shows,
                    "mismatched": mismatched,
                    "evidence_sha256": evidence,
                },
                webhook_urls=webhook_urls,
                metrics=metrics,
            )
            alert_id = alert.id
        return TableCallOut(
            round_id=row.id,
            roll=body.roll,
            matches=matches,
            called=called,
            camera_shows=shows,
            mismatched=mismatched,
            evidence_sha256=evidence,
            alert_id=alert_id,
        )
