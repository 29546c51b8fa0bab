"""The table console's routes (issue 56) on a real server and SQLite: a roll the reader left to a person is
listed with its read, decided by a dealer as a dealer roll naming that read (the round settles), kept with
its labelled boxes, refused when stale or from the wrong role; a dealer overruling a sure die is shown to
surveillance, who acknowledge it in one call, audited."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import pytest
from sqlalchemy import select

from api.console import reading_order
from api.db.models import AuditEntry, ConsoleDecision
from api.db.session import Database
from api.live import LiveConfig, LiveLoop, LiveRead
from api.live_service import DatabaseRecorder
from api.metrics import Metrics
from api.rules_door import RulesClient
from tests.api.conftest import Service, running_service
from vision.capture import CapturedFrame
from vision.settle import AtRest, SettleDetector
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Finding, FindingReason, Frame, Roll, Verdict

FIXTURE = Path(__file__).resolve().parents[1] / "vision" / "fixtures" / "judge" / "valid.jpg"
TRUTH: dict[str, Any] = json.loads(FIXTURE.with_suffix(".json").read_text(encoding="utf-8"))
TABLE = "C1"


class ScriptedReader:
    """Reads the fixture frame as its truth says, but unsure of the dice `uncertain` and blind to `missed`
    (their indices in the truth): a roll left to a person, on a real frame."""

    def __init__(
        self, *, uncertain: Sequence[int] = (), missed: Sequence[int] = (), in_box: Sequence[int] = ()
    ) -> None:
        self.uncertain = set(uncertain)
        self.missed = set(missed)
        self.in_box = set(in_box)  # dice lying in a layout box (an Extra Roll's kept dice)

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        dice = []
        for i, d in enumerate(TRUTH["dice"]):
            if i in self.missed:
                continue
            box = tuple(float(v) for v in d["box_xyxy"])
            quad = tuple((float(x), float(y)) for x, y in d["top_quad"])
            sure = i not in self.uncertain
            probs = tuple(0.97 if k == d["face"] else 0.006 for k in range(1, 7))
            dice.append(
                DieReading(
                    candidate=DieCandidate(box_xyxy=box, top_quad=quad, score=0.95),  # type: ignore[arg-type]
                    face=d["face"] if sure else None,
                    face_probs=probs if sure else (0.5, 0.1, 0.1, 0.1, 0.1, 0.1),
                    uncertain=not sure,
                    reasons=() if sure else ("low confidence 0.50 < 0.90",),
                    layout_box="two" if i in self.in_box else None,
                )
            )
        findings = [
            Finding(Verdict.NO_DECISION, FindingReason.FACE_UNCERTAIN, (n + 1,), f"die {n + 1} uncertain")
            for n, d in enumerate(dice)
            if d.uncertain
        ]
        if self.missed:
            findings.append(Finding(Verdict.NO_DECISION, FindingReason.COUNT_MISMATCH, (), "9 dice of 10"))
        return Roll(
            dice=tuple(dice),
            verdict=Verdict.NO_DECISION if findings else Verdict.VALID,
            reasons=tuple(f.detail for f in findings),
            expected_dice=expected_dice,
            faces=tuple(d.face for d in dice if d.face is not None),
            frame_id=frame.frame_id,
            table_id=frame.table_id,
            models={"detector": "scripted"},
            timing_ms={"total": 0.0},
            findings=tuple(findings),
        )


@dataclass
class Table:
    """A table with a round waiting for dice, and a live loop that reads the fixture frame into it."""

    svc: Service
    loop: LiveLoop
    round_id: int
    throws: int = 0

    def throw(self, reader: ScriptedReader | Any) -> LiveRead:
        """One throw at rest, read by `reader` and posted by the live loop."""
        self.throws += 1
        self.loop.reader = reader
        image = cv2.imread(str(FIXTURE))
        captured = CapturedFrame(
            image=image,
            frame_id=f"{TABLE}-throw-{self.throws}",
            table_id=TABLE,
            captured_at=datetime.now(UTC),
            seq=self.throws,
            source_id="test",
            monotonic_s=float(self.throws),
        )
        return self.loop.handle_throw(
            AtRest(captured, throw_index=self.throws, moving_since_s=0.0, still_since_s=0.5)
        )

    def waiting(self, who: str = "dealer") -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.svc.ok("GET", f"/v1/console/waiting?table_id={TABLE}", who)
        return found


def open_round(svc: Service) -> int:
    rid: int = svc.ok("POST", f"/v1/tables/{TABLE}/rounds", "dealer", 201)["id"]
    wagers = [{"seat": 1, "kind": "pip_street", "face": 2, "amount": "5.00"}]
    svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    return rid


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    with running_service("sqlite", tmp_path / "data") as svc:
        svc.ok("POST", "/v1/tables", "admin", 201, json={"id": TABLE, "game": "hrd10"})
        database = Database(svc.settings.resolved_database_url)
        loop = LiveLoop(
            config=LiveConfig(table_id=TABLE, expected_dice=10),
            items=[],
            detector=SettleDetector(),
            reader=ScriptedReader(),
            rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"]),
            recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:console-test"),
        )
        try:
            yield Table(svc=svc, loop=loop, round_id=open_round(svc))
        finally:
            loop.rules.close()
            database.dispose()


def decision(waiting: dict[str, Any], **faces_by_index: int) -> dict[str, Any]:
    """A valid call keeping the reader's faces, with `faces_by_index` ("i4": 1) given by the person."""
    dice = sorted(waiting["dice"], key=lambda d: d["index"])
    return {
        "table_id": TABLE,
        "roll_id": waiting["roll_id"],
        "round_id": waiting["round_id"],
        "call": "valid",
        "dice": [{"face": faces_by_index.get(f"i{d['index']}", d["face"])} for d in dice],
    }


