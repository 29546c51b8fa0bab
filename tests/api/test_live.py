"""The live table loop against the real service: the shipped synthetic throw clips (release to rest, with
exact ground truth in video.json) through the capture, the settle detector and a stand-in reader, posted to
`POST /v1/tables/{id}/rolls`; and every alert: camera lost, the dealer's move to the layout box, a wrong
dealer call, a wrong payout, a roll the rules engine refuses.

The reader here is a stand-in (`TruthReader`: the clip's ground-truth faces, or readings built by a test):
these tests are about the loop, not about the reader's models, which have their own tests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import httpx
import numpy as np
import pytest

from api.db.session import Database
from api.demo_table import (
    DEMO_CLIPS,
    DEMO_WAGERS,
    DemoCroupier,
    PacedDemoGrabber,
    RoundEndedError,
    clip_geometry,
)
from api.live import LiveConfig, LiveLoop, StoredRead, _Pending
from api.live_service import DatabaseRecorder
from api.metrics import Metrics
from api.rules_door import RollRejectedError, RulesClient, RulesUnreachableError
from api.schemas.rolls import RollSubmission
from tests.api.conftest import Service, running_service
from vision.capture import Capture, CaptureConfig, CapturedFrame, CaptureEvent, ClipStarted, Grab
from vision.judge.exposure import measure_exposure
from vision.settle import AtRest, SettleDetector, SettledWithoutThrow
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Frame, Roll, Verdict

CLIPS = sorted(DEMO_CLIPS.glob("*/throw.mp4"))
TABLE = "L1"


def truth(clip: Path) -> dict[str, Any]:
    """The clip's video.json."""
    doc: dict[str, Any] = json.loads((clip.parent / "video.json").read_text(encoding="utf-8"))
    return doc


def die(face: int | None, box: str | None = None, x: float = 0.0) -> DieReading:
    probs = tuple(1.0 if face == k else 0.0 for k in range(1, 7)) if face else (1 / 6,) * 6
    cand = DieCandidate(
        box_xyxy=(x, 0.0, x + 20.0, 20.0),
        top_quad=((x, 0.0), (x + 20.0, 0.0), (x + 20.0, 20.0), (x, 20.0)),
        score=0.9,
    )
    return DieReading(candidate=cand, face=face, face_probs=probs, uncertain=face is None, layout_box=box)


def roll_of(dice: Sequence[DieReading], frame: Frame, *, verdict: Verdict = Verdict.VALID) -> Roll:
    """A made-up read of `frame`, carrying the frame's exposure as the reader measures it."""
    faces = tuple(d.face for d in dice if d.face is not None)
    return Roll(
        dice=tuple(dice),
        verdict=verdict,
        reasons=() if verdict is Verdict.VALID else ("made up for the test",),
        expected_dice=10,
        faces=faces,
        frame_id=frame.frame_id,
        table_id=frame.table_id,
        models={"detector": "stand-in"},
        timing_ms={"total": 0.0},
        exposure=measure_exposure(frame.image),
    )


class TruthReader:
    """Reads each frame as the next scripted list of dice (or the current clip's ground-truth faces)."""

    def __init__(self, script: Sequence[Sequence[DieReading]] = ()) -> None:
        self.script = list(script)
        self.frames: list[Frame] = []
        self.expected: list[int | None] = []  # the count of dice each read was asked for
        self.clip: Path | None = None

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        self.frames.append(frame)
        self.expected.append(expected_dice)
        if self.script:
            return roll_of(self.script.pop(0), frame)
        assert self.clip is not None
        faces = truth(self.clip)["final"]["faces"]
        return roll_of([die(f, x=30.0 * i) for i, f in enumerate(faces)], frame)


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    with running_service("sqlite", tmp_path / "data") as service:
        service.ok("POST", "/v1/tables", "admin", 201, json={"id": TABLE, "game": "hrd10"})
        yield service


@pytest.fixture
def make_loop(svc: Service) -> Iterator[Any]:
    """`make_loop(items, reader, geometry=..., **LiveLoop options)`; closes what it opened."""
    # The service's own database, opened a second time (SQLite file), as the service's recorder uses it.
    database = Database(svc.settings.resolved_database_url)
    made: list[LiveLoop] = []

    def make(
        items: Any, reader: TruthReader, *, geometry: TableGeometry | None = None, **kwargs: Any
    ) -> LiveLoop:
        loop = LiveLoop(
            config=LiveConfig(
                table_id=TABLE, expected_dice=10, calibration_id="test-cal" if geometry else None
            ),
            items=items,
            detector=SettleDetector(),
            reader=reader,
            rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"], backoff_s=0.01),
            recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:live-test"),
            geometry=geometry,
            **kwargs,
        )
        made.append(loop)
        return loop

    yield make
    for loop in made:
        loop.stop()
        loop.rules.close()
    database.dispose()


def dealer(svc: Service) -> httpx.Client:
    return httpx.Client(base_url=svc.base_url, headers=svc.headers("dealer"), timeout=10.0)


