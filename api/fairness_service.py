"""The fairness routes' service: put a dice set into play (audited), list a table's sets, report the
fairness tests over a window, acknowledge a `dice_bias_suspected` alert. Each function is one transaction.

Its routes (api/routes/fairness.py) only parse and answer; the errors raised here (api/errors.py) become
HTTP answers in api/http_errors.py. The tests themselves are api/fairness.py's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit, fairness
from api.alert_service import alert_out
from api.alerts import acknowledge_alert
from api.db.models import Alert, DiceSet, GameTable
from api.db.session import Database
from api.errors import NotFoundError, StateConflictError, UnprocessableError
from api.schemas.admin import AlertOut


def _dice_table(session: Session, table_id: str) -> GameTable:
    """The table, refused when there is none (NotFoundError) or it throws no dice (UnprocessableError)."""
    row = session.get(GameTable, table_id)
    if row is None:
        raise NotFoundError(f"no table {table_id!r}")
    if row.game not in fairness.GAME_DICE:
        raise UnprocessableError(f"table {table_id!r} throws no dice")
    return row


def register_dice_set(
    *,
    database: Database,
    table_id: str,
    name: str,
    per_position: bool,
    in_play_at: datetime | None,
    out_of_play_at: datetime | None,
    actor: str,
) -> dict[str, Any]:
    """Put a set of dice into play (the set in play goes out: its watch ends), audited; its document.

    Raises:
        UnprocessableError: out_of_play_at is not after in_play_at, or the table throws no dice.
        NotFoundError: no such table.
    """
    if in_play_at is not None and out_of_play_at is not None and out_of_play_at <= in_play_at:
        raise UnprocessableError("out_of_play_at must follow in_play_at")
    with database.session() as session:
        table = _dice_table(session, table_id)
        row = fairness.register_set(
            session,
            table=table,
            name=name,
            per_position=per_position,
            actor=actor,
            in_play_at=in_play_at,
            out_of_play_at=out_of_play_at,
        )
        document = fairness.set_document(row)
        audit.append(
            session,
            actor=actor,
            action="dice_set.register",
            subject=f"table:{table_id}",
            payload={k: document[k] for k in ("id", "name", "per_position", "in_play_at", "out_of_play_at")},
        )
        return document


def dice_sets(*, database: Database, table_id: str) -> list[dict[str, Any]]:
    """A table's dice sets' documents, newest first (NotFoundError: no such table)."""
    with database.read_session() as session:
        if session.get(GameTable, table_id) is None:
            raise NotFoundError(f"no table {table_id!r}")
        rows = session.scalars(
            select(DiceSet).where(DiceSet.table_id == table_id).order_by(DiceSet.id.desc())
        ).all()
        return [fairness.set_document(r) for r in rows]


def report(
    *,
    database: Database,
    table_id: str,
    since: datetime | None,
    until: datetime | None,
    dice_set_id: int | None,
) -> dict[str, Any]:
    """The fairness tests of a table's dice over a window, of one set (default the set in play).

    Raises:
        NotFoundError: no such table, or no such dice set at it.
        UnprocessableError: the table throws no dice.
    """
    with database.read_session() as session:
        table = _dice_table(session, table_id)
        if dice_set_id is not None:
            dice_set = session.get(DiceSet, dice_set_id)
            if dice_set is None or dice_set.table_id != table_id:
                raise NotFoundError(f"no dice set {dice_set_id} at {table_id!r}")
        else:
            dice_set = fairness.current_set(session, table_id)
        return fairness.report(session, table=table, dice_set=dice_set, since=since, until=until).as_dict()


def acknowledge_bias_alert(
    *, database: Database, table_id: str, alert_id: int, actor: str, note: str
) -> AlertOut:
    """Acknowledge a `dice_bias_suspected` alert of this table; the alert stays.

    Raises:
        NotFoundError: no such alert of that kind at this table.
        StateConflictError: it is already acknowledged.
    """
    with database.session() as session:
        row = session.get(Alert, alert_id, with_for_update=True)
        if row is None or row.kind != fairness.ALERT_KIND or row.table_id != table_id:
            raise NotFoundError(f"no {fairness.ALERT_KIND} alert {alert_id} at {table_id!r}")
        if row.acknowledged_at is not None:
            raise StateConflictError(f"alert {alert_id} is already acknowledged")
        acknowledge_alert(session, row, actor=actor, payload={"note": note})
        session.flush()
        return alert_out(row)
