"""The service's database as the command line opens it: found where the settings point, never made there.

Only `throwbox serve` and `throwbox db upgrade` create a database. Every other command that reads or writes
one (`keys`, `audit verify`, `fairness`, `enroll`, `db current`) refuses, exit 2, when there is none where
the settings point: a missing SQLite file, or a database with no throwbox schema. The refusal names the
path it resolved (relative settings are resolved from the working directory, the usual slip: a command run
outside the service's folder) and the setting that points elsewhere (`THROWBOX_DATA_DIR`,
`THROWBOX_DATABASE_URL`), instead of making an empty database there and answering about nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from api.db.session import Database
    from api.settings import Settings

MAKE_ONE = "only `throwbox serve` and `throwbox db upgrade` make a new one"


def where(settings: Settings) -> str:
    """The database the settings resolve to, in words a person can act on (never the password)."""
    from sqlalchemy.engine import make_url

    if settings.database_url is None:
        path = (settings.data_dir / "throwbox.sqlite3").resolve()
        return f"{path} (the SQLite file under THROWBOX_DATA_DIR={settings.data_dir}, run from {Path.cwd()})"
    try:
        url = make_url(settings.database_url.get_secret_value())
    except Exception:  # Database() says the URL is not valid; here it only has to be named
        return "THROWBOX_DATABASE_URL (not a valid URL)"
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return f"{Path(str(url.database)).resolve()} (THROWBOX_DATABASE_URL)"
    return f"{url.render_as_string(hide_password=True)} (THROWBOX_DATABASE_URL)"


def point_elsewhere(settings: Settings) -> str:
    """How to point the command at the service's database."""
    if settings.database_url is None:
        return (
            "point THROWBOX_DATA_DIR at the service's data folder (or THROWBOX_DATABASE_URL at its database)"
        )
    return "point THROWBOX_DATABASE_URL at the service's database"


class NoDatabaseError(Exception):
    """There is no throwbox database where the settings point (the message says where, and what to do)."""


def check_exists(settings: Settings, database: Database) -> None:
    """Raise NoDatabaseError unless a throwbox database is there: the SQLite file exists and holds the
    schema, or the PostgreSQL database does (DatabaseError when it cannot be asked)."""
    if database.sqlite_path is not None and not database.sqlite_path.is_file():
        raise NoDatabaseError(
            f"no throwbox database at {where(settings)}; {point_elsewhere(settings)}; {MAKE_ONE}"
        )
    if database.current_revision() is None:
        raise NoDatabaseError(
            f"the database at {where(settings)} holds no throwbox schema; {point_elsewhere(settings)}; "
            f"{MAKE_ONE}"
        )


def open_database(settings: Settings, *, create: bool = False) -> Database:
    """The database of `settings`, migrated to the latest schema (checked to be at it, where
    `migrate_on_start` is false: then `throwbox db upgrade` migrates). Without `create` (every command but
    `serve`), a database that is not there is refused (exit 2), never made."""
    from api.db.session import Database, DatabaseError

    database: Database | None = None
    try:
        database = Database(settings.resolved_database_url)
        if create:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        else:
            check_exists(settings, database)
        if settings.migrate_on_start:
            database.migrate()
        else:
            database.check_at_head()
    except (DatabaseError, NoDatabaseError) as exc:
        if database is not None:
            database.dispose()
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    return database