def alerts(svc: Service, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = svc.ok("GET", f"/v1/alerts?table_id={TABLE}", "surveillance")
    return [a for a in found if a["kind"] == kind]


class Tracked:
    """Wraps the capture: remembers each frame's clip and its index in the clip."""

    def __init__(self, items: Any) -> None:
        self.items = items
        self.where: dict[str, tuple[Path, int]] = {}

    def __iter__(self) -> Iterator[CapturedFrame | CaptureEvent]:
        clip: Path | None = None
        index = 0
        for item in self.items:
            if isinstance(item, ClipStarted):
                clip, index = Path(item.clip), 0
            elif isinstance(item, CapturedFrame):
                assert clip is not None
                self.where[item.frame_id] = (clip, index)
                index += 1
            yield item


def test_one_read_per_throw_none_while_moving_each_posted_and_settled(svc: Service, make_loop: Any) -> None:
    assert len(CLIPS) == 4
    capture = Capture(PacedDemoGrabber(DEMO_CLIPS, gap_s=0.0, loops=1), table_id=TABLE, source_id="demo")
    tracked = Tracked(capture)
    reader = TruthReader()
    with dealer(svc) as client:
        croupier = DemoCroupier(client, table_id=TABLE)

        def on_clip(clip: str) -> None:
            reader.clip = Path(clip)
            croupier.prepare(clip)

        loop = make_loop(tracked, reader, on_clip=on_clip)
        loop.run()
    # One read per throw, and never before the ground truth's first frame at rest.
    assert len(loop.reads) == len(CLIPS)
    read_clips = [tracked.where[r.roll_id][0] for r in loop.reads]
    assert read_clips == CLIPS
    for r in loop.reads:
        clip, index = tracked.where[r.roll_id]
        assert index >= truth(clip)["at_rest_frame"], (clip, index)
        assert r.error is None and r.answer is not None
        assert r.answer["settled"] is True  # no Extra Roll wager among the demo's: roll one settles
        assert r.faces == tuple(truth(clip)["final"]["faces"])
    # The service has each roll (by the frame id), each settled round, and each on the event stream.
    rolls = svc.ok("GET", f"/v1/tables/{TABLE}/rolls", "surveillance")
    assert sorted(r["roll_id"] for r in rolls) == sorted(r.roll_id for r in loop.reads)
    rounds = svc.ok("GET", f"/v1/rounds?table_id={TABLE}", "surveillance")
    assert len(rounds) == 4 and all(r["settlement"] is not None for r in rounds)
    assert all(len(r["wagers"]) == len(DEMO_WAGERS) for r in rounds)
    events = svc.call("GET", f"/v1/events?follow=false&table_id={TABLE}&types=roll,read", "surveillance").text
    assert events.count("event: roll") == 4 and events.count("event: read") == 4
    # Posting again (a retry after a lost answer) is answered from the first, applied once.
    again = loop.rules.post_roll(
        TABLE,
        RollSubmission(
            roll_id=loop.reads[0].roll_id,
            source="reader",
            verdict="valid",
            faces=list(loop.reads[0].faces),
            reasons=[],
            evidence_sha256=loop.reads[0].evidence_sha256,
        ),
    )
    assert again["duplicate"] is True
    # Each read kept its annotated evidence frame, which the roll refers to.
    stored = svc.ok("GET", f"/v1/rolls/{loop.reads[0].roll_id}", "surveillance")
    assert stored["verdict"] == "valid"
    frame = svc.call("GET", f"/v1/evidence/{loop.reads[0].evidence_sha256}", "surveillance")
    assert frame.status_code == 200 and frame.headers["content-type"] == "image/jpeg"
    # Latency from rest to the posted result is measured for every throw.
    assert all(250.0 <= r.settle_wait_ms <= 400.0 and r.process_ms > 0 for r in loop.reads)


class StallingGrabber:
    """A live camera playing two clips: mid-way through the first throw it stops delivering for
    `stall_s`, then resumes; the second clip is a fresh throw."""

    live = True

    def __init__(self, clips: Sequence[Path], *, stall_after: int, stall_s: float) -> None:
        self.frames: list[tuple[np.ndarray, str | None]] = []
        for clip in clips:
            cap = cv2.VideoCapture(str(clip))
            first = True
            while True:
                ok, image = cap.read()
                if not ok:
                    break
                self.frames.append((image, str(clip) if first else None))
                first = False
            cap.release()
        # Then the box at rest for a second more, with a sensor's noise (bit-identical frames are a freeze).
        rng = np.random.default_rng(0)
        last = self.frames[-1][0]
        for _ in range(30):
            noise = rng.integers(0, 2, size=last.shape, dtype=np.uint8)
            self.frames.append((cv2.add(last, noise), None))
        self.description = "stalling test camera"
        self.stall_after = stall_after
        self.stall_s = stall_s
        self.index = 0
        self.stalled_at: float | None = None
        self.next_s = 0.0

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self) -> Grab | None:
        now = time.monotonic()
        if self.index == self.stall_after:
            if self.stalled_at is None:
                self.stalled_at = now
            if now - self.stalled_at < self.stall_s:
                time.sleep(0.01)
                return None
            self.stall_after = -1
        if self.index >= len(self.frames):
            return None
        if now < self.next_s:  # a 30 fps camera
            time.sleep(self.next_s - now)
        self.next_s = time.monotonic() + 1 / 30
        image, clip = self.frames[self.index]
        self.index += 1
        return Grab(image=image, clip_start=clip)


