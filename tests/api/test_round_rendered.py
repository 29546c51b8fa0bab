"""A whole round on rendered video: the real service, the real reader, the settle detector (issue 8).

The committed round (tests/fixtures/round_clips/r0840-000000, made by `throwbox lab synth-round`; see its
LICENSE) is played as one continuous recording from its video files: the first roll (empty box, the
shaker over the dealer's edge, the throw), then the dealer's move of one kind, then, after the right move,
the Extra Roll. Nothing is scripted: the capture (the files, in order, media time running on) feeds the
settle detector limited to the throw box (the clip's camera stands in for the table's calibration), whose
events drive `api.live.LiveLoop` with `vision.reader.Reader` (committed models, one thread) and the service
on SQLite as the rules engine. What each step must give comes from round.json, the generator's truth:

- the first roll: one read, after the dice came to rest, its faces the true ones, posted; the round then
  waits for the Extra Roll (58 Pa. Code 593.4(e)), with the true winner and count;
- the dealer's move: exactly one `SettledWithoutThrow` (the hand was seen), after the hand left, and no
  read; its check names exactly the problems of the move (none for the right one) and a wrong move raises
  one `dealer_error` alert with the frame stored as evidence;
- the Extra Roll (after the right move): one read of the rethrown dice only (593.4(g)), and the rules
  engine settles it with the true additional matches (593.4(h)).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from api.db.session import Database
from api.live import LiveConfig, LiveLoop
from api.live_service import DatabaseRecorder, box_outline_px
from api.metrics import Metrics
from api.rules_door import RulesClient
from calibration.layout import LAYOUT_LABELS, ThrowBoxLayout
from datasets.format import camera_from_dict
from tests.api.conftest import Service, running_service
from vision.capture import Capture, CapturedFrame, Grab, VideoCaptureGrabber
from vision.judge.layout_check import DOUBT_CODES
from vision.settle import AtRest, SettleDetector, SettledWithoutThrow, SettleEvent
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Finding, Frame, Roll, Verdict

ROUND = Path(__file__).resolve().parents[1] / "fixtures" / "round_clips" / "r0840-000000"
TABLE = "RR1"
PROBLEMS = {  # the move's kind -> the problems the check must name, in its order
    "correct": [],
    "wrong_box": ["wrong_box", "missing_match"],
    "missing": ["missing_match", "match_left_behind"],
    "extra": ["wrong_face", "extra_dice"],
}


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ROUND / "round.json").read_text(encoding="utf-8"))
    assert doc["format"] == "throwbox-round/1"
    return doc


@pytest.fixture
def reader(committed_reader: Any) -> Any:
    return committed_reader


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    with running_service("sqlite", tmp_path / "data") as service:
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": TABLE, "game": "hrd10"})
        yield service


class OneRecording:
    """Video files that are one recording cut into pieces: played in order, media time running on, no cut
    (`ClipStarted`) between them. Remembers which file and which frame of it each frame was."""

    live = False
    description = "round clips"

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.where: list[tuple[str, int]] = []  # per frame delivered: (file name, frame index in it)
        self._frames: Iterator[Grab] | None = None

    def _play(self) -> Iterator[Grab]:
        offset_s = 0.0
        for path in self.paths:
            clip = VideoCaptureGrabber(str(path), live=False)
            clip.open()
            index = 0
            try:
                while (grab := clip.read()) is not None:
                    self.where.append((path.name, index))
                    index += 1
                    yield Grab(grab.image, offset_s + (grab.media_time_s or 0.0))
            finally:
                clip.close()
            offset_s += index / clip.fps

    def open(self) -> None:
        self._frames = self._play()

    def read(self) -> Grab | None:
        return None if self._frames is None else next(self._frames, None)

    def close(self) -> None:
        self._frames = None


def geometry_of(truth: dict[str, Any]) -> TableGeometry:
    """The round's camera as the table's calibration."""
    camera = camera_from_dict(truth["first_roll"]["final"]["camera"])
    return TableGeometry(camera=camera, layout=ThrowBoxLayout())


def detector_for(geometry: TableGeometry) -> tuple[SettleDetector, list[SettleEvent]]:
    """The settle detector on the throw box's floor, keeping the events that lead to a read or a check."""
    detector = SettleDetector(roi_xy=box_outline_px(geometry))
    events: list[SettleEvent] = []
    update = detector.update

    def recording(frame: CapturedFrame) -> list[SettleEvent]:
        out = update(frame)
        events.extend(e for e in out if isinstance(e, AtRest | SettledWithoutThrow))
        return out

    detector.update = recording  # type: ignore[method-assign]
    return detector, events


