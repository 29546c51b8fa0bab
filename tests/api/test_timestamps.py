"""Every stored moment is timezone-aware UTC when it comes back, on SQLite and PostgreSQL alike, and the
API answers the same moment the same way the first time and every later time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy.exc import StatementError

from api.db.models import Alert
from api.db.session import Database
from tests.api.conftest import Service

KOLKATA = timezone(timedelta(hours=5, minutes=30))


def _aware_utc(value: str) -> datetime:
    """Parse an answer's timestamp; it must carry a zone, and that zone must be UTC."""
    moment = datetime.fromisoformat(value)
    assert moment.tzinfo is not None, value
    assert moment.utcoffset() == timedelta(0), value
    return moment


def test_stored_moments_come_back_aware_utc(service: Service) -> None:
    database = Database(service.settings.resolved_database_url)
    given = datetime(2026, 12, 6, 21, 18, 56, 695262, tzinfo=KOLKATA)  # 15:48:56.695262 UTC
    try:
        with database.session() as session:
            row = Alert(kind="review", message="m", raised_by="t", created_at=given, acknowledged_at=None)
            session.add(row)
            session.flush()
            alert_id = row.id
        with database.read_session() as session:
            back = session.get(Alert, alert_id)
            assert back is not None
            assert back.created_at == given
            assert back.created_at.tzinfo is UTC
            assert back.created_at.replace(tzinfo=None) == datetime(2026, 12, 6, 15, 48, 56, 695262)
            assert back.acknowledged_at is None
        # A naive moment names no instant: refused before it reaches the database.
        with pytest.raises(StatementError, match="naive datetime"), database.session() as session:
            session.add(Alert(kind="review", message="m", raised_by="t", created_at=datetime(2026, 1, 1)))
            session.flush()
    finally:
        database.dispose()


def _timestamps(document: Any) -> dict[str, str]:
    """Every `*_at` field of a JSON document (nested, by dotted path) that holds a value."""
    found: dict[str, str] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{path}.{key}" if path else key
                if key.endswith("_at") and isinstance(value, str):
                    found[here] = value
                else:
                    walk(value, here)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    walk(document, "")
    return found


def test_answers_carry_utc_the_first_time_and_every_time_after(service: Service) -> None:
    svc = service
    created = {
        "table": svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "TZ", "game": "hrd6"}),
        "round": svc.ok("POST", "/v1/tables/TZ/rounds", "dealer", 201),
        "alert": svc.ok("POST", "/v1/alerts", "surveillance", 201, json={"message": "look"}),
        "key": svc.ok("POST", "/v1/keys", "admin", 201, json={"role": "reader", "name": "cam"}),
    }
    svc.ok("POST", f"/v1/alerts/{created['alert']['id']}/acknowledge", "admin")
    svc.ok("POST", f"/v1/rounds/{created['round']['id']}/no-more-bets", "dealer")
    roll = {"roll_id": "tz-1", "source": "dealer", "verdict": "valid", "faces": [1, 2, 3, 4, 5, 6]}
    created["roll"] = svc.ok("POST", "/v1/tables/TZ/rolls", "dealer", 201, json=roll)
    read_back = {
        "table": svc.ok("GET", "/v1/tables/TZ", "reader"),
        "round": svc.ok("GET", f"/v1/rounds/{created['round']['id']}", "surveillance"),
        "alert": svc.ok("GET", "/v1/alerts", "admin")[0],
        "key": next(k for k in svc.ok("GET", "/v1/keys", "admin") if k["id"] == created["key"]["id"]),
        "roll": svc.ok("GET", "/v1/rolls/tz-1", "dealer"),
    }
    for name, document in read_back.items():
        stamps = _timestamps(document)
        assert stamps, name
        for value in stamps.values():
            _aware_utc(value)
        # The moment first answered is answered again, written the same way.
        for field, value in _timestamps(created[name]).items():
            assert stamps[field] == value, (name, field)
    # Settled by the roll: the round's settled and closed moments, read back, are UTC too.
    assert {"settled_at", "closed_at", "opened_at"} <= set(_timestamps(read_back["round"]))
    assert _timestamps(read_back["alert"])["acknowledged_at"]
    # The event stream says when each event happened, in UTC as well.
    stream = svc.call("GET", "/v1/events?follow=false", "surveillance")
    stamps = [line for line in stream.text.splitlines() if line.startswith("data:")]
    assert stamps
    for line in stamps:
        _aware_utc(json.loads(line[len("data:") :])["created_at"])
