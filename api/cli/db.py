"""`throwbox db upgrade` and `throwbox db current`: the schema's Alembic revision, migrated once.

A single service migrates its database when it starts (`migrate_on_start`, the default). Replicas on one
PostgreSQL are started with THROWBOX_MIGRATE_ON_START=false after one `throwbox db upgrade`; they refuse a
schema that is not at head instead of racing to migrate it.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the `db` command group to the CLI."""
    group = typer.Typer(help="The database schema: its revision and the upgrade.", no_args_is_help=True)
    app.add_typer(group, name="db")

    @group.command("upgrade")
    def upgrade() -> None:
        """Migrate the database (THROWBOX_DATABASE_URL) to the newest schema revision.

        On PostgreSQL it holds an advisory lock while it migrates, so two upgrades at once run it once.
        """
        from api.db.session import Database, DatabaseError
        from api.settings import Settings

        settings = Settings()
        try:
            database = Database(settings.resolved_database_url)
            try:
                before = database.migrate()  # read under the upgrade's lock
                after = database.current_revision()
            finally:
                database.dispose()
        except DatabaseError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        if before == after:
            typer.echo(f"schema already at head: {after}")
        else:
            typer.echo(f"schema upgraded from {before or 'none'} to {after} (head)")

    @group.command("current")
    def current() -> None:
        """Print the schema revision and whether it is at head; exit 1 when it is not, 2 when there is no
        database where the settings point (it is not made)."""
        from api.cli.database import MAKE_ONE, point_elsewhere, where
        from api.db.session import Database, DatabaseError
        from api.settings import Settings

        settings = Settings()
        try:
            database = Database(settings.resolved_database_url)
            try:
                if database.sqlite_path is not None and not database.sqlite_path.is_file():
                    typer.echo(
                        f"error: no throwbox database at {where(settings)}; {point_elsewhere(settings)}; "
                        f"{MAKE_ONE}",
                        err=True,
                    )
                    raise typer.Exit(2)
                revision = database.current_revision()
                head = database.head_revision()
            finally:
                database.dispose()
        except DatabaseError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        if revision == head:
            typer.echo(f"{revision} (head)")
            return
        typer.echo(f"{revision or 'none'} (not at head {head}: run `throwbox db upgrade`)")
        raise typer.Exit(1)