def truth_face(die: dict[str, Any]) -> int:
    """The true face of a read die: the truth die whose box is this one."""
    for d in TRUTH["dice"]:
        if [round(v, 1) for v in d["box_xyxy"]] == die["box_xyxy"]:
            return int(d["face"])
    raise AssertionError(f"no truth die at {die['box_xyxy']}")


def audit_entries(svc: Service, action: str) -> list[dict[str, Any]]:
    database = Database(svc.settings.resolved_database_url)
    try:
        with database.read_session() as session:
            rows = session.scalars(
                select(AuditEntry).where(AuditEntry.action == action).order_by(AuditEntry.seq)
            )
            return [{"actor": r.actor, "subject": r.subject, **json.loads(r.payload)} for r in rows]
    finally:
        database.dispose()


def stored_decision(svc: Service, roll_id: str) -> ConsoleDecision:
    database = Database(svc.settings.resolved_database_url)
    try:
        with database.read_session() as session:
            row = session.get(ConsoleDecision, roll_id)
            assert row is not None
            session.expunge(row)
            return row
    finally:
        database.dispose()


# --- tests ------------------------------------------------------------------------------------------------


def test_a_roll_left_to_a_person_is_listed_with_its_read_and_the_reasons_in_plain_words(table: Table) -> None:
    assert table.waiting() == []  # nothing thrown yet
    read = table.throw(ScriptedReader(uncertain=[4]))
    assert read.verdict == "no_decision"
    [waiting] = table.waiting("surveillance")  # surveillance sees it too
    assert waiting["roll_id"] == read.roll_id and waiting["round_id"] == table.round_id
    assert waiting["read_id"] == read.read_id and waiting["evidence_sha256"] == read.evidence_sha256
    assert waiting["kind"] == "first_roll" and waiting["dice_expected"] == 10
    # The reader's "die 5" (its fifth die) is named as the console numbers it: in reading order.
    fifth = next(d["order"] + 1 for d in waiting["dice"] if d["index"] == 4)
    assert waiting["reasons"] == [f"the reader is not sure of a die's face (die {fifth} uncertain)"]
    assert [d["order"] for d in waiting["dice"]] == list(range(10))  # listed in reading order
    unsure = [d for d in waiting["dice"] if d["uncertain"]]
    assert len(unsure) == 1 and unsure[0]["index"] == 4 and unsure[0]["face"] is None
    assert unsure[0]["confidence"] == 0.5
    # The evidence frame it names is there for the console to show.
    frame = table.svc.call("GET", f"/v1/evidence/{waiting['evidence_sha256']}", "dealer")
    assert frame.status_code == 200 and frame.headers["content-type"] == "image/jpeg"


