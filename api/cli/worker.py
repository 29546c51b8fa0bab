"""`throwbox worker`: run the live loops of some tables against a remote service (a table worker, issue 50;
docs/floor.md)."""

from __future__ import annotations

from pathlib import Path

import typer


def _read_key(path: Path, what: str) -> str:
    """The API key a key file holds: its one line, or, in the whole output of `throwbox keys create` saved
    as it is (a line about the key, then the key), the one line that is a key."""
    from api.auth import KEY_SCHEME

    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {what} {path}: {exc}") from exc
    if not lines:
        raise typer.BadParameter(f"{what} {path} is empty")
    if len(lines) == 1:
        return lines[0]
    keys = [line for line in lines if line.startswith(f"{KEY_SCHEME}_") and " " not in line]
    if len(keys) != 1:
        raise typer.BadParameter(
            f"{what} {path} holds {len(lines)} lines and {len(keys)} keys; it should hold the one key "
            "(the last line of `throwbox keys create`)"
        )
    return keys[0]


def register(app: typer.Typer) -> None:
    """Attach the `worker` command to the CLI."""

    @app.command()
    def worker(
        service: list[str] = typer.Option(
            ...,
            "--service",
            help="The service URL; repeat it for each replica (tried in turn when one does not answer).",
        ),
        key_file: Path = typer.Option(..., "--key-file", help="File holding a worker-role API key."),
        table: list[str] = typer.Option(
            ..., "--table", help="A table to watch (repeat); each is run while this worker holds its lease."
        ),
        worker_id: str | None = typer.Option(
            None,
            "--worker-id",
            help="This worker's name at the service (default host-pid); keep it stable across restarts so "
            "a restarted worker finds its spool and its own leases.",
        ),
        spool: Path | None = typer.Option(
            None, "--spool", help="Spool folder (default <data dir>/worker-spool/<worker id>)."
        ),
        health_port: int | None = typer.Option(
            None, "--health-port", help="Serve GET /healthz (JSON) on this port (default: none)."
        ),
        health_host: str = typer.Option("127.0.0.1", "--health-host", help="Interface for /healthz."),
        croupier_key_file: Path | None = typer.Option(
            None,
            "--croupier-key-file",
            help="File holding a dealer key: demo-clip tables also play the demo croupier (rounds, wagers).",
        ),
        drain_s: float = typer.Option(
            10.0, "--drain-s", help="On SIGTERM, seconds to try to empty the spool before releasing leases."
        ),
    ) -> None:
        """Run the live loops (camera, settle, read, evidence, rolls) of the given tables against a remote
        service: one table at a time per lease, spooling to disk while the service does not answer.

        SIGTERM (or Ctrl-C) stops the loops, replays what it can, releases the leases and exits.
        """
        import logging
        import os
        import signal
        import socket
        import threading

        from api.settings import Settings
        from api.worker import Worker, WorkerError, serve_health

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
        key = _read_key(key_file, "--key-file")
        croupier_key = (
            None if croupier_key_file is None else _read_key(croupier_key_file, "--croupier-key-file")
        )
        wid = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        folder = spool if spool is not None else Settings().data_dir / "worker-spool" / wid
        try:
            running = Worker(
                services=service,
                key=key,
                tables=table,
                worker_id=wid,
                spool_dir=folder,
                croupier_key=croupier_key,
            )
        except (ValueError, WorkerError) as exc:
            typer.echo(f"throwbox worker: {exc}", err=True)
            raise typer.Exit(2) from None
        done = threading.Event()

        def on_signal(signum: int, frame: object) -> None:
            done.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        server = None
        if health_port is not None:
            server = serve_health(running, health_host, health_port)
        typer.echo(
            f"throwbox worker {wid}: tables {', '.join(table)} at {', '.join(service)}; spool {folder}"
            + (f"; /healthz on http://{health_host}:{health_port}" if server is not None else "")
        )
        running.start()
        while not done.wait(1.0):
            pass
        typer.echo(f"throwbox worker {wid}: stopping (releasing the leases)")
        running.stop(drain_s=drain_s)
        if server is not None:
            server.shutdown()
        typer.echo(f"throwbox worker {wid}: stopped")
