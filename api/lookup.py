"""Find what a request names, or refuse it: a table or round id that names nothing is a NotFoundError (404),
wherever it comes (a path, a body, a form, a list's filter)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from api.db.models import GameTable, Round
from api.db.session import Database
from api.errors import NotFoundError, UnprocessableError


def require_table(session: Session, table_id: str, *, lock: bool = False) -> GameTable:
    """The table `table_id` names (NotFoundError when none; an empty id names none)."""
    row = session.get(GameTable, table_id, with_for_update=lock) if table_id else None
    if row is None:
        raise NotFoundError(f"no table {table_id!r}")
    return row


def check_table(database: Database, table_id: str | None) -> None:
    """Refuse (NotFoundError) a `table_id` that names no table; None names none and is let through."""
    if table_id is None:
        return
    with database.read_session() as session:
        require_table(session, table_id)


def require_round(session: Session, round_id: int) -> Round:
    """The round `round_id` names (NotFoundError when none)."""
    row = session.get(Round, round_id)
    if row is None:
        raise NotFoundError(f"no round {round_id}")
    return row


def check_subject(session: Session, *, table_id: str | None, round_id: int | None) -> None:
    """Refuse what an alert is about when it does not exist (404), or a round of another table than the one
    named (422: a rule between two fields JSON Schema cannot state)."""
    if table_id is not None:
        require_table(session, table_id)
    if round_id is not None:
        row = require_round(session, round_id)
        if table_id is not None and row.table_id != table_id:
            raise UnprocessableError(f"round {round_id} is at table {row.table_id!r}, not {table_id!r}")
