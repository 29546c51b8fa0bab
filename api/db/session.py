"""The database: engine, sessions, and the Alembic upgrade (at start-up, or once by `throwbox db upgrade`).

SQLite (the embedded default) runs in WAL mode, and every transaction starts with `BEGIN IMMEDIATE`,
so writers queue on SQLite's own lock (with a busy timeout) instead of failing when a read transaction
tries to become a write one. PostgreSQL is used as it is; rows that must be serialised (the audit head,
a table's open round) are locked with `SELECT ... FOR UPDATE`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
_READ_ONLY = "throwbox_read_only"
# The PostgreSQL advisory lock key `migrate` holds: two processes upgrading at once run the upgrade once.
MIGRATION_LOCK_KEY = 0x7468_726F_7762_6F78 & 0x7FFF_FFFF_FFFF_FFFF  # "throwbox"


class DatabaseError(Exception):
    """The database cannot be opened or migrated (a bad URL, a missing driver, a refused connection)."""


class SchemaNotAtHeadError(DatabaseError):
    """The schema is older than this code's migrations (a process that does not migrate refuses it)."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's "begin" event issue BEGIN IMMEDIATE, instead of pysqlite's deferred BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")  # an acknowledged roll survives power loss, not just kill -9
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    # Read-only sessions (`Database.read_session`) take no write lock: WAL readers never block.
    if conn.get_execution_options().get(_READ_ONLY):
        conn.exec_driver_sql("BEGIN")
    else:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


class Database:
    """One engine and its session factory."""

    def __init__(self, url: str) -> None:
        try:
            parsed = make_url(url)
        except Exception as exc:  # sqlalchemy raises ArgumentError; name the setting, never the URL
            raise DatabaseError("THROWBOX_DATABASE_URL is not a valid SQLAlchemy URL") from exc
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        self._password = parsed.password if isinstance(parsed.password, str) else None
        kwargs: dict[str, Any] = {"pool_pre_ping": True}
        self._sqlite_dir: Path | None = None
        # The SQLite file (None: PostgreSQL, or SQLite in memory): opening it would create it.
        self.sqlite_path: Path | None = None
        if self.is_sqlite:
            if parsed.database and parsed.database != ":memory:":
                self.sqlite_path = Path(parsed.database)
                self._sqlite_dir = self.sqlite_path.parent
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        else:
            kwargs.update(pool_size=20, max_overflow=20)
        try:
            self.engine: Engine = create_engine(parsed, **kwargs)
        except Exception as exc:  # e.g. the driver is not installed
            raise DatabaseError(f"cannot open the database: {type(exc).__name__}: {exc}") from exc
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _sqlite_begin)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if self.is_sqlite else contextlib.nullcontext()
        )
        reader = self.engine.execution_options(**{_READ_ONLY: True})
        self.read_sessions = sessionmaker(reader, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on any exception.

        On SQLite, writers of this process queue on a lock first: waiting there wakes at once when the
        writer before finishes, where SQLite's own busy handler polls with sleeps of up to 100 ms, which
        made the slowest requests of the load benchmark several times slower. Other processes still
        queue on SQLite's lock (busy timeout).
        """
        with self._write_lock, self.sessions() as session, session.begin():
            yield session

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A session for reading only: on SQLite it starts a deferred transaction (no write lock), so
        reads run beside a writer instead of queueing behind it. Writing in it is a programming error."""
        with self.read_sessions() as session, session.begin():
            yield session
            if session.new or session.dirty or session.deleted:
                raise RuntimeError("read_session used to write; use Database.session")

    def _alembic_config(self) -> Any:
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        return config

    def migrate(self) -> str | None:
        """Bring the schema to the latest Alembic revision; return the revision it found (None: empty).

        On PostgreSQL the upgrade runs under a transaction-level advisory lock, so several processes
        upgrading at once (replicas starting together, two `throwbox db upgrade`) run it once: the others
        wait, then find the schema at head and do nothing.
        """
        from alembic import command
        from alembic.runtime.migration import MigrationContext

        if self._sqlite_dir is not None:
            self._sqlite_dir.mkdir(parents=True, exist_ok=True)
        config = self._alembic_config()
        try:
            with self.engine.connect() as connection:
                if not self.is_sqlite:
                    connection.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                    )
                before = MigrationContext.configure(connection).get_current_revision()
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
                connection.commit()
        except Exception as exc:
            raise DatabaseError(f"cannot migrate the database: {self._describe(exc)}") from exc
        return before

    def head_revision(self) -> str:
        """The newest revision of this code's migrations."""
        from alembic.script import ScriptDirectory

        head = ScriptDirectory.from_config(self._alembic_config()).get_current_head()
        if head is None:
            raise DatabaseError("the migrations have no head revision")
        return head

    def current_revision(self) -> str | None:
        """The database's schema revision (None: never migrated)."""
        from alembic.runtime.migration import MigrationContext

        if self.sqlite_path is not None and not self.sqlite_path.is_file():
            return None  # never created: not migrated (and reading it must not create it)
        try:
            with self.engine.connect() as connection:
                revision = MigrationContext.configure(connection).get_current_revision()
                connection.rollback()
        except Exception as exc:
            raise DatabaseError(f"cannot read the schema revision: {self._describe(exc)}") from exc
        return revision

    def check_at_head(self) -> None:
        """Raise SchemaNotAtHeadError (one line, naming the command to run) unless the schema is at head."""
        current, head = self.current_revision(), self.head_revision()
        if current != head:
            raise SchemaNotAtHeadError(
                f"the database schema is at revision {current or 'none (empty database)'}, not {head}: "
                "run `throwbox db upgrade` first (THROWBOX_MIGRATE_ON_START=false)"
            )

    def _describe(self, exc: Exception) -> str:
        """The first line of the driver's message, with the password (if any) blanked out."""
        text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        line = text[0] if text else ""
        if self._password:
            line = line.replace(self._password, "***")
        return f"{type(exc).__name__}: {line}"

    def ping(self) -> bool:
        """True when the database answers a trivial query."""
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
                connection.rollback()
            return True
        except Exception:
            return False

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
