"""Who a roll is from is the server's to say (issue 57, item 3): a roll's `source` follows the key's role
(reader and worker keys: the camera, `reader`; dealer keys: `dealer`), never the body; a body that claims
another source is refused (403) with the reason, and nothing is applied."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import Service

FIRST = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]


def _ready_round(svc: Service, table: str) -> int:
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": table, "game": "hrd10"})
    round_id: int = svc.ok("POST", f"/v1/tables/{table}/rounds", "dealer", 201)["id"]
    svc.ok("POST", f"/v1/rounds/{round_id}/no-more-bets", "dealer")
    return round_id


def _roll(svc: Service, who: str, table: str, **fields: Any) -> Any:
    body = {"roll_id": f"{table}-{who}", "verdict": "valid", "faces": FIRST, **fields}
    return svc.call("POST", f"/v1/tables/{table}/rolls", who, json=body)


@pytest.mark.parametrize(
    ("who", "claimed"),
    [
        ("reader", "dealer"),  # the finding: a reader key claimed the dealer's hand and settled the round
        ("worker", "dealer"),  # a table worker is the camera too
        ("dealer", "reader"),  # a dealer may not pass a keyed roll off as the camera's reading
    ],
)
def test_a_claimed_source_the_key_cannot_back_is_403(service: Service, who: str, claimed: str) -> None:
    round_id = _ready_round(service, "S1")
    refused = _roll(service, who, "S1", source=claimed)
    assert refused.status_code == 403, refused.text
    detail = refused.json()["detail"]
    assert f"a {who} key" in detail and f"{claimed!r}" in detail, detail
    # Nothing was applied: the round waits for its roll, no roll is stored.
    assert service.ok("GET", f"/v1/rounds/{round_id}", "admin")["phase"] == "no_more_bets"
    assert service.ok("GET", "/v1/tables/S1/rolls", "admin") == []


@pytest.mark.parametrize(
    ("who", "source"), [("reader", "reader"), ("worker", "reader"), ("dealer", "dealer")]
)
def test_the_source_follows_the_keys_role(service: Service, who: str, source: str) -> None:
    round_id = _ready_round(service, "S2")
    answer = _roll(service, who, "S2")  # no source in the body: the server says it
    assert answer.status_code == 201, answer.text
    assert answer.json()["source"] == source
    stored = service.ok("GET", f"/v1/tables/S2/rolls?round_id={round_id}", "admin")
    assert [r["source"] for r in stored] == [source]
    stream = service.call("GET", "/v1/events?follow=false&table_id=S2&types=roll", "admin")
    events = [json.loads(line[6:]) for line in stream.text.splitlines() if line.startswith("data: ")]
    assert [e["data"]["source"] for e in events] == [source]
    # Saying the same source as the role's is accepted too (older clients send it), and a repeat of the
    # roll with it is the same roll: one roll, answered as a duplicate.
    again = _roll(service, who, "S2", source=source)
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