def test_a_dealer_decides_one_uncertain_die_and_the_round_settles_as_a_dealer_roll_naming_the_read(
    table: Table,
) -> None:
    read = table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    body = decision(waiting, i4=truth_face(next(d for d in waiting["dice"] if d["index"] == 4)))
    out = table.svc.ok("POST", "/v1/console/decisions", "dealer", 201, json=body)
    assert out["roll_id"] == read.roll_id and out["dealer_roll_id"] == f"{read.roll_id}:person"
    assert out["read_id"] == read.read_id and out["duplicate"] is False and out["mismatch"] is False
    answer = out["answer"]
    assert answer["source"] == "dealer" and answer["verdict"] == "valid" and answer["settled"] is True
    assert answer["message"] == "round settled"
    assert sorted(answer["faces"]) == sorted(TRUTH["faces"])
    assert table.waiting() == []
    # The audit trail: the camera's read, the dealer roll naming it, and the person's decision, with who.
    [submitted] = [e for e in audit_entries(table.svc, "roll.submit") if e["roll"]["source"] == "dealer"]
    assert submitted["roll"]["read_id"] == read.read_id and submitted["actor"].startswith("dealer:")
    [decided] = audit_entries(table.svc, "console.decide")
    assert decided["read_id"] == read.read_id and decided["actor"].startswith("dealer:")
    assert decided["camera_said"][4] == [None, 0.5, False]  # the reader's word on the die in its read
    assert decided["person_said"]["faces"] == answer["faces"] and decided["disputed"] == []
    # The no_decision alert of the roll is closed by the decision.
    alerts = table.svc.ok("GET", f"/v1/alerts?table_id={TABLE}", "admin")
    [no_decision] = [a for a in alerts if a["kind"] == "no_decision"]
    assert no_decision["acknowledged_by"] == submitted["actor"]
    # Sent again (a reload after submitting): the first answer, applied once.
    again = table.svc.ok("POST", "/v1/console/decisions", "dealer", 200, json=body)
    assert again["duplicate"] is True and again["answer"]["roll_id"] == out["dealer_roll_id"]
    # Another decision of the decided roll: refused, naming who decided it and how.
    other = table.svc.call("POST", "/v1/console/decisions", "supervisor", json={**body, "call": "off_table"})
    assert other.status_code == 409
    by, faces = submitted["actor"], answer["faces"]
    assert other.json() == {"detail": f"roll {read.roll_id!r} was already decided by {by} (valid {faces})"}


def test_a_missed_die_added_by_a_click_and_a_box_struck_out_are_kept_as_labelled_boxes(table: Table) -> None:
    table.throw(ScriptedReader(missed=[9]))  # the reader sees 9 dice of 10
    [waiting] = table.waiting()
    missed = TRUTH["dice"][9]
    body = decision(waiting)
    body["dice"][0] = {"struck": True}  # say the first box is no die (its face the person adds back below)
    first = TRUTH["dice"][0]
    body["added"] = [
        {"box_xyxy": missed["box_xyxy"], "face": missed["face"]},
        {"box_xyxy": first["box_xyxy"], "face": first["face"]},
    ]
    out = table.svc.ok("POST", "/v1/console/decisions", "dealer", 201, json=body)
    assert out["answer"]["settled"] is True and sorted(out["answer"]["faces"]) == sorted(TRUTH["faces"])
    # Striking a box the reader was sure of is a disagreement surveillance sees.
    assert out["mismatch"] is True and out["alert_id"] is not None
    row = stored_decision(table.svc, waiting["roll_id"])
    assert (
        row.verdict == "valid" and row.read_id == waiting["read_id"] and row.decided_by.startswith("dealer:")
    )
    labels = [(b["origin"], b["label"], b["face"]) for b in row.boxes]
    assert labels.count(("reader", "no_die", None)) == 1
    assert ("person", "die", missed["face"]) in labels and len(labels) == 11
    added = [b for b in row.boxes if b["origin"] == "person"]
    assert added[0]["box_xyxy"] == missed["box_xyxy"] and added[0]["reader_face"] is None


