"""`throwbox keys`: create, list and revoke API keys (hashed at rest; a key is shown once)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from api.cli.database import open_database

if TYPE_CHECKING:
    from api.db.session import Database
    from api.settings import Settings


# The PostgreSQL advisory lock the first admin key is made under ("tbx-first-admin").
FIRST_KEY_LOCK = 0x7462_782D_6669_7273


def ensure_first_admin_key(*, settings: Settings, database: Database) -> Path | None:
    """On a database with no key, create an admin key and write it to a 0600 file; return its path."""
    from sqlalchemy import text

    from api import audit
    from api.auth import Role, count_keys, create_key

    with database.session() as session:
        if not database.is_sqlite:
            # Replicas started together on an empty database: one makes the key, the others wait here, then
            # find it (SQLite's single writer orders them already).
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": FIRST_KEY_LOCK})
        if count_keys(session) > 0:
            return None
        new = create_key(session, role=Role.ADMIN, name="first-admin")
        path = settings.first_admin_key_path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # never world-readable
        with os.fdopen(fd, "w") as handle:
            handle.write(new.secret + "\n")
        audit.append(
            session,
            actor="system:serve",
            action="key.create",
            subject=f"key:{new.key_id}",
            payload={"name": new.name, "role": new.role.value, "supervisor": False},
        )
    return path


def first_admin_key_note(*, settings: Settings, database: Database) -> str | None:
    """What `throwbox serve` says at a restart about the first admin key file, from the key store: where it
    is while the key in it works; that it may go once the key was revoked; nothing when there is no file."""
    from api.auth import Role, authenticate

    path = settings.first_admin_key_path
    if not path.is_file():
        return None
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path} cannot be read ({type(exc).__name__}); the first admin key is not known here"
    with database.read_session() as session:
        principal = authenticate(session, secret)
    if principal is not None and principal.role is Role.ADMIN:
        return f"the first admin key is in {path}"
    return f"{path} holds a key that no longer works (revoked or unknown here): delete the file"


def register(app: typer.Typer) -> None:
    """Attach the `keys` command group to the CLI."""
    keys = typer.Typer(help="API keys: create (shown once), list, revoke.", no_args_is_help=True)
    app.add_typer(keys, name="keys")

    @keys.command("create")
    def create(
        role: str = typer.Option(..., help="reader, dealer, surveillance, admin or worker."),
        name: str = typer.Option("", help="Who or what holds the key (default: the role)."),
        supervisor: bool = typer.Option(False, help="May correct settled rounds."),
        worker_id: str | None = typer.Option(
            None,
            "--worker-id",
            help="A worker key only: bind it to this worker id (the worker's --worker-id); it may then take "
            "leases and send rolls as that worker only.",
        ),
    ) -> None:
        """Create a key; the key is the LAST line of the output (store it now: it is not kept)."""
        import re

        from api import audit
        from api.auth import Role, create_key
        from api.leases import WORKER_ID_PATTERN
        from api.settings import Settings

        try:
            chosen = Role(role)
        except ValueError as exc:
            known = ", ".join(r.value for r in Role)
            typer.echo(f"error: unknown role {role!r}; use one of: {known}", err=True)
            raise typer.Exit(2) from exc
        if worker_id is not None and chosen is not Role.WORKER:
            typer.echo(f"error: --worker-id binds a worker key; this is a {chosen.value} key", err=True)
            raise typer.Exit(2)
        if worker_id is not None and not re.match(WORKER_ID_PATTERN, worker_id):
            typer.echo(
                f"error: --worker-id must be 1-100 of A-Z a-z 0-9 . _ : -, got {worker_id!r}", err=True
            )
            raise typer.Exit(2)
        holder = name.strip() or chosen.value
        if len(holder) > 100:
            typer.echo("error: --name has at most 100 characters", err=True)
            raise typer.Exit(2)
        settings = Settings()
        database = open_database(settings)
        try:
            with database.session() as session:
                new = create_key(
                    session, role=chosen, name=holder, supervisor=supervisor, worker_id=worker_id
                )
                payload: dict[str, object] = {
                    "name": new.name,
                    "role": new.role.value,
                    "supervisor": new.supervisor,
                }
                if worker_id is not None:
                    payload["worker_id"] = worker_id
                audit.append(
                    session,
                    actor="cli:keys",
                    action="key.create",
                    subject=f"key:{new.key_id}",
                    payload=payload,
                )
        finally:
            database.dispose()
        extra = " with the supervisor capability" if supervisor else ""
        extra += f", bound to worker {worker_id!r}" if worker_id is not None else ""
        typer.echo(f"created key {new.key_id} ({new.name}, role {new.role.value}{extra}); it is shown once:")
        typer.echo(new.secret)

    @keys.command("list")
    def list_keys() -> None:
        """List keys (never the keys themselves)."""
        from sqlalchemy import select

        from api.db.models import ApiKey
        from api.settings import Settings

        database = open_database(Settings())
        try:
            with database.session() as session:
                for row in session.scalars(select(ApiKey).order_by(ApiKey.id)):
                    state = "revoked" if row.revoked_at is not None else "active"
                    sup = " supervisor" if row.supervisor else ""
                    bound = f"\tworker_id={row.worker_id}" if row.worker_id is not None else ""
                    typer.echo(f"{row.id}\t{row.role}{sup}\t{state}\t{row.name}{bound}")
        finally:
            database.dispose()

    @keys.command("revoke")
    def revoke(key_id: int = typer.Argument(..., help="The key's id (see `throwbox keys list`).")) -> None:
        """Revoke a key; it stops working at once (never the last active admin key: exit 1)."""
        from api import audit
        from api.auth import LastAdminKeyError, revoke_key
        from api.settings import Settings

        database = open_database(Settings())
        try:
            with database.session() as session:
                try:
                    found = revoke_key(session, key_id)
                except LastAdminKeyError as exc:
                    typer.echo(f"error: {exc}", err=True)
                    raise typer.Exit(1) from exc
                if not found:
                    typer.echo(f"error: no key {key_id}", err=True)
                    raise typer.Exit(1)
                audit.append(
                    session, actor="cli:keys", action="key.revoke", subject=f"key:{key_id}", payload={}
                )
        finally:
            database.dispose()
        typer.echo(f"revoked key {key_id}")
