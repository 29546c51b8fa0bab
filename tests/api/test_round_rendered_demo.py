"""The demo table plays a whole rendered round now and then (api/demo_rounds): the move, the Extra Roll.

As `throwbox serve --demo` sets it up (`api.demo_table`: `PacedDemoGrabber` with rounds, the croupier, a
settle detector on the whole frame, each clip's own camera as its calibration), on the real service. The
throw clips between rounds are read as their ground truth (`video.json`: what they read as is the business
of tests/api/test_live.py); the rounds are read by the whole reader (committed models, one thread).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.db.session import Database
from api.demo_table import (
    DEMO_CLIPS,
    DEMO_EXTRA_ROLL_WAGER,
    DEMO_ROUNDS,
    DEMO_WAGERS,
    DemoCroupier,
    PacedDemoGrabber,
    clip_geometry,
)
from api.live import LiveConfig, LiveLoop
from api.live_service import DatabaseRecorder
from api.metrics import Metrics
from api.rules_door import RulesClient
from tests.api.conftest import Service, running_service
from vision.capture import Capture, CapturedFrame, CaptureEvent, ClipStarted, SourceSpecError
from vision.judge.layout_check import DOUBT_CODES
from vision.settle import SettleDetector
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Finding, Frame, Roll, Verdict

TABLE = "DR1"
ROUND = DEMO_ROUNDS / "r0840-000000"


def played(grabber: PacedDemoGrabber) -> list[tuple[float, str | None]]:
    """(scene time, clip start) of every frame the grabber gives."""
    grabber.open()
    out = []
    while (grab := grabber.read()) is not None:
        out.append((grab.media_time_s, grab.clip_start))
    grabber.close()
    return out


def test_a_round_is_played_after_every_n_throw_clips_cut_only_where_the_picture_jumps() -> None:
    grabber = PacedDemoGrabber(DEMO_CLIPS, gap_s=3.0, loops=1, rounds_dir=DEMO_ROUNDS, round_every=2)
    frames = played(grabber)
    starts = [Path(c).relative_to(Path(c).parents[1]).as_posix() for _, c in frames if c is not None]
    clips = sorted(p.relative_to(DEMO_CLIPS).as_posix() for p in DEMO_CLIPS.glob("*/throw.mp4"))
    # Two throw clips, then the round (a cut only where the picture jumps: its first roll, and the
    # Extra Roll after the wrong move, which was rendered after the right one), then the other two.
    assert starts == [*clips[:2], "r0840-000000/first.mp4", "r0840-000000/extra.mp4", *clips[2:]]
    assert grabber.rounds_played == 1
    times = [t for t, _ in frames]
    assert all(b > a for a, b in itertools.pairwise(times))  # scene time only moves on
    doc = json.loads((ROUND / "round.json").read_text(encoding="utf-8"))
    round_frames = (
        doc["first_roll"]["frames"] + doc["moves"]["wrong_box"]["frames"] + doc["extra_roll"]["frames"]
    )
    throw_frames = len(frames) - round_frames
    assert throw_frames > 0
    first = next(i for i, (_, c) in enumerate(frames) if c and c.endswith("first.mp4"))
    assert frames[first][0] - frames[first - 1][0] == pytest.approx(3.0, abs=0.05)  # the pause before it
    after = first + round_frames
    assert frames[after][1] is not None and frames[after][0] - frames[after - 1][0] >= 3.0


def test_rounds_need_round_folders() -> None:
    with pytest.raises(SourceSpecError, match="no rounds"):
        PacedDemoGrabber(DEMO_CLIPS, rounds_dir=DEMO_CLIPS)


def test_a_rounds_clips_share_its_camera_as_their_calibration() -> None:
    geometry, cal_id = clip_geometry(str(ROUND / "first.mp4"))
    again, _ = clip_geometry(str(ROUND / "extra.mp4"))
    assert geometry is not None and cal_id == "demo-round:r0840-000000" and again == geometry


@pytest.fixture
def reader(committed_reader: Any) -> Any:
    return committed_reader


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    with running_service("sqlite", tmp_path / "data") as service:
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": TABLE, "game": "hrd10"})
        yield service


class ThrowClipsAsTruth:
    """The demo's throw clips read as their ground truth; a round's frames by the whole reader."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.clip: Path | None = None
        self.round_reads = 0

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        assert self.clip is not None
        meta = self.clip.parent / "video.json"
        if not meta.is_file():
            self.round_reads += 1
            roll: Roll = self.reader.read(frame, expected_dice=expected_dice, geometry=geometry)
            return roll
        faces = tuple(json.loads(meta.read_text(encoding="utf-8"))["final"]["faces"])
        dice = tuple(
            DieReading(
                candidate=DieCandidate(
                    box_xyxy=(30.0 * i, 0.0, 30.0 * i + 20, 20.0),
                    top_quad=((30.0 * i, 0.0), (30.0 * i + 20, 0.0), (30.0 * i + 20, 20.0), (30.0 * i, 20.0)),
                    score=0.9,
                ),
                face=f,
                face_probs=tuple(1.0 if f == k else 0.0 for k in range(1, 7)),
            )
            for i, f in enumerate(faces)
        )
        return Roll(
            dice=dice,
            verdict=Verdict.VALID,
            reasons=(),
            expected_dice=expected_dice,
            faces=faces,
            frame_id=frame.frame_id,
            table_id=frame.table_id,
            models={"detector": "video.json"},
            timing_ms={},
        )