def test_a_stale_roll_is_refused_with_a_clear_message(table: Table) -> None:
    first = table.throw(ScriptedReader(uncertain=[2]))
    [waiting] = table.waiting()
    body = decision(waiting, i2=truth_face(next(d for d in waiting["dice"] if d["index"] == 2)))
    table.throw(ScriptedReader())  # the dealer rethrew; the reader read it valid: the round moved on
    answer = table.svc.call("POST", "/v1/console/decisions", "dealer", json=body)
    assert answer.status_code == 409
    assert answer.json() == {
        "detail": f"roll {first.roll_id!r} no longer waits for a person: its round {table.round_id} "
        "has closed"
    }
    # A newer roll left to a person in the same round: the older one is stale, said so.
    rid = open_round(table.svc)
    older = table.throw(ScriptedReader(uncertain=[2]))
    [waiting] = table.waiting()
    stale = decision(waiting, i2=3)
    newer = table.throw(ScriptedReader(uncertain=[3]))
    answer = table.svc.call("POST", "/v1/console/decisions", "dealer", json=stale)
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        f"roll {older.roll_id!r} no longer waits for a person: the round moved on (newest roll "
        f"{newer.roll_id!r}, no_decision); round {rid} is now in phase no_more_bets"
    )


@pytest.mark.parametrize(
    ("who", "status", "detail"),
    [
        ("reader", 403, "role 'reader' may not do this; allowed: dealer"),
        ("surveillance", 403, "role 'surveillance' may not do this; allowed: dealer"),
        ("admin", 403, "role 'admin' may not do this; allowed: dealer"),
        (None, 401, "missing API key: send Authorization: Bearer KEY"),
    ],
)
def test_only_a_dealer_key_submits(table: Table, who: str | None, status: int, detail: str) -> None:
    table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    answer = table.svc.call("POST", "/v1/console/decisions", who, json=decision(waiting, i4=2))
    assert answer.status_code == status and answer.json() == {"detail": detail}
    assert table.waiting() != []  # nothing decided


def test_the_reader_key_may_not_see_what_waits(table: Table) -> None:
    answer = table.svc.call("GET", "/v1/console/waiting", "reader")
    assert answer.status_code == 403
    assert answer.json() == {"detail": "role 'reader' may not do this; allowed: admin, dealer, surveillance"}
    missing = table.svc.call("GET", "/v1/console/waiting?table_id=NOPE", "dealer")
    assert missing.status_code == 404 and missing.json() == {"detail": "no table 'NOPE'"}


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        # A counted die of a valid call with no face: said in words, nothing submitted.
        (
            {"dice": "unsure-blank"},
            "die {n} (in reading order) has no face: type its face, strike it out as no die, or call the "
            "roll invalid or void",
        ),
        # One entry per die of the read.
        (
            {"dice": "short"},
            "the read has 10 dice; the decision names 9 (one entry per die of the read, in the read's order)",
        ),
    ],
)
def test_an_incomplete_decision_is_refused_in_words(
    table: Table, change: dict[str, str], detail: str
) -> None:
    table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    body = decision(waiting)
    if change["dice"] == "short":
        body["dice"] = body["dice"][:9]
    n = next(d["order"] for d in waiting["dice"] if d["index"] == 4) + 1  # the unsure die, in reading order
    answer = table.svc.call("POST", "/v1/console/decisions", "dealer", json=body)
    assert answer.status_code == 422 and answer.json() == {"detail": detail.format(n=n)}
    assert table.waiting()[0]["roll_id"] == waiting["roll_id"]


