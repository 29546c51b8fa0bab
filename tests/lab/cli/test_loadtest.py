"""`throwbox lab loadtest --replicas N`: the same load against one replica and then N, in one run, on one
PostgreSQL database (run tiny here; PostgreSQL only, skipped without THROWBOX_TEST_POSTGRES_URL)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lab.cli.loadtest_replicas import cpu_note, has_command
from tests.api.conftest import database_url

ROOT = Path(__file__).resolve().parents[3]


def test_the_cpu_note_says_when_the_cores_are_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    note = cpu_note(2, 4)
    assert note is not None and "2 cores" in note and "2 replicas, 4 workers" in note
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert cpu_note(2, 4) is None  # 2 replicas, 4 workers, PostgreSQL and the client: a core each


def test_has_command_walks_the_cli() -> None:
    assert has_command("serve") and has_command("keys", "create")
    assert not has_command("keys", "nope") and not has_command("nope") and not has_command("serve", "x")


def test_one_replica_then_two_in_one_run(tmp_path: Path) -> None:
    with database_url("postgres", tmp_path) as url:
        assert url is not None
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-c", "from api.cli import main; main()", "lab", "loadtest"]
        argv += ["--replicas", "2", "--tables", "2", "--rounds", "1", "--read-clients", "1"]
        argv += ["--read-seconds", "0.5", "--database-url", url, "--json"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    shutil.rmtree(report["logs"])  # the replicas' logs, kept by the command for a person to read
    assert [c["replicas"] for c in report["configurations"]] == [1, 2]
    for config in report["configurations"]:
        rounds = config["rounds"]
        assert rounds["errors"] == 0
        assert rounds["kinds"]["open_round"]["n"] == 2  # two tables, one round each
        assert rounds["kinds"]["roll"]["n"] >= 2
        assert 0 < rounds["kinds"]["roll"]["p50_ms"] <= rounds["kinds"]["roll"]["p99_ms"]
        reads = config["reads"]
        assert reads["errors"] == 0 and reads["reads"] >= 1 and reads["reads_per_s"] > 0
    assert report["workers"] == 0


@pytest.mark.skipif(
    not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="Debian's PostgreSQL is not installed"
)
def test_the_throwaway_cluster_answers_and_is_removed() -> None:
    from sqlalchemy import create_engine, text

    from lab.cli.loadtest_replicas import throwaway_postgres

    with throwaway_postgres() as url:
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                assert connection.execute(text("SHOW max_connections")).scalar() == "300"
        finally:
            engine.dispose()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as sock:  # stopped: nothing listens on its port any more
        assert sock.connect_ex(("127.0.0.1", port)) != 0
