"""A client that drops the event stream costs the service no flood of log lines (issue 57: once 554 lines of
"socket.send() raised exception." followed a stream that timed out). On a real uvicorn server, a client
resets its connection while the stream replays a long backlog, three times; the next client still gets
every event."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.db.session import Database
from api.events import publish
from tests.api.conftest import Service, running_service

BACKLOG = 1500  # events: three of the stream's batches


class Records(logging.Handler):
    """Every log record at WARNING or above, from any logger and thread."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def _drop_after_first_bytes(svc: Service) -> int:
    """Open the stream from the start, read its first bytes, then reset the connection (as a client
    that times out and closes with data unread does); the bytes it got."""
    host, port = svc.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        key = svc.keys["surveillance"]
        request = f"GET /v1/events?follow=false HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n\r\n"
        sock.sendall(request.encode())
        got = len(sock.recv(65536))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close: RST
    return got


def test_a_dropped_event_stream_floods_no_log(tmp_path: Path, records: Records) -> None:
    with running_service("sqlite", tmp_path / "data") as svc:
        database = Database(svc.settings.resolved_database_url)
        try:
            with database.session() as session:
                for n in range(BACKLOG):
                    data = {"n": n, "pad": "x" * 300}
                    publish(session, event_type="alert", table_id="T1", data=data, webhook_urls=[])
        finally:
            database.dispose()
        for _ in range(3):
            assert _drop_after_first_bytes(svc) > 0
            time.sleep(0.3)
        # The service serves the next client whole.
        whole = svc.client.get(
            svc.base_url + "/v1/events",
            params={"follow": "false", "types": "alert"},
            headers=svc.headers("surveillance"),
        )
        assert whole.status_code == 200
        assert whole.text.count("event: alert\n") == BACKLOG
    flood = [m for m in records.messages if "socket.send() raised exception" in m]
    assert flood == []
    assert len(records.messages) <= 3, records.messages[:5]  # at most a line per dropped stream
