"""`throwbox serve`: run the HTTP service with uvicorn."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the `serve` command to the CLI."""

    @app.command()
    def serve(
        host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
        port: int = typer.Option(8000, help="TCP port to listen on."),
    ) -> None:
        """Start the throwbox service (REST API with OpenAPI docs at /docs)."""
        import uvicorn

        from api.main import create_app

        typer.echo(f"throwbox: serving on http://{host}:{port} (API docs at /docs)")
        uvicorn.run(create_app(), host=host, port=port, log_level="info")