class Clips:
    """Follows the capture's clip starts (so the reader knows which clip a frame is from)."""

    def __init__(self, items: Any, reader: ThrowClipsAsTruth) -> None:
        self.items, self.reader = items, reader

    def __iter__(self) -> Iterator[CapturedFrame | CaptureEvent]:
        for item in self.items:
            if isinstance(item, ClipStarted) and not item.clip.endswith("extra.mp4"):
                self.reader.clip = Path(item.clip)
            yield item


def alerts(svc: Service, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = svc.ok("GET", f"/v1/alerts?table_id={TABLE}", "surveillance")
    return [a for a in found if a["kind"] == kind]


class ExtraRollsLeftToAPerson(ThrowClipsAsTruth):
    """As ThrowClipsAsTruth, but each round's Extra Roll (its third read) comes back `no_decision`, as from a
    reader unsure of a die: what the croupier must then key."""

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        roll = super().read(frame, expected_dice=expected_dice, geometry=geometry)
        assert self.clip is not None
        if (self.clip.parent / "video.json").is_file() or self.round_reads % 3:
            return roll
        unsure = Finding(
            verdict=Verdict.NO_DECISION, reason="face_uncertain", die_ids=(), detail="a die is unsure (test)"
        )
        return replace(roll, verdict=Verdict.NO_DECISION, reasons=(unsure.detail,), findings=(unsure,))


def _play_demo(
    svc: Service, reader: Any, *, leave_extra_rolls: bool = False
) -> tuple[LiveLoop, DemoCroupier, PacedDemoGrabber, ThrowClipsAsTruth]:
    """The demo table with a round after every throw clip (moves: wrong box, right, wrong box), to the end."""
    grabber = PacedDemoGrabber(DEMO_CLIPS, gap_s=0.5, loops=1, rounds_dir=DEMO_ROUNDS, round_every=1)
    truthful = ExtraRollsLeftToAPerson(reader) if leave_extra_rolls else ThrowClipsAsTruth(reader)
    database = Database(svc.settings.resolved_database_url)
    with httpx.Client(base_url=svc.base_url, headers=svc.headers("dealer"), timeout=10.0) as client:
        croupier = DemoCroupier(client, table_id=TABLE)

        def geometry_for(clip: str) -> TableGeometry | None:
            geometry, cal_id = clip_geometry(clip)
            loop.calibration_id = cal_id
            return geometry

        loop = LiveLoop(
            config=LiveConfig(table_id=TABLE, expected_dice=10),
            items=Clips(Capture(grabber, table_id=TABLE, source_id="demo"), truthful),
            detector=SettleDetector(),
            reader=truthful,
            rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"], backoff_s=0.01),
            recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:demo-test"),
            geometry_for_clip=geometry_for,
            on_clip=croupier.prepare,
        )
        try:
            loop.run()
        finally:
            loop.rules.close()
            database.dispose()
    return loop, croupier, grabber, truthful


def _rounds_played_to_the_end(svc: Service, loop: LiveLoop, truthful: ThrowClipsAsTruth) -> None:
    """Three rounds and four throw clips, in order; every round bought with an Extra Roll settled."""
    kinds = [r.kind for r in loop.reads]
    assert kinds == ["first_roll", "first_roll", "extra_roll"] * 3 + ["first_roll"], loop.reads
    # The rounds were bought with an Extra Roll wager; the throw clips' rounds were not.
    rounds = svc.ok("GET", f"/v1/rounds?table_id={TABLE}", "surveillance")
    extra_rolls = [r for r in rounds if DEMO_EXTRA_ROLL_WAGER["kind"] in {w["kind"] for w in r["wagers"]}]
    assert len(rounds) == 7 and len(extra_rolls) == 3
    assert all(len(r["wagers"]) == len(DEMO_WAGERS) + 1 for r in extra_rolls)
    assert all(r["settled_at"] is not None for r in extra_rolls)
    assert truthful.round_reads == 9  # first roll, the move, the Extra Roll, in each of the three rounds


def test_the_demo_plays_a_round_the_wrong_move_alerted_then_a_right_one_each_extra_roll_settled(
    svc: Service, reader: Any
) -> None:
    loop, croupier, grabber, truthful = _play_demo(svc, reader)
    assert grabber.rounds_played == 3  # after throw clips 1, 2 and 3: wrong box, right, wrong box
    _rounds_played_to_the_end(svc, loop, truthful)
    doc = json.loads((ROUND / "round.json").read_text(encoding="utf-8"))
    for r in (r for r in loop.reads if r.kind == "extra_roll"):
        assert r.verdict == "valid" and sorted(r.faces) == sorted(doc["extra_roll"]["thrown_faces"])
        assert r.answer is not None and r.answer["settled"] is True
        assert r.answer["round"]["extra_roll"]["final_count"] == doc["extra_roll"]["final_count"]
    # The wrong box twice, the right one between: only the right move accuses no one (the reader may doubt
    # a die there, which asks a person to look).
    accusing = [[p for p in c["problems"] if p["reason"] not in DOUBT_CODES] for c in loop.layout_checks]
    assert [bool(a) for a in accusing] == [True, False, True]
    wrong = alerts(svc, "dealer_error")
    assert len(wrong) == 2 and all(a["data"]["problems"][0]["reason"] == "wrong_box" for a in wrong)
    assert croupier.rolls_keyed == 0


def test_an_extra_roll_left_to_a_person_is_keyed_by_the_croupier_and_the_demo_moves_on(
    svc: Service, reader: Any
) -> None:
    """Before the croupier keyed such a throw, one Extra Roll left to a person held the demo table in that
    round for good: every later throw was read as its Extra Roll."""
    loop, croupier, _, truthful = _play_demo(svc, reader, leave_extra_rolls=True)
    extra_reads = [r for r in loop.reads if r.kind == "extra_roll"]
    assert [r.verdict for r in extra_reads] == ["no_decision"] * 3
    assert all(r.answer is not None and r.answer["settled"] is False for r in extra_reads)
    assert croupier.rolls_keyed == 3
    doc = json.loads((ROUND / "round.json").read_text(encoding="utf-8"))
    keyed = [r for r in svc.ok("GET", f"/v1/tables/{TABLE}/rolls", "surveillance") if r["source"] == "dealer"]
    assert len(keyed) == 3
    for roll in keyed:
        assert roll["applied"] and roll["settled"] and roll["faces"] == doc["extra_roll"]["thrown_faces"]
    _rounds_played_to_the_end(svc, loop, truthful)


def test_the_croupier_keys_only_a_round_whose_first_roll_is_the_demo_rounds() -> None:
    """A round the reader's first roll put in another state (other faces) is not the demo round's: keying
    its truth would settle the wrong round, so the croupier refuses (the loop raises `round_not_ready`)."""
    with httpx.Client(base_url="http://127.0.0.1:9") as client:  # never called
        croupier = DemoCroupier(client, table_id=TABLE)
        waiting = {"id": 7, "summary": {"first_roll": {"faces": [1] * 10}}}
        with pytest.raises(RuntimeError, match="the croupier cannot key it"):
            croupier._key_extra_roll(waiting, ROUND)
        with pytest.raises(RuntimeError, match="the croupier cannot key it"):
            croupier._key_extra_roll({"id": 7, "summary": {}}, ROUND)  # no first roll held
    assert croupier.rolls_keyed == 0
