"""`throwbox serve`: run the HTTP service with uvicorn."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the `serve` command to the CLI."""

    @app.command()
    def serve(
        host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
        port: int = typer.Option(8000, help="TCP port to listen on."),
        demo: bool = typer.Option(
            False, "--demo", help="Also run the demo table: synthetic throws read and settled, no camera."
        ),
    ) -> None:
        """Start the throwbox service (REST API with OpenAPI docs at /docs).

        Settings come from THROWBOX_* environment variables (see the README). On a database with no
        API key yet, a first admin key is created and written to <data dir>/first-admin.key (mode 0600);
        the key itself is never printed or logged.
        """
        import uvicorn

        from api.cli.database import open_database
        from api.cli.keys import ensure_first_admin_key, first_admin_key_note
        from api.main import create_app
        from api.settings import Settings

        local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        self_url = f"http://{local}:{port}"
        settings = Settings(self_url=self_url)
        if demo:
            settings = settings.model_copy(update={"demo": True})
        database = open_database(settings, create=True)
        try:
            path = ensure_first_admin_key(settings=settings, database=database)
            # At a restart: what the key store says of the key in the file (revoked: not "is in").
            note = None if path is not None else first_admin_key_note(settings=settings, database=database)
        finally:
            database.dispose()
        if path is not None:
            typer.echo(f"throwbox: first admin key written to {path} (read it, keep it, delete the file)")
        elif note is not None:
            typer.echo(f"throwbox: {note}")
        typer.echo("throwbox: create more keys with `throwbox keys create --role ROLE`")
        typer.echo(f"throwbox: serving on http://{host}:{port} (API docs at /docs)")
        if settings.demo:
            from api.live_service import read_or_create_key

            database = open_database(settings)
            try:
                from api.auth import Role

                demo_key = read_or_create_key(
                    database, settings.demo_key_path, role=Role.SURVEILLANCE, name="demo-dashboard"
                )
            finally:
                database.dispose()
            typer.echo(
                f"throwbox: demo table 'demo' playing {settings.demo_clips_dir}; dashboard (read-only "
                f"surveillance key, also in {settings.demo_key_path}):\n  {self_url}/#key={demo_key}"
            )
        uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