def test_camera_lost_raises_an_alert_recovers_and_never_reads_the_stale_throw(
    svc: Service, make_loop: Any
) -> None:
    clips = CLIPS[:2]
    grabber = StallingGrabber(clips, stall_after=6, stall_s=0.6)  # frame 6 of clip 1: dice rolling
    config = CaptureConfig(no_frame_timeout_s=0.2, reconnect_initial_s=0.05, reconnect_max_s=0.1)
    capture = Capture(grabber, table_id=TABLE, source_id="cam", config=config)
    total = len(grabber.frames)
    tracked = Tracked(capture)
    reader = TruthReader()
    with dealer(svc) as client:
        croupier = DemoCroupier(client, table_id=TABLE)

        def on_clip(clip: str) -> None:
            reader.clip = Path(clip)
            croupier.prepare(clip)

        loop = make_loop(tracked, reader, on_clip=on_clip)

        loop.start()
        deadline = time.monotonic() + 20
        while grabber.index < total and time.monotonic() < deadline:
            time.sleep(0.05)
        loop.stop()
    assert [a["data"]["loss"] for a in alerts(svc, "camera_lost")] == ["no_frames"]
    assert len(alerts(svc, "camera_recovered")) == 1
    # The throw the camera did not watch to rest is not read; the next throw is.
    assert [tracked.where[r.roll_id][0] for r in loop.reads] == [clips[1]]
    assert loop.camera_ok


def frame(n: int, image: np.ndarray | None = None) -> CapturedFrame:
    """A frame of the table (a plain picture unless one is given)."""
    return CapturedFrame(
        image=np.full((48, 64, 3), 40 + n, np.uint8) if image is None else image,
        frame_id=f"{TABLE}-test-{n}",
        table_id=TABLE,
        captured_at=datetime.now(UTC),
        seq=n,
        source_id="test",
        monotonic_s=float(n),
    )


FIRST = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]


def open_round_with_an_extra_roll(svc: Service) -> None:
    """A round waiting for dice, seat 1 on Pip Street 5, Like Kind 6 and the Extra Roll."""
    with dealer(svc) as client:
        rnd = client.post(f"/v1/tables/{TABLE}/rounds").json()
        wagers = [
            {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
            {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
            {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
        ]
        assert client.post(f"/v1/rounds/{rnd['id']}/wagers", json={"wagers": wagers}).status_code == 201
        assert client.post(f"/v1/rounds/{rnd['id']}/no-more-bets").status_code == 200


def test_dealer_error_on_the_layout_box_and_the_extra_roll_reads_only_rethrown_dice(
    svc: Service, make_loop: Any
) -> None:
    geometry, _ = clip_geometry(str(CLIPS[0]))
    assert geometry is not None
    open_round_with_an_extra_roll(svc)
    kept = [die(5, "Five", x=30.0 * i) for i in range(4)]
    script = [
        [die(f, x=30.0 * i) for i, f in enumerate(FIRST)],  # roll one: four 5s
        # The dealer moves three 5s and a 6 into the Five box and leaves a 5 in the throw area.
        [
            *kept[:3],
            die(6, "Five", 200.0),
            die(5, None, 230.0),
            *[die(f, x=300.0 + 30 * i) for i, f in enumerate([6, 6, 1, 1, 4])],
        ],
        # The Extra Roll (the move put right): four 5s kept in the box, six rethrown: 5 5 2 3 4 6.
        [*kept, *[die(f, x=300.0 + 30 * i) for i, f in enumerate([5, 5, 2, 3, 4, 6])]],
    ]
    reader = TruthReader(script)
    events: list[Any] = [
        AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7),
        SettledWithoutThrow(frame(2), still_since_s=1.5, intruder_seen=True, empty=False),
        AtRest(frame(3), throw_index=1, moving_since_s=2.0, still_since_s=2.7),
    ]
    loop = make_loop([], reader, geometry=geometry)
    loop.handle_throw(events[0])
    assert loop.reads[0].answer is not None and loop.reads[0].answer["phase"] == "awaiting_extra_roll"
    loop.handle_dealer_move(events[1])
    wrong = alerts(svc, "dealer_error")
    assert len(wrong) == 1
    reasons = [p["reason"] for p in wrong[0]["data"]["problems"]]
    assert reasons == ["wrong_face", "match_left_behind"]
    assert (
        svc.call("GET", f"/v1/evidence/{wrong[0]['data']['evidence_sha256']}", "surveillance").status_code
        == 200
    )
    extra = loop.handle_throw(events[2])
    assert extra.kind == "extra_roll"
    assert sorted(extra.faces) == [2, 3, 4, 5, 5, 6]  # only the rethrown dice
    assert extra.answer is not None and extra.answer["settled"] is True
    summary = extra.answer["round"]["extra_roll"]
    assert (summary["kept"], summary["new_matches"], summary["final_count"]) == (4, 2, 6)
    read = svc.ok("GET", f"/v1/reads/{extra.read_id}", "surveillance")
    assert read["calibration_id"] == "test-cal"
    assert read["extra_roll"]["new_matches"] == 2
    # The count of dice (issue 48): each throw is read with the table's dice, the Extra Roll too (its frame
    # shows the kept dice beside the rethrown ones, split afterwards); the dealer's move with none.
    assert reader.expected == [10, None, 10]


def test_a_move_the_reader_cannot_vouch_for_asks_a_person_to_look_instead_of_accusing_the_dealer(
    svc: Service, make_loop: Any
) -> None:
    """A right move whose frame shows 9 of the 10 dice, one of the box's 5s not found: `layout_unverified`
    (a person looks), no `dealer_error`."""
    geometry, _ = clip_geometry(str(CLIPS[0]))
    assert geometry is not None
    open_round_with_an_extra_roll(svc)
    script = [
        [die(f, x=30.0 * i) for i, f in enumerate(FIRST)],  # roll one: four 5s
        [  # the right move, but the reader finds only three of the four 5s in the Five box
            *[die(5, "Five", x=30.0 * i) for i in range(3)],
            *[die(f, x=300.0 + 30 * i) for i, f in enumerate([6, 6, 6, 1, 1, 4])],
        ],
    ]
    loop = make_loop([], TruthReader(script), geometry=geometry)
    loop.handle_throw(AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7))
    loop.handle_dealer_move(SettledWithoutThrow(frame(2), still_since_s=1.5, intruder_seen=True, empty=False))
    assert alerts(svc, "dealer_error") == []
    (look,) = alerts(svc, "layout_unverified")
    assert [p["reason"] for p in look["data"]["problems"]] == ["count_unsure"]
    assert look["data"]["dealer_error"] is False and "a person must look" in look["message"]
    assert loop.layout_checks[0]["ok"] is False and loop.layout_checks[0]["dealer_error"] is False


def test_an_extra_roll_with_a_die_the_reader_cannot_read_asks_a_person_to_look(
    svc: Service, make_loop: Any
) -> None:
    """The Extra Roll is left to a person (`no_decision`), with `layout_unverified`, not `dealer_error`:
    the dealer did nothing wrong; the reader could not read a rethrown die."""
    geometry, _ = clip_geometry(str(CLIPS[0]))
    assert geometry is not None
    open_round_with_an_extra_roll(svc)
    kept = [die(5, "Five", x=30.0 * i) for i in range(4)]
    script = [
        [die(f, x=30.0 * i) for i, f in enumerate(FIRST)],  # roll one: four 5s
        [*kept, *[die(f, x=300.0 + 30 * i) for i, f in enumerate([6, 6, 6, 1, 1, 4])]],  # the right move
        [*kept, *[die(f, x=300.0 + 30 * i) for i, f in enumerate([None, 5, 2, 3, 4, 6])]],  # one unread
    ]
    loop = make_loop([], TruthReader(script), geometry=geometry)
    loop.handle_throw(AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7))
    loop.handle_dealer_move(SettledWithoutThrow(frame(2), still_since_s=1.5, intruder_seen=True, empty=False))
    extra = loop.handle_throw(AtRest(frame(3), throw_index=1, moving_since_s=2.0, still_since_s=2.7))
    assert extra.kind == "extra_roll" and extra.verdict == "no_decision"
    assert alerts(svc, "dealer_error") == []
    (look,) = alerts(svc, "layout_unverified")
    assert look["message"].startswith("the Extra Roll") and "cannot be read" in look["message"]


