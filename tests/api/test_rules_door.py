"""The rules engine's door (api/rules_door.py): the service's own live loops hand their rolls to the round
logic in-process (`LocalRules`), and it must answer, refuse and apply once exactly as
`POST /v1/tables/{id}/rolls` does for a table worker (`RulesClient`). A real service, a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from api.db.session import Database
from api.live_service import LiveService
from api.metrics import Metrics
from api.rules_door import LocalRules, RollRejectedError, RulesClient, RulesUnreachableError
from api.schemas.rolls import RollSubmission
from api.settings import Settings
from tests.api.conftest import Service, running_service

TABLE = "T1"
FACES = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    with running_service("sqlite", tmp_path / "data") as service:
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": TABLE, "game": "hrd10"})
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": "T2", "game": "hrd10"})
        yield service


@pytest.fixture
def local(svc: Service) -> Iterator[LocalRules]:
    """The in-process door on the service's own database (its SQLite file, opened a second time)."""
    database = Database(svc.settings.resolved_database_url)
    yield LocalRules(database, Metrics(), actor=f"reader:live-{TABLE}", backoff_s=0.0)
    database.dispose()


def open_round(svc: Service, table_id: str = TABLE) -> int:
    """A round waiting for dice (no wagers), its id."""
    rnd = svc.ok("POST", f"/v1/tables/{table_id}/rounds", "dealer", 201)
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/no-more-bets", "dealer")
    return int(rnd["id"])


def roll(roll_id: str, **fields: Any) -> RollSubmission:
    return RollSubmission.model_validate(
        {"roll_id": roll_id, "source": "reader", "verdict": "valid", "faces": FACES, **fields}
    )


def test_a_roll_handed_in_process_is_applied_once_and_answered_as_rest_answers(
    svc: Service, local: LocalRules
) -> None:
    round_id = open_round(svc)
    answer = local.post_roll(TABLE, roll("r1"))
    assert answer["applied"] and answer["round_id"] == round_id and answer["duplicate"] is False
    assert answer["phase"] == "complete" and answer["round"]["first_roll"]["winner"] == 5  # no Extra Roll bet
    # The same roll over REST is the same roll, applied once: answered from the first, word for word.
    again = svc.call("POST", f"/v1/tables/{TABLE}/rolls", "reader", json=roll("r1").wire())
    assert again.status_code == 200
    assert {**again.json(), "duplicate": False} == answer
    assert local.post_roll(TABLE, roll("r1")) == {**answer, "duplicate": True}
    stored = svc.ok("GET", "/v1/rolls/r1", "surveillance")
    assert stored == {**answer, "duplicate": False}
    assert len(svc.ok("GET", f"/v1/tables/{TABLE}/rolls", "surveillance")) == 1
    # Who handed it is on the audit trail, as a key's actor would be.
    trail = svc.ok("GET", "/v1/audit", "surveillance")
    entries = trail if isinstance(trail, list) else trail["entries"]
    assert any(e["actor"] == f"reader:live-{TABLE}" for e in entries)


# Each refusal in-process is the endpoint's own: the same status and the same detail.
@pytest.mark.parametrize(
    ("table_id", "fields", "status"),
    [
        ("T2", {}, 409),  # no open round at the table
        ("T9", {}, 404),  # no such table
        (TABLE, {"faces": FACES[:9]}, 422),  # nine dice in a ten-dice game: refused by clause
        (TABLE, {"evidence_sha256": "0" * 64}, 404),  # an evidence frame never stored
        (TABLE, {"round_id": 999}, 404),  # a round that does not exist (issue 57: 404, was 409)
    ],
    ids=["no-round", "no-table", "nine-dice", "no-evidence", "other-round"],
)
def test_a_refusal_in_process_is_the_endpoints_refusal(
    svc: Service, local: LocalRules, table_id: str, fields: dict[str, Any], status: int
) -> None:
    open_round(svc)
    with pytest.raises(RollRejectedError) as refused:
        local.post_roll(table_id, roll("local", **fields))
    rest = svc.call("POST", f"/v1/tables/{table_id}/rolls", "reader", json=roll("rest", **fields).wire())
    assert (refused.value.status_code, refused.value.detail) == (rest.status_code, rest.json()["detail"])
    assert refused.value.status_code == status


def test_evidence_is_the_recorders_in_process(svc: Service, local: LocalRules) -> None:
    """The service's recorder stores each frame; the in-process door only names it, and refuses one that is
    not stored, as a roll naming it would be."""
    ok, jpeg = cv2.imencode(".jpg", np.full((32, 32, 3), 90, np.uint8))
    assert ok
    sha = svc.ok(
        "POST", "/v1/evidence", "reader", 201, content=bytes(jpeg), headers={"Content-Type": "image/jpeg"}
    )["sha256"]
    assert local.upload_evidence(bytes(jpeg)) == sha
    with pytest.raises(RollRejectedError) as refused:
        local.upload_evidence(b"never stored")
    assert refused.value.status_code == 404


def test_a_database_that_does_not_answer_is_retried_then_unreachable(tmp_path: Path) -> None:
    """As `RulesClient` retries a 5xx: a database error is tried `attempts` times with doubling back-off,
    then `RulesUnreachableError` (the loop's `roll_not_posted` alert), never an exception that stops it."""
    database = Database(f"sqlite:///{tmp_path / 'no-such-dir' / 'throwbox.db'}")
    slept: list[float] = []
    door = LocalRules(
        database, Metrics(), actor="reader:live-T", attempts=3, backoff_s=0.1, sleep=slept.append
    )
    with pytest.raises(RulesUnreachableError, match="no answer after 3 tries"):
        door.post_roll("T", roll("r"))
    assert slept == [0.1, 0.2]
    database.dispose()


@pytest.mark.parametrize(
    ("overrides", "door"),
    [
        ({}, LocalRules),  # the service's own round logic: in-process
        ({"rules_url": "http://rules.example:8000", "rules_key": "k"}, RulesClient),  # another engine: REST
    ],
    ids=["in-process", "rest"],
)
def test_the_services_loops_go_over_rest_only_to_another_rules_engine(
    tmp_path: Path, overrides: dict[str, Any], door: type
) -> None:
    settings = Settings(data_dir=tmp_path / "data", **overrides)
    database = Database(settings.resolved_database_url)
    service = LiveService(settings=settings, database=database, metrics=Metrics(), app_state=None)
    made = service._rules_door(TABLE)
    assert type(made) is door
    if isinstance(made, RulesClient):
        assert made.base_url == "http://rules.example:8000" and made.key == "k"
    else:
        assert made.actor == f"reader:live-{TABLE}" and made.database is database
    database.dispose()
