"""`throwbox serve` as a real process: the first admin key on a fresh data dir, `throwbox keys create`,
a kill -9 between two rolls that loses nothing acknowledged, `throwbox audit verify` after the restart,
and a tampered audit row that the check finds."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.api.conftest import database_url
from tests.conftest import free_port

FIRST = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]
EXTRA = [5, 5, 2, 3, 4, 6]
TABLES = ("K1", "K2", "K3")


def cli(*args: str) -> list[str]:
    """The `throwbox` console script of this venv (or the module, where it is not installed)."""
    script = Path(sys.executable).parent / "throwbox"
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "from api.cli import main; main()", *args]


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*args), env=env, capture_output=True, text=True, timeout=60, check=False)


@contextmanager
def serve(env: dict[str, str], port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start `throwbox serve`; wait for /healthz; kill it (SIGKILL) if the test left it running."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cli("serve", "--port", str(port)), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"throwbox serve did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_kill9_between_rolls_loses_nothing_and_audit_verifies(backend: str, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with database_url(backend, data_dir) as url:
        env = {**os.environ, "THROWBOX_DATA_DIR": str(data_dir)}
        env.pop("THROWBOX_DATABASE_URL", None)
        if url is not None:
            env["THROWBOX_DATABASE_URL"] = url
        check_kill9(env=env, data_dir=data_dir, tmp_path=tmp_path, url=url)


def check_kill9(*, env: dict[str, str], data_dir: Path, tmp_path: Path, url: str | None) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"

    with serve(env, port, log) as proc:
        first_key_file = data_dir / "first-admin.key"
        assert f"first admin key written to {first_key_file}" in log.read_text()
        assert first_key_file.stat().st_mode & 0o077 == 0  # readable by its owner only
        admin_key = first_key_file.read_text().strip()
        assert admin_key not in log.read_text()  # the key itself is never printed
        made = {role: run_cli(env, "keys", "create", "--role", role) for role in ("dealer", "reader")}
        for role, result in made.items():
            assert result.returncode == 0, result.stderr
            assert f"role {role}" in result.stdout
        dealer = {"Authorization": f"Bearer {made['dealer'].stdout.strip().splitlines()[-1]}"}
        reader = {"Authorization": f"Bearer {made['reader'].stdout.strip().splitlines()[-1]}"}
        admin = {"Authorization": f"Bearer {admin_key}"}
        with httpx.Client(base_url=base, timeout=30) as http:
            rounds = {}
            for table in TABLES:
                assert (
                    http.post("/v1/tables", json={"id": table, "game": "hrd10"}, headers=admin).status_code
                    == 201
                )
                rid = http.post(f"/v1/tables/{table}/rounds", headers=dealer).json()["id"]
                wagers = [
                    {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
                    {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
                    {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
                ]
                assert (
                    http.post(f"/v1/rounds/{rid}/wagers", json={"wagers": wagers}, headers=dealer).status_code
                    == 201
                )
                assert http.post(f"/v1/rounds/{rid}/no-more-bets", headers=dealer).status_code == 200
                rounds[table] = rid
            acknowledged = []
            for table in TABLES:
                body = {"roll_id": f"{table}-1", "source": "reader", "verdict": "valid", "faces": FIRST}
                response = http.post(f"/v1/tables/{table}/rolls", json=body, headers=reader)
                assert response.status_code == 201, response.text
                acknowledged.append((table, response.json()))
        proc.kill()  # SIGKILL: no shutdown, no flush beyond what was committed
        proc.wait(timeout=30)

    with serve(env, port, log), httpx.Client(base_url=base, timeout=30) as http:
        assert f"the first admin key is in {first_key_file}" in log.read_text()
        for table, ack in acknowledged:
            rid = rounds[table]
            stored = http.get(f"/v1/rounds/{rid}", headers=dealer).json()
            assert stored["phase"] == "awaiting_extra_roll"
            assert stored["summary"]["first_roll"]["faces"] == FIRST
            assert stored["summary"]["settlements"] == ack["round"]["settlements"]
            again = {"roll_id": f"{table}-1", "source": "reader", "verdict": "valid", "faces": FIRST}
            repeat = http.post(f"/v1/tables/{table}/rolls", json=again, headers=reader)
            assert repeat.status_code == 200 and repeat.json()["duplicate"] is True
            second = {"roll_id": f"{table}-2", "source": "reader", "verdict": "valid", "faces": EXTRA}
            done = http.post(f"/v1/tables/{table}/rolls", json=second, headers=reader)
            assert done.status_code == 201 and done.json()["settled"] is True

    verified = run_cli(env, "audit", "verify")
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("audit chain OK: ")

    # The database refuses changes to the audit trail; someone who drops the trigger is still caught.
    seq = tamper_sqlite(data_dir) if url is None else tamper_postgres(url)
    tampered = run_cli(env, "audit", "verify")
    assert tampered.returncode == 1
    assert f"BROKEN at entry {seq}" in tampered.stderr


def tamper_sqlite(data_dir: Path) -> int:
    """Try to change an audit row (refused), drop the trigger, change it; return its seq."""
    db = sqlite3.connect(data_dir / "throwbox.sqlite3")
    try:
        try:
            db.execute("UPDATE audit_log SET actor = 'nobody' WHERE seq = 5")
            raise AssertionError("the audit trail accepted an UPDATE")
        except sqlite3.DatabaseError as exc:
            assert "append-only" in str(exc)
        db.execute("DROP TRIGGER audit_log_no_update")
        (seq,) = db.execute("SELECT min(seq) FROM audit_log WHERE action = 'round.wagers'").fetchone()
        changed = db.execute(
            "UPDATE audit_log SET payload = replace(payload, '5.00', '50.00') WHERE seq = ?", (seq,)
        )
        assert changed.rowcount == 1
        db.commit()
    finally:
        db.close()
    return int(seq)


def tamper_postgres(url: str) -> int:
    """The same on PostgreSQL: refused by the trigger; disabled by someone who owns the table."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import DBAPIError

    engine = create_engine(url)
    try:
        with engine.connect() as db:
            try:
                db.execute(text("UPDATE audit_log SET actor = 'nobody' WHERE seq = 5"))
                raise AssertionError("the audit trail accepted an UPDATE")
            except DBAPIError as exc:
                assert "append-only" in str(exc)
            db.rollback()
            db.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_change"))
            seq = db.execute(
                text("SELECT min(seq) FROM audit_log WHERE action = 'round.wagers'")
            ).scalar_one()
            changed = db.execute(
                text("UPDATE audit_log SET payload = replace(payload, '5.00', '50.00') WHERE seq = :seq"),
                {"seq": seq},
            )
            assert changed.rowcount == 1
            db.commit()
    finally:
        engine.dispose()
    return int(seq)