@pytest.mark.parametrize(
    ("error", "next_kind"),
    [(RoundEndedError("keyed, then failed"), "first_roll"), (RuntimeError("failed"), "extra_roll")],
)
def test_a_clip_hook_that_ended_the_round_before_failing_still_ends_it_for_the_loop(
    svc: Service, make_loop: Any, error: Exception, next_kind: str
) -> None:
    """The demo's croupier may key a round's Extra Roll and then fail to open the next round: the loop must
    forget the round it keyed (`RoundEndedError`), but not one a plain failure left waiting."""
    geometry, _ = clip_geometry(str(CLIPS[0]))
    open_round_with_an_extra_roll(svc)

    def on_clip(clip: str) -> bool:
        raise error

    script = [[die(f, x=30.0 * i) for i, f in enumerate(FIRST)]] * 2
    clip_started = ClipStarted(source_id="test", clip="next.mp4")
    loop = make_loop([clip_started], TruthReader(script), geometry=geometry, on_clip=on_clip)
    loop.handle_throw(AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7))
    loop.run()  # the clip starts; the hook fails
    assert len(alerts(svc, "round_not_ready")) == 1
    nxt = loop.handle_throw(AtRest(frame(2), throw_index=1, moving_since_s=1.0, still_since_s=1.7))
    assert nxt.kind == next_kind