def test_593_3_a_a_wrong_count_of_dice_is_refused_by_the_rules_engine_by_clause(table: Table) -> None:
    table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    body = decision(waiting, i4=2)
    body["dice"][0] = {"struck": True}
    answer = table.svc.call("POST", "/v1/console/decisions", "dealer", json=body)
    assert answer.status_code == 422
    refusal = answer.json()["detail"]
    assert refusal["message"] == "refused by the rules engine"
    assert [p["clause"] for p in refusal["problems"]] == ["593.3(a)"]


@pytest.mark.parametrize(
    ("call", "verdict", "reason"),
    [
        ("off_table", "invalid", "675a.4(b): a die went off the table; the roll is invalid"),
        ("die_on_die", "invalid", "675a.4(b): a die came to rest on top of another; the roll is invalid"),
        (
            "cocked_multi_side",
            "void",
            "675a.4(c): a die rests cocked on more than one side; the roll is void and rethrown",
        ),
    ],
)
def test_675a_4_b_c_a_person_calls_the_roll_invalid_or_void_by_its_rule(
    table: Table, call: str, verdict: str, reason: str
) -> None:
    table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    body = {**decision(waiting), "call": call}
    out = table.svc.ok("POST", "/v1/console/decisions", "dealer", 201, json=body)
    answer = out["answer"]
    assert answer["verdict"] == verdict and answer["rethrow"] is True and answer["applied"] is False
    assert answer["phase"] == "no_more_bets" and out["mismatch"] is False
    [submitted] = [e for e in audit_entries(table.svc, "roll.submit") if e["roll"]["source"] == "dealer"]
    assert submitted["roll"]["reasons"] == [reason]
    assert table.waiting() == []  # the dealer rethrows; nothing waits


def test_surveillance_sees_a_dealer_overruling_a_sure_die_and_acknowledges_it_in_one_call(
    table: Table,
) -> None:
    table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    true4 = truth_face(next(d for d in waiting["dice"] if d["index"] == 4))
    sure = next(d for d in waiting["dice"] if d["index"] == 0)
    other = 6 if sure["face"] != 6 else 5
    out = table.svc.ok(
        "POST", "/v1/console/decisions", "dealer", 201, json=decision(waiting, i4=true4, i0=other)
    )
    assert out["mismatch"] is True
    assert table.svc.call("GET", "/v1/console/mismatches", "dealer").status_code == 403
    [shown] = table.svc.ok("GET", f"/v1/console/mismatches?table_id={TABLE}", "surveillance")
    assert shown["roll_id"] == waiting["roll_id"] and shown["evidence_sha256"] == waiting["evidence_sha256"]
    [disputed] = [b for b in shown["boxes"] if b["reader_sure"] and b["face"] != b["reader_face"]]
    assert disputed["read_index"] == 0 and (disputed["reader_face"], disputed["face"]) == (
        sure["face"],
        other,
    )
    alert = next(a for a in table.svc.ok("GET", "/v1/alerts", "surveillance") if a["id"] == out["alert_id"])
    assert (
        alert["kind"] == "dealer_read_mismatch"
        and f"camera {sure['face']}, person {other}" in alert["message"]
    )

    path = f"/v1/console/mismatches/{waiting['roll_id']}/acknowledge"
    assert table.svc.call("POST", path, "dealer").status_code == 403
    acked = table.svc.ok(
        "POST", path, "surveillance", json={"note": "seen on camera 2: the dealer was right"}
    )
    assert acked["acknowledged_by"].startswith("surveillance:") and acked["acknowledged_at"] is not None
    again = table.svc.call("POST", path, "surveillance")
    assert again.status_code == 409
    by = acked["acknowledged_by"]
    assert again.json() == {
        "detail": f"the mismatch of roll {waiting['roll_id']!r} was already acknowledged by {by}"
    }
    assert table.svc.ok("GET", f"/v1/console/mismatches?table_id={TABLE}", "surveillance") == []
    [entry] = audit_entries(table.svc, "console.mismatch_acknowledge")
    assert entry["actor"] == acked["acknowledged_by"] and entry["roll_id"] == waiting["roll_id"]
    assert entry["note"] == "seen on camera 2: the dealer was right"
    alert = next(a for a in table.svc.ok("GET", "/v1/alerts", "surveillance") if a["id"] == out["alert_id"])
    assert alert["acknowledged_by"] == acked["acknowledged_by"]
    missing = table.svc.call("POST", "/v1/console/mismatches/nothing/acknowledge", "surveillance")
    assert missing.status_code == 404 and missing.json() == {"detail": "no mismatch of roll 'nothing'"}


