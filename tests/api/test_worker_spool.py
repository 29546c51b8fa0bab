"""The table worker's spool and outbox (api/worker/spool.py, outbox.py) without a service: an httpx mock
stands for it.
Ordered replay after an outage, requests queued behind the spool while it drains, dead letters for refusals,
and the spool surviving a restart (a second process on the same spool refused)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.worker import (
    EPOCH_HEADER,
    FailoverTransport,
    Outbox,
    Outgoing,
    Spool,
    SpoolBusyError,
    Worker,
    alert_request,
)


class FakeService:
    """A mock service: down (connection refused) or up; records what it took, in order."""

    def __init__(self) -> None:
        self.up = False
        self.taken: list[tuple[str, str, dict[str, Any]]] = []
        self.rolls: dict[str, dict[str, Any]] = {}
        self.current_epoch = 1
        self.lock = threading.Lock()

    def handle(self, request: httpx.Request) -> httpx.Response:
        if not self.up:
            raise httpx.ConnectError("refused", request=request)
        body = json.loads(request.content) if request.content else {}
        with self.lock:
            if request.url.path.endswith("/rolls"):
                if int(request.headers[EPOCH_HEADER]) < self.current_epoch:
                    return httpx.Response(409, json={"detail": "lease_superseded: another worker holds it"})
                if body["faces"] == [0]:
                    return httpx.Response(409, json={"detail": "no open round"})
                duplicate = body["roll_id"] in self.rolls
                self.rolls.setdefault(body["roll_id"], body)
                self.taken.append((request.method, request.url.path, body))
                return httpx.Response(200 if duplicate else 201, json={"duplicate": duplicate, "phase": "x"})
            self.taken.append((request.method, request.url.path, body))
            return httpx.Response(201, json={})


def roll(n: int, *, epoch: int = 1, faces: list[int] | None = None) -> Outgoing:
    body = {"roll_id": f"r{n}", "source": "reader", "verdict": "valid", "faces": faces or [n % 6 + 1]}
    return Outgoing.json(
        "roll", "T1", "POST", "/v1/tables/T1/rolls", body, headers={EPOCH_HEADER: str(epoch)}, epoch=epoch
    )


def wait_for(check: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_spool_keeps_order_across_a_restart_and_serves_one_process(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s")
    for n in range(5):
        spool.push(roll(n))
    with pytest.raises(SpoolBusyError, match="another worker"):
        Spool(tmp_path / "s")
    first = spool.head()
    assert first is not None and first.seq is not None
    spool.remove(first.seq)
    spool.close()
    again = Spool(tmp_path / "s")
    order = []
    while (item := again.head()) is not None:
        assert item.seq is not None
        order.append(json.loads(item.body)["roll_id"])
        again.remove(item.seq)
    assert order == ["r1", "r2", "r3", "r4"]
    again.close()


def test_an_outage_is_spooled_and_replayed_in_order_and_later_requests_wait_behind_it(tmp_path: Path) -> None:
    fake = FakeService()
    spool = Spool(tmp_path / "s")
    outbox = Outbox(httpx.Client(transport=httpx.MockTransport(fake.handle), base_url="http://svc"), spool)
    outbox.retry_s = 0.05
    outbox.start()
    try:
        assert outbox.submit(roll(0)) is None  # down: spooled
        assert outbox.down
        for n in range(1, 6):
            assert outbox.submit(roll(n)) is None
        assert spool.depth() == 6 and fake.taken == []
        time.sleep(0.2)
        assert spool.depth() == 6  # still down: nothing lost, nothing skipped
        fake.up = True
        wait_for(lambda: spool.depth() == 0 and not outbox.down)
        assert [b["roll_id"] for _, _, b in fake.taken] == [f"r{n}" for n in range(6)]
        assert outbox.last_outage is not None and outbox.last_outage["spooled"] == 6
        # Up and empty: sent at once, answered.
        response = outbox.submit(roll(6))
        assert response is not None and response.status_code == 201
        # A replayed roll the service already had is a duplicate, not a second roll.
        fake.up = False
        assert outbox.submit(roll(6)) is None
        fake.up = True
        wait_for(lambda: spool.depth() == 0)
        assert outbox.last_roll["T1"]["duplicate"] is True and outbox.last_roll["T1"]["replayed"] is True
        assert len(fake.rolls) == 7
    finally:
        outbox.stop()
        spool.close()


def test_refused_replays_become_dead_letters_and_a_superseded_lease_is_reported(tmp_path: Path) -> None:
    fake = FakeService()
    spool = Spool(tmp_path / "s")
    superseded: list[tuple[str, int | None]] = []
    outbox = Outbox(
        httpx.Client(transport=httpx.MockTransport(fake.handle), base_url="http://svc"),
        spool,
        on_superseded=lambda table, epoch: superseded.append((table, epoch)),
    )
    outbox.retry_s = 0.05
    outbox.start()
    try:
        fake.current_epoch = 2  # another worker took the table at epoch 2 while this one was cut off
        outbox.submit(roll(1, epoch=2, faces=[0]))  # refused on replay: no open round
        outbox.submit(roll(2, epoch=1))  # made under the old lease: superseded
        outbox.submit(alert_request("T1", "camera_lost", "gone", {}))
        outbox.submit(roll(3, epoch=2))
        fake.up = True
        wait_for(lambda: spool.depth() == 0 and not outbox.down)
        dead, letters = spool.dead_letters()
        assert dead == 2
        assert [(d["roll_id"], d["status"], "lease_superseded" in d["detail"]) for d in letters] == [
            ("r2", 409, True),
            ("r1", 409, False),
        ]
        assert superseded == [("T1", 1)]
        # The rest went on, in order; the refused roll (not the superseded one) raised roll_not_posted last.
        taken = [(path, body.get("roll_id") or body.get("kind")) for _, path, body in fake.taken]
        assert taken == [
            ("/v1/alerts", "camera_lost"),
            ("/v1/tables/T1/rolls", "r3"),
            ("/v1/alerts", "roll_not_posted"),
        ]
        assert fake.taken[-1][2]["data"] == {"roll_id": "r1"}
    finally:
        outbox.stop()
        spool.close()


def test_failover_moves_to_the_next_replica_that_accepts_the_connection() -> None:
    import socket

    from tests.conftest import free_port

    dead = free_port()  # nobody listens there
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        alive = listener.getsockname()[1]
        got: list[bytes] = []

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                got.append(conn.recv(65536))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        transport = FailoverTransport([f"http://127.0.0.1:{dead}", f"http://127.0.0.1:{alive}"])
        with httpx.Client(transport=transport, base_url=f"http://127.0.0.1:{dead}") as client:
            response = client.get("/healthz")
        thread.join(5)
    assert response.text == "ok"
    assert transport.current == f"http://127.0.0.1:{alive}"
    assert f"Host: 127.0.0.1:{alive}".encode() in got[0]
    with pytest.raises(ValueError, match="same path"):
        FailoverTransport(["http://a:1/x", "http://b:1/y"])


def test_each_table_replays_in_its_own_lane_and_one_stuck_table_holds_up_no_other(tmp_path: Path) -> None:
    fake = FakeService()
    refused_for = {"T1"}  # the service does not answer T1's requests (say, a lock held on its lease row)

    def handle(request: httpx.Request) -> httpx.Response:
        if fake.up and any(f"/tables/{t}/" in request.url.path for t in refused_for):
            raise httpx.ReadTimeout("no answer", request=request)
        return fake.handle(request)

    def table_roll(table: str, n: int) -> Outgoing:
        body = {"roll_id": f"{table}-{n}", "source": "reader", "verdict": "valid", "faces": [1]}
        path = f"/v1/tables/{table}/rolls"
        return Outgoing.json("roll", table, "POST", path, body, headers={EPOCH_HEADER: "1"}, epoch=1)

    spool = Spool(tmp_path / "s")
    outbox = Outbox(httpx.Client(transport=httpx.MockTransport(handle), base_url="http://svc"), spool)
    outbox.retry_s = 0.05
    outbox.start()
    try:
        for n in range(3):
            for table in ("T1", "T2"):
                assert outbox.submit(table_roll(table, n)) is None  # down: spooled
        fake.up = True
        # T2's lane has replayed its spool and ended its outage (the spool empties a moment before the lane
        # says so: waiting on the depth alone let T2-3 below be spooled behind a finished outage).
        wait_for(lambda: outbox.last_outage is not None and outbox.last_outage["table_id"] == "T2")
        assert spool.depth("T2") == 0
        assert [b["roll_id"] for _, _, b in fake.taken] == ["T2-0", "T2-1", "T2-2"]
        assert spool.depth("T1") == 3 and outbox.down
        # T2 is answered again: its next request goes at once; T1's still queue behind its spool.
        response = outbox.submit(table_roll("T2", 3))
        assert response is not None and response.status_code == 201
        assert outbox.submit(table_roll("T1", 3)) is None
        refused_for.clear()
        wait_for(lambda: spool.depth() == 0 and not outbox.down)
        assert [b["roll_id"] for _, _, b in fake.taken if b["roll_id"].startswith("T1")] == [
            f"T1-{n}" for n in range(4)
        ]
    finally:
        outbox.stop()
        spool.close()


def test_a_refused_renewal_stops_the_tables_loop_at_once_and_the_table_is_taken_back_when_free(
    tmp_path: Path,
) -> None:
    """A `Worker` in-process against a real service (lease TTL 1 s): while it holds table L1, the admin
    releases its lease and another worker takes it; the worker's next renewal is refused (409), and the
    table's loop is stopped at once; when the other worker lets it go, this one takes it back."""
    from tests.api.conftest import running_service

    class NoReader:  # the loop may see a throw before the test ends: a failed read is an alert, no more
        def read(self, frame: Any, **kw: Any) -> Any:
            raise RuntimeError("no reader in this test")

    with running_service("sqlite", tmp_path / "data", external_workers=True, lease_ttl_s=1.0) as svc:
        svc.ok(
            "POST",
            "/v1/tables",
            "admin",
            201,
            json={"id": "L1", "game": "hrd10", "camera_source": "<demo clips>"},
        )
        worker = Worker(
            services=[svc.base_url],
            key=svc.keys["worker"],
            tables=["L1"],
            worker_id="w1",
            spool_dir=tmp_path / "spool",
            reader=NoReader(),
        )
        runner = worker.runners["L1"]
        worker.start()
        try:
            wait_for(lambda: runner.lease.held and runner._loop_alive())
            loop = runner.loop
            assert loop is not None and worker.health()["tables"]["L1"]["state"] == "leased"
            assert svc.call("DELETE", "/v1/tables/L1/lease?worker_id=w1", "admin").status_code == 204
            taken = svc.ok("POST", "/v1/tables/L1/lease", "worker", json={"worker_id": "w2"})
            refused_by = time.monotonic() + 1.0 / 3.0 + 2.0  # the next renewal, and some slack
            wait_for(lambda: runner.lease.state == "lost", timeout_s=5)
            wait_for(lambda: not loop._thread or not loop._thread.is_alive(), timeout_s=5)
            assert time.monotonic() < refused_by
            state = worker.health()["tables"]["L1"]
            assert state["state"] == "lost" and state["running"] is False and taken["epoch"] > 1
            assert svc.call("DELETE", "/v1/tables/L1/lease?worker_id=w2", "worker").status_code == 204
            wait_for(lambda: runner.lease.held and runner._loop_alive(), timeout_s=5)
            assert runner.loop is not loop and runner.lease.epoch is not None and runner.lease.epoch > 1
        finally:
            worker.stop(drain_s=0)
        assert runner.lease.state == "released"
        assert svc.ok("POST", "/v1/tables/L1/lease", "worker", json={"worker_id": "w3"})["worker_id"] == "w3"