def test_a_wrong_dealer_call_and_a_wrong_payout_raise_alerts(svc: Service, make_loop: Any) -> None:
    geometry, _ = clip_geometry(str(CLIPS[0]))
    with dealer(svc) as client:
        rnd = client.post(f"/v1/tables/{TABLE}/rounds").json()
        wagers = [
            {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
            {"seat": 2, "kind": "pip_street", "face": 6, "amount": "5.00"},
        ]
        client.post(f"/v1/rounds/{rnd['id']}/wagers", json={"wagers": wagers})
        client.post(f"/v1/rounds/{rnd['id']}/no-more-bets")
        reader = TruthReader([[die(f, x=30.0 * i) for i, f in enumerate(FIRST)]])
        loop = make_loop([], reader, geometry=geometry)
        posted = loop.handle_throw(AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7))
        assert posted.answer is not None and posted.answer["settled"] is True
        # The dealer calls 6 (the dice show four 5s): an alert, within a second of the call.
        started = time.monotonic()
        call = client.post(
            f"/v1/rounds/{rnd['id']}/dealer-calls", json={"roll": 1, "winner": 6, "match_count": 3}
        )
        assert call.json()["matches"] is False and time.monotonic() - started < 1.0
        right = client.post(
            f"/v1/rounds/{rnd['id']}/dealer-calls", json={"roll": 1, "winner": 5, "match_count": 4}
        )
        assert right.json()["matches"] is True
        # Seat 1 won 5.00 at 4 to 1 = 20.00; the dealer pays 25.00.
        paid = client.post(f"/v1/rounds/{rnd['id']}/payouts", json={"seat": 1, "paid": "25.00"}).json()
        assert (paid["matches"], paid["settlement_says"]) == (False, "20.00")
        # At the table (POST /v1/tables/{id}/calls): the announced face, or a full roll keyed at a terminal.
        same = client.post(f"/v1/tables/{TABLE}/calls", json={"winner": 5, "faces": list(reversed(FIRST))})
        assert same.status_code == 200 and same.json()["matches"] is True
        keyed = [5, 5, 5, 6, 6, 6, 6, 1, 1, 4]  # one 5 keyed as a 6
        started = time.monotonic()
        wrong = client.post(f"/v1/tables/{TABLE}/calls", json={"roll": 1, "faces": keyed}).json()
        assert time.monotonic() - started < 1.0
        assert (wrong["matches"], wrong["mismatched"]) == (False, ["faces"])
        assert wrong["evidence_sha256"] == posted.evidence_sha256  # the camera's frame of that roll
        none_yet = client.post(f"/v1/tables/{TABLE}/calls", json={"roll": 2, "winner": 5})
        assert none_yet.status_code == 409
        bad = client.post(f"/v1/tables/{TABLE}/calls", json={"roll": 1})
        assert bad.status_code == 422
    calls = alerts(svc, "dealer_call_mismatch")
    assert len(calls) == 2 and calls[0]["data"]["mismatched"] == ["faces"]
    assert calls[0]["data"]["evidence_sha256"] == posted.evidence_sha256
    payout = alerts(svc, "payout_mismatch")
    assert len(payout) == 1 and payout[0]["data"] == {"seat": 1, "paid": "25.00", "due": "20.00"}
    assert alerts(svc, "dealer_error") == []


def test_a_roll_the_engine_refuses_is_alerted_not_lost(svc: Service, make_loop: Any) -> None:
    # No round is open at the table: the engine answers 409; the loop raises roll_not_posted.
    reader = TruthReader([[die(f, x=30.0 * i) for i, f in enumerate(FIRST)]])
    loop = make_loop([], reader)
    read = loop.handle_throw(AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7))
    assert read.answer is None and read.error is not None and "409" in read.error
    (alert,) = alerts(svc, "roll_not_posted")
    assert alert["data"]["roll_id"] == read.roll_id and alert["data"]["faces"] == FIRST


def test_rules_client_retries_server_errors_and_not_refusals() -> None:
    calls: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) <= 2:
            return httpx.Response(503, text="busy")
        if request.url.path.endswith("/rolls"):
            return httpx.Response(201, json={"roll_id": "r1", "phase": "complete"})
        return httpx.Response(409, json={"detail": "no open round"})

    slept: list[float] = []
    client = RulesClient(
        base_url="http://engine.test",
        key="k",
        transport=httpx.MockTransport(answer),
        backoff_s=0.1,
        sleep=slept.append,
    )
    r1 = RollSubmission(roll_id="r1", source="reader", verdict="valid", faces=[])
    assert client.post_roll("T", r1)["phase"] == "complete"
    assert len(calls) == 3 and slept == [0.1, 0.2]  # doubling back-off
    with pytest.raises(RollRejectedError, match="409"):
        client.upload_evidence(b"jpeg")
    assert len(calls) == 4  # a refusal is the engine's answer: not retried

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    gone = RulesClient(
        base_url="http://engine.test",
        key="k",
        transport=httpx.MockTransport(down),
        attempts=3,
        sleep=slept.append,
    )
    with pytest.raises(RulesUnreachableError, match="no answer after 3 tries"):
        gone.post_roll("T", r1)
    with pytest.raises(ValueError, match="must start with http"):
        RulesClient(base_url="engine.test", key="k")


