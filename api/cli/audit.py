"""`throwbox audit verify`: check the hash chain of the audit trail."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the `audit` command group to the CLI."""
    group = typer.Typer(help="The append-only audit trail.", no_args_is_help=True)
    app.add_typer(group, name="audit")

    @group.command("verify")
    def verify() -> None:
        """Recompute every entry's hash; exit 1 at the first entry that was changed or removed."""
        from api.audit import verify_chain
        from api.cli.keys import open_database
        from api.settings import Settings

        database = open_database(Settings())
        try:
            with database.session() as session:
                report = verify_chain(session)
        finally:
            database.dispose()
        if report.ok:
            typer.echo(f"audit chain OK: {report.entries} entries")
            return
        typer.echo(
            f"audit chain BROKEN at entry {report.first_bad_seq}: {report.problem} "
            f"({report.entries} entries verified before it)",
            err=True,
        )
        raise typer.Exit(1)
