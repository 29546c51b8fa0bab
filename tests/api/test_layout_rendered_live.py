"""The live loop on a rendered frame of the dealer's move (58 Pa. Code 593.4(e)): the service's alert or none.

A round with an Extra Roll wager is open at the real service; roll one is posted (its faces are the
committed fixture's recorded first roll: that state is not rendered, so the roll is scripted), which leaves
the round waiting for the Extra Roll; then the box settles after the dealer's hand on the committed frame
of the move (tests/fixtures/layout), which the loop reads with the whole reader (`vision.reader.Reader`:
the committed detector, face and die-state models and the judge), with the frame's calibration placing
each die in its layout box, and checks.

Until the detector of 2026-11-29T21:16Z (trained with the layout scenes) it found too few of the boxed dice,
and this file gave the reader the label's die boxes; with that detector the whole reader reads all four
frames (checked 21:48 UTC), so nothing stands aside any more. What this file shows: a wrong move on a
rendered frame is a `dealer_error` alert naming the problems, with that frame stored as evidence; the
right move raises none. tests/api/test_round_rendered.py does the same on rendered video of the move.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from api.db.session import Database
from api.live import LiveConfig, LiveLoop
from api.live_service import DatabaseRecorder
from api.metrics import Metrics
from api.rules_door import RulesClient
from calibration.layout import LAYOUT_LABELS, ThrowBoxLayout
from datasets.format import SceneTruth, read_scene
from tests.api.conftest import Service, running_service
from vision.capture import CapturedFrame
from vision.settle import AtRest, SettleDetector, SettledWithoutThrow
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Frame, Roll, Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
TABLE = "LR1"


@pytest.fixture
def reader(committed_reader: Any) -> Any:
    return committed_reader


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    with running_service("sqlite", tmp_path / "data") as service:
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": TABLE, "game": "hrd10"})
        yield service


def captured(n: int, image: np.ndarray) -> CapturedFrame:
    return CapturedFrame(
        image=image,
        frame_id=f"{TABLE}-layout-{n}",
        table_id=TABLE,
        captured_at=datetime.now(UTC),
        seq=n,
        source_id="test",
        monotonic_s=float(n),
    )


def square(x: float) -> DieCandidate:
    """A made-up die box for a scripted die."""
    corners = ((x, 0.0), (x + 20.0, 0.0), (x + 20.0, 20.0), (x, 20.0))
    return DieCandidate(box_xyxy=(x, 0.0, x + 20.0, 20.0), top_quad=corners, score=1.0)


class FirstRollThenModels:
    """Roll one as scripted faces; every later frame through the whole reader."""

    def __init__(self, reader: Any, scene: SceneTruth) -> None:
        assert scene.layout_move is not None
        self.reader = reader
        self.first = tuple(int(f) for f in scene.layout_move.first_faces if f is not None)
        self.reads = 0

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        self.reads += 1
        if self.reads == 1:
            dice = tuple(
                DieReading(
                    candidate=square(30.0 * i),
                    face=f,
                    face_probs=tuple(1.0 if k == f else 0.0 for k in range(1, 7)),
                )
                for i, f in enumerate(self.first)
            )
            return Roll(
                dice=dice,
                verdict=Verdict.VALID,
                reasons=(),
                expected_dice=expected_dice,
                faces=self.first,
                frame_id=frame.frame_id,
                table_id=frame.table_id,
                models={"detector": "scripted first roll"},
                timing_ms={"total": 0.0},
            )
        roll: Roll = self.reader.read(frame, expected_dice=expected_dice, geometry=geometry)
        return roll


CASES = [  # fixture, the problems the check must name, in its order
    ("correct", []),
    ("wrong_box", ["wrong_box", "missing_match"]),
    ("missing", ["missing_match", "match_left_behind"]),
    ("extra", ["wrong_face", "extra_dice"]),
]


@contextmanager
def after_first_roll(svc: Service, scene: SceneTruth, reader: FirstRollThenModels) -> Iterator[LiveLoop]:
    """A calibrated live loop whose table has posted roll one and waits for the dealer's move."""
    move = scene.layout_move
    assert move is not None
    rnd = svc.ok("POST", f"/v1/tables/{TABLE}/rounds", "dealer", 201)
    wagers = [
        {"seat": 1, "kind": "pip_street", "face": move.winner, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},  # above roll one's count: still live
        {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
    ]
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/no-more-bets", "dealer")
    database = Database(svc.settings.resolved_database_url)
    loop = LiveLoop(
        config=LiveConfig(table_id=TABLE, expected_dice=10, calibration_id="fixture-camera"),
        items=[],
        detector=SettleDetector(),
        reader=reader,
        rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"], backoff_s=0.01),
        recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:layout-test"),
        geometry=TableGeometry(camera=scene.camera, layout=ThrowBoxLayout()),
    )
    try:
        blank = captured(1, np.zeros((480, 640, 3), np.uint8))
        first = loop.handle_throw(AtRest(blank, throw_index=0, moving_since_s=0.0, still_since_s=0.7))
        assert first.answer is not None and first.answer["phase"] == "awaiting_extra_roll", first
        assert first.answer["round"]["first_roll"]["winner"] == move.winner
        assert first.answer["round"]["first_roll"]["match_count"] == move.match_count
        yield loop
    finally:
        loop.rules.close()
        database.dispose()


def settled_after_hand(frame: CapturedFrame) -> SettledWithoutThrow:
    return SettledWithoutThrow(frame, still_since_s=1.5, intruder_seen=True, empty=False)


def alerts(svc: Service, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = svc.ok("GET", f"/v1/alerts?table_id={TABLE}", "surveillance")
    return [a for a in found if a["kind"] == kind]


@pytest.mark.parametrize(("case", "reasons"), CASES, ids=[c[0] for c in CASES])
def test_593_4_e_dealer_move_on_a_rendered_frame_in_the_live_loop(
    case: str, reasons: list[str], svc: Service, reader: Any
) -> None:
    scene = read_scene(FIXTURES / f"{case}.json")
    move = scene.layout_move
    assert move is not None
    image = cv2.imread(str(FIXTURES / scene.image), cv2.IMREAD_COLOR)
    assert image is not None
    moved = captured(2, image)
    with after_first_roll(svc, scene, FirstRollThenModels(reader, scene)) as loop:
        loop.handle_dealer_move(settled_after_hand(moved))

    (check,) = loop.layout_checks
    assert check["frame_id"] == moved.frame_id and check["box"] == LAYOUT_LABELS[move.winner]
    assert [p["reason"] for p in check["problems"]] == reasons
    errors = alerts(svc, "dealer_error")
    if not reasons:
        assert check["ok"] is True and errors == []
        return
    (alert,) = errors
    assert [p["reason"] for p in alert["data"]["problems"]] == reasons
    assert alert["data"]["box"] == LAYOUT_LABELS[move.winner]
    assert alert["data"]["expected_count"] == move.match_count
    assert alert["data"]["in_winner_box"] == sum(1 for t in scene.dice if t.layout_box == move.winner)
    # The evidence is the rendered frame of the move (annotated), stored at the service.
    evidence = svc.call("GET", f"/v1/evidence/{alert['data']['evidence_sha256']}", "surveillance")
    assert evidence.status_code == 200
    shown = cv2.imdecode(np.frombuffer(evidence.content, np.uint8), cv2.IMREAD_COLOR)
    assert shown is not None and shown.shape == image.shape
    stored = svc.ok("GET", f"/v1/reads/{alert['data']['read_id']}", "surveillance")
    assert stored["layout"]["problems"] == alert["data"]["problems"]


class ReaderDiesAfterFirstRoll(FirstRollThenModels):
    """Roll one as scripted; the reader raises on every later frame."""

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        if self.reads == 0:
            return super().read(frame, expected_dice=expected_dice, geometry=geometry)
        self.reads += 1
        raise RuntimeError("model session died")


def test_a_reader_failure_on_the_dealers_move_is_an_alert_not_a_dead_loop(svc: Service) -> None:
    """No models needed: the move's frame cannot be read, which is said (read_failed), not raised."""
    scene = read_scene(FIXTURES / "wrong_box.json")
    reader = ReaderDiesAfterFirstRoll(None, scene)
    with after_first_roll(svc, scene, reader) as loop:
        loop.handle_dealer_move(settled_after_hand(captured(2, np.zeros((480, 640, 3), np.uint8))))
        loop.handle_dealer_move(settled_after_hand(captured(3, np.zeros((480, 640, 3), np.uint8))))
    (failed,) = alerts(svc, "read_failed")
    assert "layout box is not checked" in failed["message"] and "model session died" in failed["message"]
    assert failed["data"]["frame_id"] == f"{TABLE}-layout-2"
    assert reader.reads == 2  # roll one, then the move once: the same move is not read again
    assert loop.layout_checks == [] and alerts(svc, "dealer_error") == []
