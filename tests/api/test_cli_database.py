"""The command line never makes a database where there is none (issue 57): every command that opens one
refuses, naming the path it resolved and the setting that points elsewhere; only `throwbox serve` and
`throwbox db upgrade` make one. `throwbox audit verify` on an emptied chain of a database that was served
says so and fails, rather than "OK: 0 entries"."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app

runner = CliRunner()

# Every command that opens the service's database (api/cli/*: `open_database`, and `db current`).
OPENERS = [
    ["audit", "verify"],
    ["keys", "list"],
    ["keys", "create", "--role", "admin", "--name", "ops"],
    ["keys", "revoke", "1"],
    ["fairness", "--table", "T01"],
    ["enroll", "--table", "T01", "--confirmed"],
    ["db", "current"],
]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory outside the service's folder, with no THROWBOX_* database setting."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("THROWBOX_DATA_DIR", raising=False)
    monkeypatch.delenv("THROWBOX_DATABASE_URL", raising=False)
    monkeypatch.delenv("THROWBOX_MIGRATE_ON_START", raising=False)
    return tmp_path


@pytest.mark.parametrize("args", OPENERS, ids=lambda a: " ".join(a[:2]))
def test_a_command_refuses_where_there_is_no_database(elsewhere: Path, args: list[str]) -> None:
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2, refused.output
    resolved = elsewhere / "data" / "throwbox.sqlite3"
    assert f"no throwbox database at {resolved}" in refused.stderr
    assert "THROWBOX_DATA_DIR=data" in refused.stderr and f"run from {elsewhere}" in refused.stderr
    assert "point THROWBOX_DATA_DIR at the service's data folder" in refused.stderr
    assert "`throwbox db upgrade`" in refused.stderr
    assert not (elsewhere / "data").exists()  # nothing made: not the file, not its folder


@pytest.mark.parametrize("args", OPENERS, ids=lambda a: " ".join(a[:2]))
def test_a_database_url_to_nothing_is_refused(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    target = elsewhere / "db" / "tb.sqlite3"
    target.parent.mkdir()
    monkeypatch.setenv("THROWBOX_DATABASE_URL", f"sqlite:///{target}")
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2, refused.output
    assert f"no throwbox database at {target} (THROWBOX_DATABASE_URL)" in refused.stderr
    assert "point THROWBOX_DATABASE_URL at the service's database" in refused.stderr
    assert list(target.parent.iterdir()) == []
    if args[0] == "db":
        return  # `db current` answers "none" for a file with no schema: its question is the revision
    # A file that is there but holds no throwbox schema (not a service's database) is refused too.
    target.write_bytes(b"")
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2, refused.output
    assert f"the database at {target} (THROWBOX_DATABASE_URL) holds no throwbox schema" in refused.stderr


def test_db_upgrade_makes_one_then_commands_open_it(elsewhere: Path) -> None:
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    assert (elsewhere / "data" / "throwbox.sqlite3").is_file()
    fresh = runner.invoke(app, ["audit", "verify"])
    assert fresh.exit_code == 0, fresh.output
    assert fresh.stdout.startswith("audit chain empty: 0 entries, and nothing served from ")
    made = runner.invoke(app, ["keys", "create", "--role", "admin", "--name", "ops"])
    assert made.exit_code == 0, made.output
    listed = runner.invoke(app, ["keys", "list"])
    assert listed.exit_code == 0 and "\tadmin\tactive\tops" in listed.stdout
    assert runner.invoke(app, ["audit", "verify"]).stdout.strip() == "audit chain OK: 1 entries"


def test_audit_verify_fails_on_an_emptied_chain_of_a_served_database(elsewhere: Path) -> None:
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    for role in ("admin", "dealer"):
        assert runner.invoke(app, ["keys", "create", "--role", role]).exit_code == 0
    # The whole trail removed (its append-only trigger dropped first), its head put back to the start: a
    # chain that verifies, of nothing.
    with sqlite3.connect(elsewhere / "data" / "throwbox.sqlite3") as connection:
        connection.execute("DROP TRIGGER audit_log_no_delete")
        connection.execute("DELETE FROM audit_log")
        connection.execute("UPDATE audit_head SET seq = 0, hash = ?", ("0" * 64,))
    emptied = runner.invoke(app, ["audit", "verify"])
    assert emptied.exit_code == 1, emptied.output
    assert "audit chain EMPTY in a database that was served (2 keys, at " in emptied.stderr
    assert "the trail was removed" in emptied.stderr
    assert "OK" not in emptied.output