def test_serve_demo_reads_and_posts_synthetic_throws_with_no_set_up(tmp_path: Path) -> None:
    """What `make run` starts: the demo table, its croupier and the live loop with the reader's real
    models; the event stream carries each demo roll (its verdict is whatever the models make of it)."""
    import threading

    import uvicorn

    from api.main import create_app
    from api.settings import Settings
    from tests.conftest import free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = Settings(data_dir=tmp_path / "data", self_url=base, demo=True)
    app = create_app(settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        key_path = settings.demo_key_path
        text = ""
        while time.monotonic() < deadline:
            time.sleep(0.3)
            if not key_path.exists() or not server.started:
                continue
            headers = {"Authorization": f"Bearer {key_path.read_text().strip()}"}
            text = httpx.get(f"{base}/v1/events?follow=false&table_id=demo", headers=headers).text
            if "event: read" in text and ("event: roll" in text or "event: invalid_roll" in text):
                break
        assert "event: round_opened" in text and "event: no_more_bets" in text
        assert "event: read" in text, text[-2000:]
        assert "event: roll" in text or "event: invalid_roll" in text
        rolls = httpx.get(f"{base}/v1/tables/demo/rolls", headers=headers).json()
        assert rolls and all(r["source"] == "reader" and r["roll_id"].startswith("demo-") for r in rolls)
        (live,) = app.state.live.loops
        assert live.reads and live.reads[0].answer is not None
    finally:
        server.should_exit = True
        thread.join(20)


def test_surveillance_marks_an_alert_reviewed_with_a_note_and_the_audit_trail_keeps_both(
    svc: Service,
) -> None:
    alert = svc.ok(
        "POST", "/v1/alerts", "surveillance", 201, json={"message": "look at round 1", "table_id": TABLE}
    )
    first = svc.ok(
        "POST", f"/v1/alerts/{alert['id']}/reviews", "surveillance", 201, json={"note": "dealer re-paid"}
    )
    svc.ok("POST", f"/v1/alerts/{alert['id']}/reviews", "admin", 201, json={"note": "closed"})
    reviews = svc.ok("GET", f"/v1/alerts/{alert['id']}/reviews", "dealer")
    assert [(r["note"], r["reviewer"].split(":")[0]) for r in reviews] == [
        ("dealer re-paid", "surveillance"),
        ("closed", "admin"),
    ]
    trail = svc.ok("GET", "/v1/audit", "surveillance")
    entries = trail if isinstance(trail, list) else trail["entries"]
    actions = [(e["action"], e["subject"]) for e in entries if e["subject"] == f"alert:{alert['id']}"]
    assert ("alert.raise", f"alert:{alert['id']}") in actions
    assert actions.count(("alert.review", f"alert:{alert['id']}")) == 2
    assert first["seq"] < reviews[1]["seq"]
    assert svc.ok("GET", "/v1/audit/verify", "surveillance")["ok"] is True
    assert svc.call("POST", "/v1/alerts/9999/reviews", "surveillance", json={"note": "x"}).status_code == 404
    assert (
        svc.call("POST", f"/v1/alerts/{alert['id']}/reviews", "surveillance", json={"note": ""}).status_code
        == 422
    )


def test_live_tables_setting_runs_the_loop_on_a_tables_camera_source(tmp_path: Path) -> None:
    """`THROWBOX_LIVE_TABLES=1`: every table with a camera_source gets a loop (here the synthetic scene)."""
    import threading

    import uvicorn

    from api.auth import Role, create_key
    from api.main import create_app
    from api.settings import Settings
    from tests.conftest import free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = Settings(data_dir=tmp_path / "data", self_url=base, live_tables=True)
    app = create_app(settings)
    app.state.database.migrate()
    with app.state.database.session() as session:
        viewer = create_key(session, role=Role.SURVEILLANCE, name="t").secret
        admin = create_key(session, role=Role.ADMIN, name="a").secret
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    # The table exists before the service starts, as a configured casino table would.
    from api.db.models import GameTable

    with app.state.database.session() as session:
        # `demo` as a camera: the built-in synthetic scene (empty box, shaker, dice, the dealer's stick).
        session.add(GameTable(id="CAM1", game="hrd10", settings={}, camera_source="demo"))
    thread.start()
    try:
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline and "event: read" not in text:
            time.sleep(0.3)
            if server.started:
                text = httpx.get(
                    f"{base}/v1/events?follow=false&table_id=CAM1",
                    headers={"Authorization": f"Bearer {viewer}"},
                ).text
        assert "event: read" in text
        # No round is open at CAM1 (nobody opened one): the roll is refused and that is an alert, not lost.
        deadline = time.monotonic() + 10
        found: list[Any] = []
        while time.monotonic() < deadline and not found:
            found = [
                a
                for a in httpx.get(
                    f"{base}/v1/alerts?table_id=CAM1", headers={"Authorization": f"Bearer {admin}"}
                ).json()
                if a["kind"] == "roll_not_posted"
            ]
            time.sleep(0.2)
        assert found and "no open round" in found[0]["message"]
    finally:
        server.should_exit = True
        thread.join(20)


def test_a_reader_failure_is_a_no_decision_roll_and_an_alert_not_a_dead_loop(
    svc: Service, make_loop: Any
) -> None:
    class BrokenReader(TruthReader):
        def read(
            self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
        ) -> Roll:
            raise RuntimeError("model session died")

    with dealer(svc) as client:
        DemoCroupier(client, table_id=TABLE).prepare()
    loop = make_loop([], BrokenReader())
    read = loop.handle_throw(AtRest(frame(1), throw_index=0, moving_since_s=0.0, still_since_s=0.7))
    assert read.verdict == "no_decision" and read.answer is not None and read.answer["needs_review"] is True
    assert "model session died" in alerts(svc, "read_failed")[0]["message"]
    assert len(alerts(svc, "no_decision")) == 1  # the engine asks a person to look, as for any no_decision


def test_a_calibrated_table_watches_only_its_throw_box() -> None:
    from api.live_service import box_outline_px

    geometry, _ = clip_geometry(str(CLIPS[0]))
    assert geometry is not None and box_outline_px(None) is None
    outline = box_outline_px(geometry)
    assert outline.shape == (4, 2)
    # The clip's ground truth: every die at rest lies inside the projected box floor.
    dice = truth(CLIPS[0])["final"]["dice"]
    contour = outline.astype(np.float32).reshape(-1, 1, 2)
    for d in dice:
        x0, y0, x1, y1 = d["box_xyxy"]
        assert cv2.pointPolygonTest(contour, ((x0 + x1) / 2, (y0 + y1) / 2), False) >= 0
    SettleDetector(roi_xy=outline)  # a valid region for the detector


class AlertsOnly:
    """A recorder that keeps the alerts, and counts the reads it is asked to store."""

    def __init__(self) -> None:
        self.alerts: list[tuple[str, str]] = []
        self.stored = 0

    def store_read(self, **kwargs: Any) -> StoredRead:
        self.stored += 1
        return StoredRead(read_id=f"r{self.stored}", evidence_sha256=None)

    def alert(self, *, table_id: str, kind: str, message: str, data: dict[str, Any]) -> None:
        self.alerts.append((kind, message))


def _calibrated_loop(recorder: AlertsOnly) -> LiveLoop:
    """A live loop through a calibration from straight above, reading with `TruthReader`, posting nowhere."""
    from calibration.camera import Camera, CameraIntrinsics, CameraPose
    from calibration.layout import ThrowBoxLayout

    camera = Camera(
        CameraIntrinsics.from_fov(width_px=640, height_px=480, hfov_deg=60.0),
        CameraPose.look_at(eye_mm=(300.0, 225.0, 900.0), target_mm=(300.0, 225.0, 0.0)),
    )
    return LiveLoop(
        config=LiveConfig(table_id=TABLE, expected_dice=10, calibration_id="cal"),
        items=[],
        detector=SettleDetector(),
        reader=TruthReader(),
        rules=RulesClient(base_url="http://127.0.0.1:9", key="unused"),
        recorder=recorder,
        geometry=TableGeometry(camera=camera, layout=ThrowBoxLayout()),
    )


def test_a_camera_moved_since_calibration_raises_one_alert_and_one_when_back_in_place() -> None:
    """Reads that find the camera moved (the reader's `camera_moved` finding) raise `camera_moved` once, not
    at every roll; a read through the calibration that no longer finds it raises `camera_in_place`."""
    from vision.types import Finding

    recorder = AlertsOnly()
    loop = _calibrated_loop(recorder)
    moved = Finding(Verdict.NO_DECISION, "camera_moved", (), "the corner markers lie up to 12.1 px from ...")
    frame = Frame(image=np.zeros((4, 4, 3), np.uint8), frame_id="f")
    still = roll_of([die(3)], frame)
    off = replace(roll_of([die(3)], frame, verdict=Verdict.NO_DECISION), findings=(moved,))
    seen = [
        loop._note_camera_position(r, f"f{i}") for i, r in enumerate([still, off, off, off, still, still])
    ]
    assert seen == [None, moved, moved, moved, None, None]
    assert [kind for kind, _ in recorder.alerts] == ["camera_moved", "camera_in_place"]
    assert "12.1 px" in recorder.alerts[0][1] and "calibrated again" in recorder.alerts[0][1]

    # The dealer's move to the layout box, read after the camera moved: no die has a layout box, so the move
    # cannot be checked (layout_unverified), and nothing accuses the dealer.
    class MovedReader(TruthReader):
        def read(self, frame: Frame, **kwargs: Any) -> Roll:
            return replace(roll_of([die(3, x=30.0 * i) for i in range(10)], frame), findings=(moved,))

    loop.reader = MovedReader()
    loop._pending = _Pending(winner=3, match_count=4)
    captured = CapturedFrame(image=frame.image, frame_id="m1", seq=1, source_id="cam", monotonic_s=0.0)
    loop.handle_dealer_move(SettledWithoutThrow(captured, still_since_s=0.0, intruder_seen=True, empty=False))
    kinds = [kind for kind, _ in recorder.alerts]
    assert kinds[-1] == "layout_unverified" and "dealer_error" not in kinds
    assert "camera_moved" in kinds[2:] and recorder.stored == 1  # raised again (it was back in place)


def test_a_frame_unfit_to_read_raises_one_alert_and_one_when_fit_again() -> None:
    """Reads whose frame is washed out or too dark (the reader's `frame_exposure` finding) raise
    `camera_exposure` once, not at every roll, and `camera_exposure_ok` when a read's frame is fit again;
    the dealer's move read from such a frame is not checked (`layout_unverified`): no dealer accused."""
    from vision.types import Finding

    recorder = AlertsOnly()
    loop = _calibrated_loop(recorder)
    unfit = Finding(
        Verdict.NO_DECISION, "frame_exposure", (), "the frame is washed out: 62 % of it clipped ..."
    )
    frame = Frame(image=np.zeros((4, 4, 3), np.uint8), frame_id="f")
    fit = roll_of([die(3)], frame)
    washed = replace(roll_of([die(3)], frame, verdict=Verdict.NO_DECISION), findings=(unfit,))
    seen = [loop._note_exposure(r, f"f{i}") for i, r in enumerate([fit, washed, washed, fit, fit])]
    assert seen == [None, unfit, unfit, None, None]
    assert [kind for kind, _ in recorder.alerts] == ["camera_exposure", "camera_exposure_ok"]
    assert "62 %" in recorder.alerts[0][1] and "left to a person" in recorder.alerts[0][1]

    class WashedReader(TruthReader):
        def read(self, frame: Frame, **kwargs: Any) -> Roll:
            return replace(roll_of([die(3, x=30.0 * i) for i in range(10)], frame), findings=(unfit,))

    loop.reader = WashedReader()
    loop._pending = _Pending(winner=3, match_count=4)
    captured = CapturedFrame(image=frame.image, frame_id="m1", seq=1, source_id="cam", monotonic_s=0.0)
    loop.handle_dealer_move(SettledWithoutThrow(captured, still_since_s=0.0, intruder_seen=True, empty=False))
    kinds = [kind for kind, _ in recorder.alerts]
    assert kinds[-2:] == ["camera_exposure", "layout_unverified"] and "dealer_error" not in kinds
    assert "washed out" in recorder.alerts[-1][1] and recorder.stored == 1

    # A read that fails says nothing of the picture: no `camera_exposure_ok` from the roll made up for it.
    class FailingReader(TruthReader):
        def read(self, frame: Frame, **kwargs: Any) -> Roll:
            raise RuntimeError("the model file went away")

    loop.reader = FailingReader()
    loop._pending = None
    before = len(recorder.alerts)
    loop.handle_throw(AtRest(captured, throw_index=0, moving_since_s=0.0, still_since_s=0.1))
    kinds = [kind for kind, _ in recorder.alerts[before:]]
    assert "read_failed" in kinds and "camera_exposure_ok" not in kinds and loop.exposure_failed


def test_a_grainy_camera_raises_one_alert_and_one_when_clean_again() -> None:
    """At-rest frames grainier than `LiveConfig.grain_alert_above` (sensor noise, vision/judge/exposure.py)
    raise `camera_grainy` once, not at every roll, and `camera_grain_ok` when a frame is clean again; each
    stored read keeps its frame's grain. The grain is the reader's measure, carried by the Roll: a roll with
    none (not a reader's) changes nothing, and with the bar off there is no alert."""
    recorder = AlertsOnly()
    loop = _calibrated_loop(recorder)
    assert loop.config.grain_alert_above == 6.0
    rng = np.random.default_rng(0)
    felt = np.full((240, 320, 3), 90, np.uint8)
    grainy = np.clip(felt + rng.normal(0.0, 16.0, felt.shape) + 0.5, 0, 255).astype(np.uint8)
    frames = [Frame(image=img, frame_id=f"f{i}") for i, img in enumerate([felt, grainy, grainy, felt, felt])]
    levels = [loop._note_grain(roll_of([], f), f.frame_id) for f in frames]
    assert levels[0] == 0.0 and levels[3] == 0.0
    assert all(level is not None and 9.0 < level < 12.5 for level in levels[1:3])  # 16 per channel: ~10.7
    assert [kind for kind, _ in recorder.alerts] == ["camera_grainy", "camera_grain_ok"]
    assert "grainy (its noise about 11 grey levels, over 6" in recorder.alerts[0][1]
    loop._note_grain(roll_of([], frames[1]), "g")  # grainy again: a third alert
    keyed = replace(roll_of([], frames[1]), exposure=None)  # no measure: the last word stands, no alert
    assert loop._note_grain(keyed, "k") is None and loop.grainy and len(recorder.alerts) == 3

    # A throw read from a grainy frame: the alert, and the read stored with its grain beside the roll.
    stored: list[dict[str, Any]] = []

    class Keeping(AlertsOnly):
        def store_read(self, **kwargs: Any) -> StoredRead:
            stored.append(kwargs["extra"])
            return super().store_read(**kwargs)

    keeping = Keeping()
    loop = _calibrated_loop(keeping)
    loop.reader = TruthReader([[die(3, x=30.0 * i) for i in range(10)]])
    captured = CapturedFrame(image=grainy, frame_id="t1", seq=1, source_id="cam", monotonic_s=0.0)
    loop.handle_throw(AtRest(captured, throw_index=0, moving_since_s=0.0, still_since_s=0.1))
    assert [kind for kind, _ in keeping.alerts][:1] == ["camera_grainy"]
    assert stored and 9.0 < stored[0]["frame_noise_level"] < 12.5

    off = LiveLoop(
        config=LiveConfig(table_id=TABLE, expected_dice=10, grain_alert_above=None),
        items=[],
        detector=SettleDetector(),
        reader=TruthReader(),
        rules=RulesClient(base_url="http://127.0.0.1:9", key="unused"),
        recorder=AlertsOnly(),
    )
    assert off._note_grain(roll_of([], frames[1]), "f1") is None
    with pytest.raises(ValueError, match="grain_alert_above"):
        LiveConfig(table_id=TABLE, expected_dice=10, grain_alert_above=0.0)
