"""What `throwbox serve` says of the first admin key at a restart comes from the key store (issue 57): the
file is named while the key in it works; once that key is revoked, the service no longer says "the first
admin key is in ..." (it says the file may go). A real `throwbox serve` process, started twice; the note
itself on a real database."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.api.test_kill9 import run_cli, serve
from tests.conftest import free_port


def _start_and_stop(env: dict[str, str], log: Path) -> str:
    """Start `throwbox serve` until it answers, stop it (SIGTERM); what it printed this time."""
    before = log.read_text() if log.exists() else ""
    with serve(env, free_port(), log) as proc:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    return log.read_text()[len(before) :]


def test_the_restart_message_reads_the_key_store(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {**os.environ, "THROWBOX_DATA_DIR": str(data_dir)}
    env.pop("THROWBOX_DATABASE_URL", None)
    log = tmp_path / "serve.log"
    key_file = data_dir / "first-admin.key"
    first = _start_and_stop(env, log)
    assert f"first admin key written to {key_file}" in first
    # Another admin key, then the first one revoked (as an operator should, having read the file).
    assert run_cli(env, "keys", "create", "--role", "admin", "--name", "ops").returncode == 0
    listed = run_cli(env, "keys", "list").stdout.splitlines()
    (first_id,) = [line.split("\t")[0] for line in listed if line.endswith("\tfirst-admin")]
    revoked = run_cli(env, "keys", "revoke", first_id)
    assert revoked.returncode == 0, revoked.stderr
    after = _start_and_stop(env, log)
    assert "the first admin key is in" not in after
    assert f"{key_file} holds a key that no longer works (revoked or unknown here): delete the file" in after
    assert key_file.read_text().strip() not in after  # the key itself is never printed


def test_the_note_names_the_file_while_its_key_works(tmp_path: Path) -> None:
    from api.auth import Role, create_key
    from api.cli.database import open_database
    from api.cli.keys import first_admin_key_note
    from api.settings import Settings

    settings = Settings(data_dir=tmp_path / "data")
    database = open_database(settings, create=True)
    try:
        assert first_admin_key_note(settings=settings, database=database) is None  # no file: nothing said
        with database.session() as session:
            admin = create_key(session, role=Role.ADMIN, name="first-admin").secret
            dealer = create_key(session, role=Role.DEALER, name="d").secret
        path = settings.first_admin_key_path
        path.write_text(admin + "\n")
        note = first_admin_key_note(settings=settings, database=database)
        assert note == f"the first admin key is in {path}"
        path.write_text(dealer + "\n")  # a key that works, but is no admin's
        assert "no longer works" in str(first_admin_key_note(settings=settings, database=database))
    finally:
        database.dispose()