def play(
    svc: Service, reader: Any, truth: dict[str, Any], files: list[str]
) -> tuple[LiveLoop, list[Any], OneRecording]:
    """A round with an Extra Roll wager, no more bets, then `files` through the live loop to the end."""
    first = truth["first_roll"]
    rnd = svc.ok("POST", f"/v1/tables/{TABLE}/rounds", "dealer", 201)
    wagers = [
        {"seat": 1, "kind": "pip_street", "face": first["winner"], "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": first["match_count"] + 2, "amount": "5.00"},
        {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
    ]
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/no-more-bets", "dealer")
    geometry = geometry_of(truth)
    recording = OneRecording([ROUND / f for f in files])
    detector, events = detector_for(geometry)
    database = Database(svc.settings.resolved_database_url)
    loop = LiveLoop(
        config=LiveConfig(table_id=TABLE, expected_dice=10, calibration_id=f"round:{truth['round_id']}"),
        items=Capture(recording, table_id=TABLE, source_id="round"),
        detector=detector,
        reader=reader,
        rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"], backoff_s=0.01),
        recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:round-test"),
        geometry=geometry,
    )
    try:
        loop.run()
    finally:
        loop.rules.close()
        database.dispose()
    return loop, events, recording


def alerts(svc: Service, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = svc.ok("GET", f"/v1/alerts?table_id={TABLE}", "surveillance")
    return [a for a in found if a["kind"] == kind]


def check_first_roll(
    loop: LiveLoop, events: list[Any], recording: OneRecording, truth: dict[str, Any]
) -> None:
    first = truth["first_roll"]
    read = loop.reads[0]
    assert read.kind == "first_roll" and read.verdict == "valid", read
    assert sorted(read.faces) == sorted(first["faces"])
    at_rest = events[0]
    assert isinstance(at_rest, AtRest)
    clip, index = recording.where[at_rest.frame.seq]
    assert clip == "first.mp4" and index >= first["at_rest_frame"]  # never read before the dice stopped
    assert read.answer is not None and read.answer["phase"] == "awaiting_extra_roll"
    assert read.answer["round"]["first_roll"]["winner"] == first["winner"]
    assert read.answer["round"]["first_roll"]["match_count"] == first["match_count"]


MISSED_IN_BOX = pytest.mark.xfail(
    strict=True,
    reason="model accuracy, measured 21:45 UTC with the committed detector (2026-11-29T21:16Z): on the frame "
    "the box settles in after the hand (move_missing.mp4 frame 57) the detector finds 2 of the 3 aces in "
    "the Ace box; the left one scores at or just under its 0.35 threshold (found on 4 of the 22 frames "
    "55-76 after the hand left, score 0.35). The check still names the right problems; the count in the "
    "box is one short",
)
MOVE_CASES = [pytest.param(kind, marks=MISSED_IN_BOX) if kind == "missing" else kind for kind in PROBLEMS]


@pytest.mark.parametrize("kind", MOVE_CASES)
def test_593_4_e_the_dealers_move_on_rendered_video(
    kind: str, svc: Service, reader: Any, truth: dict[str, Any]
) -> None:
    move = truth["moves"][kind]
    loop, events, recording = play(svc, reader, truth, ["first.mp4", move["clip"]])
    check_first_roll(loop, events, recording, truth)
    assert len(loop.reads) == 1  # the move is never read as a throw
    (moved,) = events[1:]  # exactly one event after the first roll's: the box settled after the hand
    assert isinstance(moved, SettledWithoutThrow) and moved.intruder_seen
    clip, index = recording.where[moved.frame.seq]
    assert clip == move["clip"] and index > move["hand_frames"][1]

    layout = move["layout_move"]
    (check,) = loop.layout_checks
    assert check["frame_id"] == moved.frame.frame_id and check["box"] == LAYOUT_LABELS[layout["winner"]]
    # The problems that accuse the dealer are the move's, in order; beside them the reader may say it cannot
    # vouch for a die (a doubt: `unreadable`, ...), which asks a person to look and accuses no one. Since the
    # reader heeds its second opinions (docs/history/never-sure-2.md) a die it read before may be such a
    # doubt: one of the move's problems may then go unnamed, never one it did not make.
    reasons = [p["reason"] for p in check["problems"]]
    accusing = [r for r in reasons if r not in DOUBT_CODES]
    assert accusing == [r for r in PROBLEMS[kind] if r in accusing] and bool(accusing) == bool(PROBLEMS[kind])
    errors = alerts(svc, "dealer_error")
    if not PROBLEMS[kind]:
        assert errors == [] and (check["ok"] is True or set(reasons) <= set(DOUBT_CODES))
        return
    (alert,) = errors
    assert [p["reason"] for p in alert["data"]["problems"]] == reasons
    assert alert["data"]["expected_count"] == layout["match_count"]
    in_box = sum(1 for d in move["final"]["dice"] if d["layout_box"] == layout["winner"])
    assert alert["data"]["in_winner_box"] == in_box
    evidence = svc.call("GET", f"/v1/evidence/{alert['data']['evidence_sha256']}", "surveillance")
    assert evidence.status_code == 200
    shown = cv2.imdecode(np.frombuffer(evidence.content, np.uint8), cv2.IMREAD_COLOR)
    assert shown is not None and shown.shape == (480, 640, 3)


def test_593_4_g_h_a_whole_round_with_the_extra_roll_on_rendered_video(
    svc: Service, reader: Any, truth: dict[str, Any]
) -> None:
    extra = truth["extra_roll"]
    assert extra["after"] == "correct"
    loop, events, recording = play(svc, reader, truth, ["first.mp4", "move_correct.mp4", "extra.mp4"])
    check_first_roll(loop, events, recording, truth)
    assert [type(e) for e in events] == [AtRest, SettledWithoutThrow, AtRest]
    moved = loop.layout_checks[0]  # the right move: nothing accuses the dealer (a doubt asks a person)
    assert alerts(svc, "dealer_error") == []
    assert moved["ok"] is True or {p["reason"] for p in moved["problems"]} <= set(DOUBT_CODES)
    clip, index = recording.where[events[2].frame.seq]
    assert clip == "extra.mp4" and index >= extra["at_rest_frame"]

    (_, rethrow) = loop.reads
    assert rethrow.kind == "extra_roll" and rethrow.verdict == "valid", rethrow
    assert sorted(rethrow.faces) == sorted(extra["thrown_faces"])  # the rethrown dice only
    assert rethrow.answer is not None and rethrow.answer["settled"] is True
    summary = rethrow.answer["round"]["extra_roll"]
    assert (summary["kept"], summary["new_matches"], summary["final_count"]) == (
        len(extra["kept"]),
        extra["new_matches"],
        extra["final_count"],
    )
    stored = svc.ok("GET", f"/v1/reads/{rethrow.read_id}", "surveillance")
    assert stored["extra_roll"]["new_matches"] == extra["new_matches"]
    assert stored["extra_roll"]["verdict"] == "valid"


# ------------------------------------------------------------------------------ no models needed below
def die(face: int, box: str | None, x: float) -> DieReading:
    cand = DieCandidate(
        box_xyxy=(x, 0.0, x + 20.0, 20.0),
        top_quad=((x, 0.0), (x + 20.0, 0.0), (x + 20.0, 20.0), (x, 20.0)),
        score=0.9,
    )
    probs = tuple(1.0 if face == k else 0.0 for k in range(1, 7))
    return DieReading(candidate=cand, face=face, face_probs=probs, layout_box=box)


class Scripted:
    """Reads each frame as the next scripted roll."""

    def __init__(self, rolls: list[tuple[list[DieReading], tuple[Finding, ...]]]) -> None:
        self.rolls = rolls

    def read(self, frame: Frame, *, expected_dice: int | None = None, geometry: Any = None) -> Roll:
        dice, findings = self.rolls.pop(0)
        verdict = Verdict.VALID
        for v in (Verdict.INVALID, Verdict.VOID, Verdict.NO_DECISION):
            if any(f.verdict is v for f in findings):
                verdict = v
                break
        faces = tuple(d.face for d in dice if d.face is not None)
        return Roll(
            dice=tuple(dice),
            verdict=verdict,
            reasons=tuple(f.detail for f in findings),
            expected_dice=expected_dice,
            faces=faces,
            frame_id=frame.frame_id,
            table_id=frame.table_id,
            models={"detector": "scripted"},
            timing_ms={},
            findings=findings,
        )


def at_rest(n: int) -> AtRest:
    frame = CapturedFrame(
        image=np.zeros((48, 64, 3), np.uint8),
        frame_id=f"{TABLE}-scripted-{n}",
        table_id=TABLE,
        captured_at=datetime.now(UTC),
        seq=n,
        source_id="test",
        monotonic_s=float(n),
    )
    return AtRest(frame, throw_index=n, moving_since_s=n - 0.5, still_since_s=n - 0.3)


FIRST = [1, 3, 6, 2, 5, 3, 1, 1, 5, 1]  # four aces
KEPT = [die(1, "Ace", 30.0 * i) for i in range(4)]
RETHROWN = [die(f, None, 200.0 + 30.0 * i) for i, f in enumerate([5, 5, 1, 1, 5, 2])]
ON_KEPT = Finding(
    Verdict.INVALID, "die_on_die", (2, 3), "the boxes of dice 2 and 3 overlap: one lies on the other"
)
ON_THROWN = Finding(
    Verdict.INVALID, "die_on_die", (3, 6), "the boxes of dice 3 and 6 overlap: one lies on the other"
)
NOT_A_DIE_ON_KEPT = Finding(
    Verdict.NO_DECISION,
    "object_unclear",
    (2,),
    "die 2 looks like no die to the die-state classifier (p=1.00)",
)


@pytest.mark.parametrize(
    ("findings", "verdict"),
    [
        (
            (ON_KEPT,),
            "valid",
        ),  # two kept dice side by side in the box taken for one on the other: not the throw's
        ((ON_KEPT, ON_THROWN), "invalid"),  # a rethrown die on a kept one: the Extra Roll is invalid
        ((), "valid"),
        # a "kept die" that may be no die at all (a chip in the box): never set aside, a person looks
        ((NOT_A_DIE_ON_KEPT,), "no_decision"),
    ],
    ids=["kept-dice-only", "a-rethrown-die-too", "none", "maybe-no-die-among-the-kept"],
)
def test_593_4_g_what_the_judge_finds_about_the_kept_dice_alone_does_not_void_the_extra_roll(
    findings: tuple[Finding, ...], verdict: str, svc: Service, truth: dict[str, Any]
) -> None:
    rnd = svc.ok("POST", f"/v1/tables/{TABLE}/rounds", "dealer", 201)
    wagers = [
        {"seat": 1, "kind": "pip_street", "face": 1, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
        {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
    ]
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{rnd['id']}/no-more-bets", "dealer")
    reader = Scripted(
        [([die(f, None, 30.0 * i) for i, f in enumerate(FIRST)], ()), ([*KEPT, *RETHROWN], findings)]
    )
    database = Database(svc.settings.resolved_database_url)
    loop = LiveLoop(
        config=LiveConfig(table_id=TABLE, expected_dice=10, calibration_id="test-cal"),
        items=[],
        detector=SettleDetector(),
        reader=reader,
        rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"], backoff_s=0.01),
        recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:round-test"),
        geometry=geometry_of(truth),
    )
    try:
        assert loop.handle_throw(at_rest(1)).answer["phase"] == "awaiting_extra_roll"  # type: ignore[index]
        rethrow = loop.handle_throw(at_rest(2))
    finally:
        loop.rules.close()
        database.dispose()
    assert rethrow.verdict == verdict
    assert sorted(rethrow.faces) == [1, 1, 2, 5, 5, 5]
    stored = svc.ok("GET", f"/v1/reads/{rethrow.read_id}", "surveillance")
    set_aside = [f["reason"] for f in stored["extra_roll"]["kept_dice_findings_set_aside"]]
    assert set_aside == (["die_on_die"] if ON_KEPT in findings else [])
    assert stored["extra_roll"]["verdict"] == verdict  # what was posted, beside the read's own verdict
    if verdict == "valid":
        assert rethrow.answer is not None and rethrow.answer["settled"] is True
        assert rethrow.answer["round"]["extra_roll"]["new_matches"] == 2
    else:
        assert rethrow.answer is not None and rethrow.answer["settled"] is False
        assert rethrow.answer["phase"] == "awaiting_extra_roll"  # the Extra Roll is thrown again
