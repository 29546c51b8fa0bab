"""`throwbox audit verify`: check the hash chain of the audit trail."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the `audit` command group to the CLI."""
    group = typer.Typer(help="The append-only audit trail.", no_args_is_help=True)
    app.add_typer(group, name="audit")

    @group.command("verify")
    def verify() -> None:
        """Recompute every entry's hash; exit 1 at the first entry that was changed or removed, or when
        the chain is empty in a database that was served (keys, tables, rounds... but no entry)."""
        from api.audit import served_traces, verify_chain
        from api.cli.database import open_database, where
        from api.settings import Settings

        settings = Settings()
        database = open_database(settings)
        try:
            with database.read_session() as session:
                report = verify_chain(session)
                traces = served_traces(session) if report.ok and report.entries == 0 else {}
        finally:
            database.dispose()
        if not report.ok:
            typer.echo(
                f"audit chain BROKEN at entry {report.first_bad_seq}: {report.problem} "
                f"({report.entries} entries verified before it)",
                err=True,
            )
            raise typer.Exit(1)
        if traces:
            held = ", ".join(f"{count} {name}" for name, count in traces.items())
            typer.echo(
                f"audit chain EMPTY in a database that was served ({held}, at {where(settings)}): every "
                "one of those writes an audit entry, so the trail was removed; nothing is verified",
                err=True,
            )
            raise typer.Exit(1)
        if report.entries == 0:
            typer.echo(f"audit chain empty: 0 entries, and nothing served from {where(settings)} yet")
            return
        typer.echo(f"audit chain OK: {report.entries} entries")
