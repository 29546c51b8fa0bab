"""POST /v1/settle through a real uvicorn server on a free port, and its OpenAPI documentation."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from api.auth import Role, create_key
from api.main import create_app
from api.routes.settle import HRD6_EXAMPLE, HRD10_EXAMPLE
from api.settings import Settings
from rules.games import settle

LiveServer = Callable[[FastAPI], AbstractContextManager[str]]


@pytest.fixture
def server(live_server: LiveServer, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The service on a free port (SQLite in tmp_path) and a surveillance key for it."""
    app = create_app(Settings(data_dir=tmp_path / "data"))
    with live_server(app) as url:
        with app.state.database.session() as session:
            key = create_key(session, role=Role.SURVEILLANCE, name="test-settle").secret
        yield url, key


@pytest.fixture
def base_url(server: tuple[str, str]) -> str:
    return server[0]


@pytest.fixture
def http(server: tuple[str, str]) -> Iterator[httpx.Client]:
    """A client that sends the surveillance key."""
    with httpx.Client(timeout=10.0, headers={"Authorization": f"Bearer {server[1]}"}) as client:
        yield client


def test_settle_needs_an_api_key(base_url: str) -> None:
    response = httpx.post(f"{base_url}/v1/settle", json=HRD10_EXAMPLE, timeout=10.0)
    assert response.status_code == 401


def test_settle_issue_example_over_http(base_url: str, http: httpx.Client) -> None:
    response = http.post(f"{base_url}/v1/settle", json=HRD10_EXAMPLE)
    assert response.status_code == 200
    answer = response.json()
    assert answer == settle(HRD10_EXAMPLE)  # the same answer as the CLI's calculator
    assert answer["first_roll"] == {"faces": [5, 5, 5, 5, 6, 6, 6, 1, 1, 4], "winner": 5, "match_count": 4}
    assert answer["extra_roll"]["final_count"] == 6
    assert [(s["result"], s["win"], s["roll"]) for s in answer["settlements"]] == [
        ("win", "20.00", 1),
        ("win", "5.00", 1),
        ("collected", "0.00", 1),
        ("lose", "0.00", 1),
    ]
    assert answer["seats"]["1"] == {"staked": "15.00", "won": "25.00", "lost": "5.00", "net": "20.00"}


def test_settle_six_dice_example_over_http(base_url: str, http: httpx.Client) -> None:
    response = http.post(f"{base_url}/v1/settle", json=HRD6_EXAMPLE)
    assert response.status_code == 200
    assert [s["win"] for s in response.json()["settlements"]] == ["20.00", "600.00"]  # 2 to 1, 60 to 1


def test_settle_refusal_lists_every_problem_by_clause(base_url: str, http: httpx.Client) -> None:
    doc = {
        "game": "hrd6",
        "wagers": [
            {"seat": 1, "kind": "like_kind", "count": 3, "amount": "5.00"},
            {"seat": 1, "kind": "millionaire_row", "count": 9, "amount": "1.00"},
        ],
        "rolls": [[1, 2, 3, 4, 5]],
    }
    response = http.post(f"{base_url}/v1/settle", json=doc)
    assert response.status_code == 422
    assert response.json() == {
        "detail": [
            {
                "clause": "675a.6(d)",
                "message": "hrd6 has no Millionaire Row wager",
                "field": "wagers[1].kind",
            },
            {
                "clause": "675a.6(d)",
                "message": "seat 1 has no Pip Street wager; a Pip Street wager is needed to play",
                "field": "wagers[0]",
            },
            {"clause": "675a.6(e)", "message": "this throw has 6 dice, got 5", "field": "rolls[0]"},
        ]
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "the body is not JSON"),
        (b"[1, 2]", "the document must be a JSON object"),
        (b'{"game": "craps"}', "unknown game 'craps'"),
    ],
)
def test_settle_refuses_bad_bodies(base_url: str, http: httpx.Client, body: bytes, message: str) -> None:
    response = http.post(f"{base_url}/v1/settle", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert len(detail) == 1
    assert detail[0]["clause"] == "document"
    assert message in detail[0]["message"]


def test_exact_decimals_in_json_numbers(base_url: str, http: httpx.Client) -> None:
    # A JSON number with a fraction is read exactly (never through a float) and paid at 3 to 5.
    body = (
        '{"game": "hrd10", "rolls": [[4,4,4,1,1,2,2,3,5,6]], "wagers": ['
        '{"seat": 1, "kind": "pip_street", "face": 4, "amount": 0.35},'
        '{"seat": 1, "kind": "like_kind", "count": 3, "amount": 0.35}]}'
    )
    response = http.post(f"{base_url}/v1/settle", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200
    assert [s["win"] for s in response.json()["settlements"]] == ["1.75", "0.21"]  # 0.35 * 3/5 = 0.21


def test_openapi_documents_the_hrd_document_with_examples(base_url: str, http: httpx.Client) -> None:
    spec: dict[str, Any] = http.get(f"{base_url}/openapi.json").json()
    post = spec["paths"]["/v1/settle"]["post"]
    content = post["requestBody"]["content"]["application/json"]
    assert content["examples"]["hrd10"]["value"] == json.loads(json.dumps(HRD10_EXAMPLE))
    assert set(content["schema"]["properties"]) >= {"game", "wagers", "rolls", "settings", "paytable"}
    assert "422" in post["responses"]
