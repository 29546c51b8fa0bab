"""Roles: every route answers 401 without a valid key, 403 to a role that may not use it, and lets the
roles that may use it through (their answer may still be 404/409/422, never 401/403)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.main import create_app
from tests.api.conftest import Service, running_service, tiny_png

R, D, S, A, W = "reader", "dealer", "surveillance", "admin", "worker"
EVERYONE = (R, D, S, A, W)
NOT_WORKER = (R, D, S, A)
VIEWERS = (D, S, A)
SHA = "0" * 64

# method, path, JSON body, roles allowed.
MATRIX: list[tuple[str, str, Any, tuple[str, ...]]] = [
    ("GET", "/v1/tables", None, EVERYONE),
    ("POST", "/v1/tables", {"id": "NEW", "game": "hrd6"}, (A,)),
    ("GET", "/v1/tables/T", None, EVERYONE),
    ("PATCH", "/v1/tables/T", {"camera_source": "rtsp://cam/1"}, (A,)),
    ("POST", "/v1/tables/T/rounds", None, (D,)),
    ("GET", "/v1/tables/T/rounds/current", None, VIEWERS),
    ("GET", "/v1/rounds", None, VIEWERS),
    ("GET", "/v1/rounds/1", None, VIEWERS),
    (
        "POST",
        "/v1/rounds/1/wagers",
        {"wagers": [{"seat": 1, "kind": "pip_street", "face": 2, "amount": "1"}]},
        (D,),
    ),
    ("POST", "/v1/rounds/1/no-more-bets", None, (D,)),
    ("POST", "/v1/rounds/1/dealer-calls", {"roll": 1, "winner": 2, "match_count": 2}, (D,)),
    ("POST", "/v1/tables/T/calls", {"roll": 1, "winner": 2}, (D,)),
    ("POST", "/v1/rounds/1/payouts", {"seat": 1, "paid": "0.00"}, (D,)),
    ("POST", "/v1/rounds/1/corrections", {"reason": "misread", "first_roll": [1, 2, 3, 4, 5, 6]}, (A,)),
    (
        "POST",
        "/v1/tables/T/rolls",
        {"roll_id": "x", "verdict": "void", "faces": []},  # the source is the key's role's
        (R, D, W),
    ),
    ("GET", "/v1/tables/T/rolls", None, VIEWERS),
    ("GET", "/v1/rolls/x", None, VIEWERS),
    ("POST", "/v1/evidence", tiny_png(), (R, D, W)),
    ("GET", f"/v1/evidence/{SHA}", None, VIEWERS),
    ("GET", "/v1/alerts", None, VIEWERS),
    ("POST", "/v1/alerts", {"message": "look at round 1"}, (S, A)),
    ("POST", "/v1/alerts", {"message": "camera 1 lost", "kind": "camera_lost", "table_id": "T"}, (W,)),
    ("POST", "/v1/alerts/1/acknowledge", None, (A,)),
    ("POST", "/v1/alerts/1/reviews", {"note": "seen on camera 2"}, (S, A)),
    ("GET", "/v1/alerts/1/reviews", None, VIEWERS),
    ("POST", "/v1/tables/T/dice-sets", {"name": "set A"}, (A,)),
    ("GET", "/v1/tables/T/dice-sets", None, VIEWERS),
    ("GET", "/v1/tables/T/fairness", None, VIEWERS),
    ("POST", "/v1/tables/T/fairness/alerts/1/acknowledge", {"note": "dice checked"}, (S, A)),
    ("GET", "/v1/events?follow=false", None, VIEWERS),
    ("GET", "/v1/audit", None, (S, A)),
    ("GET", "/v1/audit/verify", None, (S, A)),
    ("POST", "/v1/keys", {"role": "reader", "name": "cam-2"}, (A,)),
    ("GET", "/v1/keys", None, (A,)),
    ("DELETE", "/v1/keys/9999", None, (A,)),
    ("POST", "/v1/reads", None, (R,)),
    ("GET", "/v1/reads/x", None, VIEWERS),
    ("GET", "/v1/reads/x/frame", None, VIEWERS),
    ("POST", "/v1/settle", {"game": "hrd6", "wagers": [], "rolls": [[1, 2, 3, 4, 5, 6]]}, NOT_WORKER),
    ("GET", "/v1/tables/T/live-config", None, (W, A)),
    ("GET", "/v1/tables/T/enrollment/model", None, (W, A)),
    ("POST", "/v1/tables/T/lease", {"worker_id": "w-roles"}, (W, A)),
    ("DELETE", "/v1/tables/T/lease?worker_id=w-roles", None, (W, A)),
    ("PUT", "/v1/reads/x", {"table_id": "T", "document": {"verdict": "void", "faces": []}}, (W,)),
    ("POST", "/v1/tables/T/enrollment", None, (A,)),
    ("GET", "/v1/tables/T/enrollment", None, (S, A)),
    ("DELETE", "/v1/tables/T/enrollment", None, (A,)),
    ("GET", "/v1/enrollment-jobs/x", None, (S, A)),
    ("GET", "/v1/console/waiting", None, VIEWERS),
    (
        "POST",
        "/v1/console/decisions",
        {"table_id": "T", "roll_id": "x", "round_id": 1, "call": "valid", "dice": []},
        (D,),
    ),
    ("GET", "/v1/console/mismatches", None, (S, A)),
    ("POST", "/v1/console/mismatches/x/acknowledge", None, (S, A)),
]
OPEN = ("/healthz", "/readyz", "/metrics")
SERVICE_TAGS = (
    "alerts",
    "audit",
    "events",
    "evidence",
    "health",
    "keys",
    "rolls",
    "rounds",
    "tables",
    "rules",
    "reads",
    "workers",
    "enrollment",
    "console",
)


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    data_dir: Path = tmp_path_factory.mktemp("roles") / "data"
    with running_service("sqlite", data_dir) as service:
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd6"})
        service.ok("POST", "/v1/tables/T/rounds", "dealer", 201)
        yield service


def send(svc: Service, method: str, path: str, body: Any, who: str | None, key: str | None = None) -> int:
    headers = svc.headers(who) if key is None else {"Authorization": f"Bearer {key}"}
    if isinstance(body, bytes):
        headers["Content-Type"] = "image/png"
        response = svc.client.request(method, svc.base_url + path, headers=headers, content=body)
    else:
        response = svc.client.request(method, svc.base_url + path, headers=headers, json=body)
    return response.status_code


def test_matrix_covers_every_service_route() -> None:
    spec = create_app().openapi()
    routes = {
        (method.upper(), path)
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if set(operation.get("tags", [])) & set(SERVICE_TAGS)
    }
    assert len(routes) > 25  # the walk really found the service's routes
    covered = set()
    for method, path, _, _ in MATRIX:
        bare = path.split("?")[0]
        for route_method, template in routes:
            parts, concrete = template.split("/"), bare.split("/")
            if (
                route_method == method
                and len(parts) == len(concrete)
                and all(p == c or p.startswith("{") for p, c in zip(parts, concrete, strict=True))
            ):
                covered.add((route_method, template))
    missing = {r for r in routes if r[1] not in OPEN} - covered
    assert not missing, f"routes without a role test: {sorted(missing)}"


@pytest.mark.parametrize(
    ("method", "path", "body", "allowed"), MATRIX, ids=[f"{m} {p}" for m, p, _, _ in MATRIX]
)
def test_each_role_can_do_what_it_should_and_nothing_more(
    svc: Service, method: str, path: str, body: Any, allowed: tuple[str, ...]
) -> None:
    assert send(svc, method, path, body, None) == 401
    assert send(svc, method, path, body, None, key="tbx_000000000000_not-a-key") == 401
    assert send(svc, method, path, body, None, key="garbage") == 401
    for role in EVERYONE:
        status = send(svc, method, path, body, role)
        if role in allowed:
            assert status not in (401, 403), f"{role} was refused {method} {path} ({status})"
        else:
            assert status == 403, f"{role} got {status} for {method} {path}, expected 403"


@pytest.mark.parametrize("path", OPEN)
def test_probes_are_open(svc: Service, path: str) -> None:
    # No key needed: 200, or 503 from /readyz when something is not ready (the reader's weights).
    assert svc.client.get(svc.base_url + path).status_code in ((200, 503) if path == "/readyz" else (200,))


def test_supervisor_capability_and_revoked_keys(svc: Service) -> None:
    # A dealer key with the supervisor capability may correct (the round is not settled: 409, not 403).
    body = {"reason": "misread", "first_roll": [1, 2, 3, 4, 5, 6]}
    assert send(svc, "POST", "/v1/rounds/1/corrections", body, "supervisor") == 409
    new = svc.ok("POST", "/v1/keys", "admin", 201, json={"role": "surveillance", "name": "temp"})
    assert send(svc, "GET", "/v1/audit", None, None, key=new["key"]) == 200
    revoked = svc.ok("DELETE", f"/v1/keys/{new['id']}", "admin")
    assert revoked["revoked_at"] is not None
    assert send(svc, "GET", "/v1/audit", None, None, key=new["key"]) == 401
    # Keys are stored hashed: the list never shows a key.
    listed = svc.client.get(svc.base_url + "/v1/keys", headers=svc.headers("admin")).text
    assert new["key"] not in listed and svc.keys["admin"] not in listed
