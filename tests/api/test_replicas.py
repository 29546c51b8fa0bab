"""Replicas on one PostgreSQL (issue 50): two `throwbox serve` processes on one database behave as one
service. Migrated once by `throwbox db upgrade` (two at once run it once), started with
THROWBOX_MIGRATE_ON_START=false (which refuses an unmigrated database), they take rolls and rounds at
the same time; an SSE client of one replica sees every event of both once, in id order, woken by
NOTIFY well before its poll; a webhook receiver gets every event once although both replicas dispatch;
the audit chain verifies. Plus the listener's reconnect, the webhook claim, and `db upgrade`/`db
current` on SQLite."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, select, text, update
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from api.cli import app
from api.db.session import Database
from tests.api.conftest import database_url
from tests.api.hook_server import HookServer
from tests.api.test_kill9 import EXTRA, FIRST, cli, run_cli
from tests.conftest import free_port

TABLES = ("R1", "R2", "R3", "R4")
ROUNDS_PER_TABLE = 2
LATENCY_SAMPLES = 8
HEAD = Database("sqlite://").head_revision()  # the newest migration (0003 when this test was written)
NOTIFY_POLL_S = 5.0  # the streams' fallback poll in this test: a wake by poll alone would take seconds


class Hook:
    """A webhook receiver: counts every POST by event id (slow enough to widen any double-send race)."""

    def __init__(self) -> None:
        self.received: Counter[int] = Counter()
        self.lock = threading.Lock()
        self.hook = HookServer(self.on_post)
        self.url = self.hook.url

    def on_post(self, headers: dict[str, str], body: bytes) -> int:
        time.sleep(0.01)
        with self.lock:
            self.received[int(headers["X-Throwbox-Event-Id"])] += 1
        return 204

    @contextmanager
    def running(self) -> Iterator[Hook]:
        with self.hook.serving():
            yield self


class Stream:
    """An SSE client in a thread: every event id it gets, and when it got it."""

    def __init__(self, base_url: str, key: str) -> None:
        self.got: list[tuple[int, float]] = []
        self.changed = threading.Condition()
        self._url = f"{base_url}/v1/events?after=0"
        self._headers = {"Authorization": f"Bearer {key}"}
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(10, read=None)) as client,
                client.stream("GET", self._url, headers=self._headers) as response,
            ):
                for line in response.iter_lines():
                    if line.startswith("id: "):
                        with self.changed:
                            self.got.append((int(line[4:]), time.monotonic()))
                            self.changed.notify_all()
        except httpx.HTTPError:
            pass  # the replica was stopped
        except Exception as exc:  # reported by the test
            self.error = exc

    def wait_for(self, predicate: Any, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self.got), timeout)


@contextmanager
def replicas(envs: list[dict[str, str]], ports: list[int], logs: list[Path]) -> Iterator[None]:
    """Start every `throwbox serve` at once; wait for all their /healthz; kill them (SIGKILL) afterwards."""
    procs = []
    try:
        for env, port, log in zip(envs, ports, logs, strict=True):
            with log.open("ab") as out:
                procs.append(
                    subprocess.Popen(
                        cli("serve", "--port", str(port)), env=env, stdout=out, stderr=subprocess.STDOUT
                    )
                )
        deadline = time.monotonic() + 60
        for proc, port, log in zip(procs, ports, logs, strict=True):
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"throwbox serve did not start:\n{log.read_text()}")
                time.sleep(0.1)
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()  # a graceful stop would wait for the open event stream
        for proc in procs:
            proc.wait(timeout=30)


def base_env(url: str, data_dir: Path) -> dict[str, str]:
    env = {**os.environ, "THROWBOX_DATA_DIR": str(data_dir), "THROWBOX_DATABASE_URL": url}
    env["THROWBOX_MIGRATE_ON_START"] = "false"
    return env


def play_table(table: str, bases: list[str], keys: dict[str, str], errors: list[str]) -> None:
    """Rounds on one table, each request to the other replica than the one before."""
    dealer = {"Authorization": f"Bearer {keys['dealer']}"}
    reader = {"Authorization": f"Bearer {keys['reader']}"}
    turn = 0

    def post(path: str, headers: dict[str, str], expect: int, **kwargs: Any) -> Any:
        nonlocal turn
        base = bases[turn % len(bases)]
        turn += 1
        response = httpx.post(base + path, headers=headers, timeout=30, **kwargs)
        if response.status_code != expect:
            errors.append(f"{path}: {response.status_code} {response.text}")
        return response.json()

    for number in range(ROUNDS_PER_TABLE):
        rid = post(f"/v1/tables/{table}/rounds", dealer, 201)["id"]
        wagers = [
            {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
            {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
            {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
        ]
        post(f"/v1/rounds/{rid}/wagers", dealer, 201, json={"wagers": wagers})
        post(f"/v1/rounds/{rid}/no-more-bets", dealer, 200)
        for step, faces in enumerate((FIRST, EXTRA)):
            body = {
                "roll_id": f"{table}-{number}-{step}",
                "source": "reader",
                "verdict": "valid",
                "faces": faces,
            }
            post(f"/v1/tables/{table}/rolls", reader, 201, json=body)


def test_two_replicas_on_one_postgres_behave_as_one_service(tmp_path: Path) -> None:
    hook = Hook()
    with database_url("postgres", tmp_path / "data") as url, hook.running():
        assert url is not None
        upgraded = run_cli(base_env(url, tmp_path / "a"), "db", "upgrade")
        assert upgraded.returncode == 0, upgraded.stderr
        assert upgraded.stdout.startswith("schema upgraded from none to ")
        runner = CliRunner()
        envs = []
        for name in ("a", "b"):
            env = base_env(url, tmp_path / name)
            env["THROWBOX_WEBHOOK_URLS"] = json.dumps([hook.url])
            env["THROWBOX_WEBHOOK_SECRET"] = "whsec-test-only"
            env["THROWBOX_SSE_NOTIFY_POLL_S"] = str(NOTIFY_POLL_S)
            envs.append(env)
        keys = {}
        for role in ("admin", "dealer", "reader"):
            made = runner.invoke(app, ["keys", "create", "--role", role], env=envs[0])  # in-process: faster
            assert made.exit_code == 0, made.output
            keys[role] = made.stdout.strip().splitlines()[-1]
        ports = [free_port(), free_port()]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        logs = [tmp_path / "a.log", tmp_path / "b.log"]
        admin = {"Authorization": f"Bearer {keys['admin']}"}
        with ExitStack() as stack:
            stack.enter_context(replicas(envs, ports, logs))
            for log in logs:  # migrate_on_start=false: neither replica wrote a first admin key
                assert "first admin key written" not in log.read_text()
            stream = Stream(bases[0], keys["admin"])
            stream.start()
            for index, table in enumerate(TABLES):
                created = httpx.post(
                    bases[index % 2] + "/v1/tables", json={"id": table, "game": "hrd10"}, headers=admin
                )
                assert created.status_code == 201, created.text

            # Rolls and rounds on every table at once, each request to the other replica.
            errors: list[str] = []
            threads = [
                threading.Thread(target=play_table, args=(table, bases[::step], keys, errors))
                for table, step in zip(TABLES, (1, -1, 1, -1), strict=True)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert errors == []

            # Wake-up latency: a round opened on replica B, until A's stream has its event.
            dealer = {"Authorization": f"Bearer {keys['dealer']}"}
            latencies, requests = [], []
            for sample in range(LATENCY_SAMPLES):
                table = f"L{sample}"
                made = httpx.post(bases[1] + "/v1/tables", json={"id": table, "game": "hrd10"}, headers=admin)
                assert made.status_code == 201
                sent = time.monotonic()  # an upper bound: the request's own time is in it
                opened = httpx.post(f"{bases[1]}/v1/tables/{table}/rounds", headers=dealer)
                assert opened.status_code == 201
                requests.append(time.monotonic() - sent)
                event_id = newest_event_id(url)
                assert stream.wait_for(lambda got, e=event_id: any(i == e for i, _ in got), 15)
                arrived = next(t for i, t in stream.got if i == event_id)
                latencies.append(arrived - sent)

            wanted = all_event_ids(url)
            assert stream.wait_for(lambda got: len(got) >= len(wanted), 20)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and set(hook.received) != set(wanted):
                time.sleep(0.1)
            time.sleep(1.0)  # room for a second delivery of anything, were there one
            assert stream.error is None
            received = [event_id for event_id, _ in stream.got]

        # Every event of both replicas, once each, in id order, on replica A's stream.
        assert received == wanted
        assert len(wanted) >= len(TABLES) * ROUNDS_PER_TABLE * 4 + LATENCY_SAMPLES
        # Each event reached the webhook once, though both replicas ran a dispatcher.
        assert dict(hook.received) == dict.fromkeys(wanted, 1)
        assert delivery_attempts(url) == {1}
        median = statistics.median(latencies)
        print(
            "\nNOTIFY wake-up, a round opened on replica B (request sent) to replica A's stream: "
            f"median {median * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms over {len(latencies)} events; fallback poll "
            f"{NOTIFY_POLL_S:.0f} s; the request itself (until its answer): median "
            f"{statistics.median(requests) * 1000:.0f} ms; from the answer to the stream: median "
            f"{statistics.median(a - r for a, r in zip(latencies, requests, strict=True)) * 1000:.0f} ms"
        )
        assert median < 1.0, latencies  # a poll alone would take NOTIFY_POLL_S / 2 on average
        verified = run_cli(envs[0], "audit", "verify")
        assert verified.returncode == 0, verified.stderr
        assert verified.stdout.startswith("audit chain OK: ")


def _scalars(url: str, query: str) -> list[Any]:
    engine = create_engine(make_url(url))
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(query)).scalars())
    finally:
        engine.dispose()


def all_event_ids(url: str) -> list[int]:
    return [int(v) for v in _scalars(url, "SELECT id FROM events ORDER BY id")]


def newest_event_id(url: str) -> int:
    return int(_scalars(url, "SELECT max(id) FROM events")[0])


def delivery_attempts(url: str) -> set[int]:
    rows = _scalars(url, "SELECT attempts FROM webhook_deliveries WHERE delivered_at IS NOT NULL")
    assert len(rows) == len(_scalars(url, "SELECT id FROM webhook_deliveries"))
    return {int(v) for v in rows}


def test_migrations_run_once_and_an_unmigrated_database_is_refused(tmp_path: Path) -> None:
    with database_url("postgres", tmp_path / "data") as url:
        assert url is not None
        env = base_env(url, tmp_path / "data")
        refused = subprocess.run(
            cli("serve", "--port", str(free_port())), env=env, capture_output=True, text=True, timeout=60
        )
        assert refused.returncode == 2
        assert refused.stderr.strip().count("\n") == 0  # one line
        assert f"not {HEAD}" in refused.stderr and "run `throwbox db upgrade` first" in refused.stderr
        runner = CliRunner()
        current = runner.invoke(app, ["db", "current"], env=env)
        assert (current.exit_code, current.stdout.strip()) == (
            1,
            f"none (not at head {HEAD}: run `throwbox db upgrade`)",
        )
        # Two upgrades at once: one migrates, the other waits on the advisory lock and finds it done.
        procs = [
            subprocess.Popen(
                cli("db", "upgrade"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outcomes = [(*proc.communicate(timeout=60), proc.returncode) for proc in procs]
        assert [rc for _, _, rc in outcomes] == [0, 0], outcomes
        assert sorted(out.strip() for out, _, _ in outcomes) == [
            f"schema already at head: {HEAD}",
            f"schema upgraded from none to {HEAD} (head)",
        ]
        current = runner.invoke(app, ["db", "current"], env=env)
        assert (current.exit_code, current.stdout.strip()) == (0, f"{HEAD} (head)")


def test_the_listener_wakes_on_commit_only_and_reconnects_after_a_drop(tmp_path: Path) -> None:
    import asyncio

    from api.event_wakeup import APPLICATION_NAME, EventWakeup
    from api.events import publish

    with database_url("postgres", tmp_path / "data") as url:
        assert url is not None
        database = Database(url)
        database.migrate()
        wakeup = EventWakeup(database, reconnect_s=0.1)
        wakeup.start()
        try:
            assert wakeup.wait_listening(10)

            def woken_by_publish(commit: bool) -> bool:
                generation = wakeup.generation
                with database.sessions() as session:
                    publish(session, event_type="alert", table_id=None, data={}, webhook_urls=[])
                    if commit:
                        session.commit()
                    else:
                        session.rollback()
                return asyncio.run(wakeup.wait(generation, 2.0))

            assert woken_by_publish(commit=False) is False  # a rolled-back event is never announced
            assert woken_by_publish(commit=True) is True
            heard = wakeup.notifications
            with database.engine.connect() as connection:
                dropped = connection.execute(
                    text(
                        # this test's own database only: other tests' listeners run beside it under xdist
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = :n AND datname = current_database()"
                    ),
                    {"n": APPLICATION_NAME},
                ).all()
                connection.commit()
            assert dropped == [(True,)]
            deadline = time.monotonic() + 10
            while wakeup.connections < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert wakeup.connections == 2 and wakeup.wait_listening(5)
            assert woken_by_publish(commit=True) is True
            assert wakeup.notifications == heard + 1
        finally:
            wakeup.stop()
            database.dispose()


def test_a_delivery_is_claimed_by_one_dispatcher_until_its_claim_expires(
    backend: str, tmp_path: Path
) -> None:
    from api.db.models import WebhookDelivery
    from api.events import WebhookDispatcher, publish

    with database_url(backend, tmp_path) as url:
        database = Database(url or f"sqlite:///{tmp_path / 'w.sqlite3'}")
        database.migrate()
        try:
            with database.session() as session:
                for _ in range(3):
                    publish(
                        session, event_type="alert", table_id=None, data={}, webhook_urls=["http://hook/x"]
                    )
            first, second = (
                WebhookDispatcher(database=database, secret=b"k", max_attempts=3, backoff_s=1, timeout_s=1)
                for _ in range(2)
            )
            assert len(first.claim_due()) == 3
            assert second.claim_due() == []  # claimed: the other dispatcher leaves them alone
            with database.session() as session:  # the first dispatcher died: its claim runs out
                session.execute(
                    update(WebhookDelivery).values(claimed_until=datetime.now(UTC) - timedelta(seconds=1))
                )
            assert len(second.claim_due()) == 3
            if backend == "postgres":
                # A row another transaction holds locked is skipped at once, not waited for.
                with database.session() as session:
                    session.execute(update(WebhookDelivery).values(claimed_until=None))
                holder = database.sessions()
                with holder.begin():
                    holder.scalars(
                        select(WebhookDelivery).order_by(WebhookDelivery.id).limit(1).with_for_update()
                    ).all()
                    started = time.monotonic()
                    assert len(second.claim_due()) == 2
                    assert time.monotonic() - started < 2
                holder.close()
        finally:
            database.dispose()


def test_db_upgrade_and_current_on_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THROWBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("THROWBOX_DATABASE_URL", raising=False)
    runner = CliRunner()
    before = runner.invoke(app, ["db", "current"])  # no database there: said, and none made
    assert before.exit_code == 2 and "no throwbox database at " in before.output
    assert not (tmp_path / "data").exists()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "throwbox.sqlite3").write_bytes(b"")  # a file, but no schema in it
    before = runner.invoke(app, ["db", "current"])
    assert (before.exit_code, before.output.strip()) == (
        1,
        f"none (not at head {HEAD}: run `throwbox db upgrade`)",
    )
    monkeypatch.setenv("THROWBOX_MIGRATE_ON_START", "false")
    refused = runner.invoke(app, ["audit", "verify"])  # commands that open the database check it too
    assert refused.exit_code == 2 and "holds no throwbox schema" in refused.output
    assert "`throwbox db upgrade` make a new one" in refused.output
    upgraded = runner.invoke(app, ["db", "upgrade"])
    assert (upgraded.exit_code, upgraded.output.strip()) == (0, f"schema upgraded from none to {HEAD} (head)")
    again = runner.invoke(app, ["db", "upgrade"])
    assert (again.exit_code, again.output.strip()) == (0, f"schema already at head: {HEAD}")
    after = runner.invoke(app, ["db", "current"])
    assert (after.exit_code, after.output.strip()) == (0, f"{HEAD} (head)")
    verified = runner.invoke(app, ["audit", "verify"]).output.strip()
    assert verified.startswith("audit chain empty: 0 entries, and nothing served from ")


def test_replicas_started_together_on_an_empty_database_make_one_first_admin_key(tmp_path: Path) -> None:
    """Each `throwbox serve` makes a first admin key on a database with none; replicas starting at once on
    one PostgreSQL database make exactly one (an advisory lock orders them), and one file holds it."""
    from api.auth import count_keys
    from api.cli.keys import ensure_first_admin_key
    from api.settings import Settings

    with database_url("postgres", tmp_path) as url:
        assert url is not None
        migrator = Database(url)
        migrator.migrate()
        migrator.dispose()
        settings = Settings(data_dir=tmp_path, database_url=url)
        replicas = [Database(url) for _ in range(4)]
        barrier = threading.Barrier(len(replicas))
        made: list[Path | None] = []

        def start(database: Database) -> None:
            barrier.wait()
            made.append(ensure_first_admin_key(settings=settings, database=database))

        try:
            threads = [threading.Thread(target=start, args=(db,)) for db in replicas]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            with replicas[0].session() as session:
                keys = count_keys(session)
        finally:
            for database in replicas:
                database.dispose()
        assert keys == 1
        assert sorted(str(p) for p in made if p is not None) == [str(settings.first_admin_key_path)]
        assert made.count(None) == len(replicas) - 1
