"""How many dice a read expects, and where that count came from (issue 48): the game decides, not the caller.

A read for a table always knows how many dice its game throws: `hrd10` ten, the six-dice variation six, and,
while the table's open round waits for the Extra Roll, the Extra Roll's own count (the dice that did not
match the first roll's winner, 593.4(g); `rules.hrd.round.Round.dice_to_rethrow`, stored in the round's
summary). An explicit `expect` (`throwbox read --expect`, the `expect` field of `POST /v1/reads`) still wins.
A read with neither a table nor an `expect` is judged with no count: no short or over count can be found, so
a missing die goes unseen; the read document says so in its "count" block and the CLI warns.

The "count" block of a read document: `{"expected": N | null, "source": "given" | "game" | "extra_roll" |
"none"}`, plus "game" (and "round_id" for the Extra Roll) where the count came from the table.

The live loop (api/live.py) reads every frame with its table's dice (`LiveConfig.expected_dice`), during the
Extra Roll too: its frame shows the kept dice in their layout box beside the rethrown ones, and
`vision.judge.layout_check.decide_extra_roll` splits them. `POST /v1/reads` and `throwbox read` return the
read alone, with no split: during the Extra Roll they expect the rethrown dice only, the faces a client
submits as the Extra Roll (`POST /v1/tables/{id}/rolls`); a frame that also shows the kept dice is read with
`expect` given (the table's dice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

# The database, the models and the rules are imported where a table is looked up: `throwbox read` with no
# table loads none of them (refusing a hostile image stays cheap, tests/vision/bomb_cost.py).

COUNT_SOURCES = ("given", "game", "extra_roll", "none")
NO_COUNT_WARNING = (
    "judged with no count of dice (no --expect, no table whose game gives one): a missing or extra die "
    "cannot be found"
)


@dataclass(frozen=True)
class ReadCount:
    """The dice a read expects and where the number came from."""

    expected: int | None
    source: str  # one of COUNT_SOURCES
    game: str | None = None
    round_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The read document's "count" block."""
        out: dict[str, Any] = {"expected": self.expected, "source": self.source}
        if self.game is not None:
            out["game"] = self.game
        if self.round_id is not None:
            out["round_id"] = self.round_id
        return out


NO_COUNT = ReadCount(None, "none")


def table_count(session: Session, table_id: str) -> ReadCount | None:
    """The count the table's game and open round give; None for an unknown table or a game of no dice
    count (`rules.hrd.wagers.GAMES` names the dice games)."""
    from sqlalchemy import select

    from api.db.models import GameTable, Round
    from rules.hrd.round import Phase
    from rules.hrd.wagers import GAMES

    table = session.get(GameTable, table_id)
    if table is None or table.game not in GAMES:
        return None
    dice = int(GAMES[table.game].dice)
    row = session.scalars(select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None))).first()
    if row is not None and row.phase == Phase.AWAITING_EXTRA_ROLL.value:
        rethrow = (row.state or {}).get("summary", {}).get("dice_to_rethrow")
        if isinstance(rethrow, int) and 0 < rethrow <= dice:
            return ReadCount(rethrow, "extra_roll", game=table.game, round_id=row.id)
    return ReadCount(dice, "game", game=table.game)


def resolve_count(expect: int | None, from_table: ReadCount | None) -> ReadCount:
    """An explicit `expect` first, then the table's game, else no count."""
    if expect is not None:
        return ReadCount(expect, "given")
    return from_table if from_table is not None else NO_COUNT


def service_table_count(table_id: str) -> tuple[ReadCount | None, str | None]:
    """The table's count from the service's database (`THROWBOX_DATABASE_URL`, else the SQLite file under
    `THROWBOX_DATA_DIR`), as `throwbox read --table` finds it: (count, None), or (None, why not).

    The database is only read: a SQLite file that is not there is not created, and none is migrated.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from api.db.session import Database, DatabaseError
    from api.settings import Settings

    settings = Settings()
    if settings.database_url is None:
        path = settings.data_dir / "throwbox.sqlite3"
        if not path.is_file():
            return None, f"no service database at {path} (THROWBOX_DATA_DIR / THROWBOX_DATABASE_URL)"
    try:
        database = Database(settings.resolved_database_url)
    except DatabaseError as exc:
        return None, str(exc)
    try:
        with database.read_session() as session:
            found = table_count(session, table_id)
    except SQLAlchemyError as exc:
        return None, f"cannot read the service database: {type(exc).__name__}"
    finally:
        database.dispose()
    if found is None:
        return None, f"the service database has no dice table {table_id!r}"
    return found, None