def test_the_console_page_is_served_without_a_key_and_asks_for_nothing_outside(table: Table) -> None:
    for path in ("/console", "/static/console.js", "/static/console.css", "/static/signin.js"):
        page = table.svc.client.get(table.svc.base_url + path)
        assert page.status_code == 200, path
        outside = page.text.replace("http://www.w3.org/2000/svg", "")
        assert "http://" not in outside and "https://" not in outside, path
    assert 'src="/static/console.js"' in table.svc.client.get(table.svc.base_url + "/console").text


@pytest.mark.parametrize(
    ("boxes", "order"),
    [
        ([], []),
        # One row, given right to left: read left to right.
        ([[40, 0, 60, 20], [0, 2, 20, 22]], [1, 0]),
        # Two rows: the top row first, each left to right; a die a little lower stays in its row.
        ([[50, 60, 70, 80], [0, 0, 20, 20], [40, 6, 60, 26], [0, 62, 20, 82]], [1, 2, 3, 0]),
    ],
)
def test_reading_order_is_rows_top_to_bottom_each_left_to_right(
    boxes: list[list[float]], order: list[int]
) -> None:
    assert reading_order(boxes) == order


def test_593_4_g_on_an_extra_roll_the_kept_dice_are_not_keyed(table: Table) -> None:
    # Close the test's round (read valid: pip street 2, four 2s) and open one with an Extra Roll wager.
    table.throw(ScriptedReader())
    rid = table.svc.ok("POST", f"/v1/tables/{TABLE}/rounds", "dealer", 201)["id"]
    wagers = [
        {"seat": 1, "kind": "pip_street", "face": 2, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
        {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
    ]
    table.svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": wagers})
    table.svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    first = table.throw(ScriptedReader())
    assert first.answer is not None and first.answer["phase"] == "awaiting_extra_roll"
    twos = [i for i, d in enumerate(TRUTH["dice"]) if d["face"] == 2]  # the four kept 2s, in the Two box
    # No calibration: the loop cannot split kept from rethrown dice and leaves the Extra Roll to a person.
    extra = table.throw(ScriptedReader(in_box=twos))
    assert extra.verdict == "no_decision"
    [waiting] = table.waiting()
    assert waiting["kind"] == "extra_roll" and waiting["dice_expected"] == 6
    assert sorted(d["index"] for d in waiting["dice"] if d["kept"]) == twos
    out = table.svc.ok("POST", "/v1/console/decisions", "dealer", 201, json=decision(waiting))
    thrown = sorted(d["face"] for i, d in enumerate(TRUTH["dice"]) if i not in twos)
    assert sorted(out["answer"]["faces"]) == thrown and out["answer"]["settled"] is True
    extra_roll = out["answer"]["round"]["extra_roll"]
    assert extra_roll["kept"] == 4 and extra_roll["new_matches"] == thrown.count(2)
