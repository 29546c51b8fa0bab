"""Events: the SSE stream (ids, Last-Event-ID resume, live follow) and webhooks (HMAC signature, retries,
the same event id on every attempt), over real HTTP."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from tests.api.conftest import Service, ServiceFactory
from tests.api.hook_server import HookServer

FIRST = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The events of a text/event-stream body: id, event and JSON data of each."""
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if fields:
            events.append(
                {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}
            )
    return events


def play_round(svc: Service, table: str = "E1") -> None:
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": table, "game": "hrd10"})
    rid = svc.ok("POST", f"/v1/tables/{table}/rounds", "dealer", 201)["id"]
    wagers = [{"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"}]
    svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    body = {
        "roll_id": f"{table}-bad",
        "source": "reader",
        "verdict": "invalid",
        "faces": [],
        "reasons": ["off"],
    }
    svc.ok("POST", f"/v1/tables/{table}/rolls", "reader", 201, json=body)
    body = {"roll_id": f"{table}-ok", "source": "reader", "verdict": "valid", "faces": FIRST}
    svc.ok("POST", f"/v1/tables/{table}/rolls", "reader", 201, json=body)


def test_sse_ids_types_and_resume(service: Service) -> None:
    svc = service
    play_round(svc)
    response = svc.call("GET", "/v1/events?follow=false", "surveillance")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    assert [e["event"] for e in events] == [
        "round_opened",
        "wager_placed",
        "no_more_bets",
        "invalid_roll",
        "roll",
        "settlement",
    ]
    ids = [e["id"] for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(e["data"]["id"] == e["id"] for e in events)
    settlement = events[-1]["data"]["data"]
    assert settlement["final"] is True and settlement["decisions"][0]["result"] == "win"
    # Resume after the third event: exactly the rest, by Last-Event-ID or ?after=.
    resumed = svc.call("GET", "/v1/events?follow=false", "dealer", headers={"Last-Event-ID": str(ids[2])})
    assert [e["id"] for e in parse_sse(resumed.text)] == ids[3:]
    after = svc.call("GET", f"/v1/events?follow=false&after={ids[2]}&types=roll,settlement", "admin")
    assert [e["event"] for e in parse_sse(after.text)] == ["roll", "settlement"]
    assert svc.call("GET", "/v1/events?follow=false&types=nonsense", "admin").status_code == 400


def test_sse_follow_delivers_new_events(service: Service) -> None:
    svc = service
    seen: list[dict[str, Any]] = []
    ready = threading.Event()

    def listen() -> None:
        with (
            httpx.Client(timeout=20) as client,
            client.stream(
                "GET", svc.base_url + "/v1/events?types=roll", headers=svc.headers("surveillance")
            ) as stream,
        ):
            ready.set()
            buffer = ""
            for chunk in stream.iter_text():
                buffer += chunk
                if "\n\n" in buffer:
                    seen.extend(parse_sse(buffer))
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert ready.wait(10)
    play_round(svc, "E2")
    listener.join(timeout=15)
    assert [(e["event"], e["data"]["data"]["roll_id"]) for e in seen] == [("roll", "E2-ok")]


def test_sse_last_sends_the_recent_past_then_only_new_events(service: Service) -> None:
    svc = service
    play_round(svc, "E1")
    play_round(svc, "E2")
    everything = parse_sse(svc.call("GET", "/v1/events?follow=false", "surveillance").text)
    ids = [e["id"] for e in everything]
    e1 = [e["id"] for e in everything if e["data"]["table_id"] == "E1"]
    assert len(e1) == 6 and len(ids) == 12
    # The newest 3 of the table, oldest first; the head is the newest event of any table.
    recent = svc.call("GET", "/v1/events?follow=false&last=3&table_id=E1", "dealer")
    assert recent.status_code == 200
    assert [e["id"] for e in parse_sse(recent.text)] == e1[-3:]
    assert int(recent.headers["X-Throwbox-Head-Id"]) == max(ids)
    # last=0: nothing of the past; with types, only matching ones; above `after` only.
    assert parse_sse(svc.call("GET", "/v1/events?follow=false&last=0", "admin").text) == []
    rolls = parse_sse(svc.call("GET", "/v1/events?follow=false&last=5&types=roll", "admin").text)
    assert [e["data"]["data"]["roll_id"] for e in rolls] == ["E1-ok", "E2-ok"]
    above = parse_sse(svc.call("GET", f"/v1/events?follow=false&last=50&after={ids[9]}", "admin").text)
    assert [e["id"] for e in above] == ids[10:]
    # Without `last`, the stream still sends everything, and says where the past ends.
    whole = svc.call("GET", "/v1/events?follow=false&table_id=E2", "surveillance")
    assert len(parse_sse(whole.text)) == 6 and whole.headers["X-Throwbox-Head-Id"] == str(max(ids))
    for bad in ("-1", "1001", "x"):
        assert svc.call("GET", f"/v1/events?follow=false&last={bad}", "admin").status_code == 422


def test_sse_last_zero_follows_from_now(service: Service) -> None:
    svc = service
    play_round(svc, "E1")
    seen: list[dict[str, Any]] = []
    head: list[int] = []
    ready = threading.Event()

    def listen() -> None:
        with (
            httpx.Client(timeout=20) as client,
            client.stream(
                "GET", svc.base_url + "/v1/events?last=0&table_id=E1", headers=svc.headers("surveillance")
            ) as stream,
        ):
            head.append(int(stream.headers["X-Throwbox-Head-Id"]))
            ready.set()
            buffer = ""
            for chunk in stream.iter_text():
                buffer += chunk
                if buffer.count("\n\n") >= 2:
                    seen.extend(parse_sse(buffer)[:2])
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert ready.wait(10)
    # Another table's round first (filtered out), then a new round at E1: only E1's new events arrive.
    play_round(svc, "E2")
    opened = svc.ok("POST", "/v1/tables/E1/rounds", "dealer", 201)
    wagers = [{"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"}]
    svc.ok("POST", f"/v1/rounds/{opened['id']}/wagers", "dealer", 201, json={"wagers": wagers})
    listener.join(timeout=15)
    assert [e["event"] for e in seen] == ["round_opened", "wager_placed"]
    assert all(e["id"] > head[0] for e in seen) and seen[0]["data"]["data"]["round_id"] == opened["id"]


class Receiver:
    """A webhook endpoint that fails the first attempt of every event, then accepts."""

    def __init__(self) -> None:
        self.attempts: list[tuple[dict[str, str], bytes, int]] = []
        self.lock = threading.Lock()
        self.hook = HookServer(self.on_post)
        self.url = self.hook.url

    def on_post(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            event_id = headers["X-Throwbox-Event-Id"]
            first = all(h["X-Throwbox-Event-Id"] != event_id for h, _, _ in self.attempts)
            status = 503 if first else 204
            self.attempts.append((headers, body, status))
        return status

    @contextmanager
    def running(self) -> Iterator[Receiver]:
        with self.hook.serving():
            yield self


def test_webhooks_are_signed_retried_and_carry_event_ids(service_factory: ServiceFactory) -> None:
    secret = "whsec-test-only"
    receiver = Receiver()
    with (
        receiver.running(),
        service_factory(
            webhook_urls=[receiver.url], webhook_secret=SecretStr(secret), webhook_backoff_s=0.05
        ) as svc,
    ):
        play_round(svc)
        events = parse_sse(svc.call("GET", "/v1/events?follow=false", "admin").text)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with receiver.lock:
                delivered = {h["X-Throwbox-Event-Id"] for h, _, status in receiver.attempts if status == 204}
            if len(delivered) == len(events):
                break
            time.sleep(0.1)
    assert delivered == {str(e["id"]) for e in events}
    by_id: dict[str, list[tuple[dict[str, str], bytes, int]]] = {}
    for headers, body, status in receiver.attempts:
        by_id.setdefault(headers["X-Throwbox-Event-Id"], []).append((headers, body, status))
        expected = hmac.new(
            secret.encode(), headers["X-Throwbox-Timestamp"].encode() + b"." + body, hashlib.sha256
        ).hexdigest()
        assert headers["X-Throwbox-Signature"] == f"sha256={expected}"
        assert json.loads(body)["id"] == int(headers["X-Throwbox-Event-Id"])
    for attempts in by_id.values():
        # Failed once, retried, then delivered: the same event, the same body, the same id.
        assert [status for _, _, status in attempts] == [503, 204]
        assert attempts[0][1] == attempts[1][1]
    # A body changed in transit no longer matches its signature.
    headers, body, _ = receiver.attempts[0]
    forged = body.replace(b'"id"', b'"Id"')
    check = hmac.new(
        secret.encode(), headers["X-Throwbox-Timestamp"].encode() + b"." + forged, hashlib.sha256
    )
    assert headers["X-Throwbox-Signature"] != f"sha256={check.hexdigest()}"


def test_webhook_gives_up_after_max_attempts(tmp_path: Path) -> None:
    from api.db.models import WebhookDelivery
    from api.db.session import Database
    from api.events import WebhookDispatcher, publish

    database = Database(f"sqlite:///{tmp_path / 'w.sqlite3'}")
    database.migrate()
    calls: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request.headers["X-Throwbox-Event-Id"])
        return httpx.Response(500)

    try:
        with database.session() as session:
            event = publish(
                session, event_type="alert", table_id=None, data={}, webhook_urls=["http://hook/x"]
            )
            event_id = event.id
        dispatcher = WebhookDispatcher(
            database=database, secret=b"k", max_attempts=3, backoff_s=0.001, timeout_s=1
        )
        with httpx.Client(transport=httpx.MockTransport(refuse)) as client:
            for _ in range(6):
                dispatcher.deliver_due(client)
                time.sleep(0.01)
        with database.session() as session:
            (row,) = session.query(WebhookDelivery).all()
            assert (row.attempts, row.delivered_at is None, row.failed_at is not None) == (3, True, True)
            assert row.last_error == "HTTP 500"
        assert calls == [str(event_id)] * 3  # three attempts, then it stops
    finally:
        database.dispose()
