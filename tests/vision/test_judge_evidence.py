"""The evidence a rethrow needs (vision/judge, issue 5's false alarms): each rule that keeps a good roll
from being sent back on weak evidence, and that it still sends back a roll the evidence backs.

Clause ids follow 58 Pa. Code 675a.4 (same text in 593.4): (b) a die off the table or on another die
makes the roll invalid; (c) a die cocked on more than one side voids it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.layout import ThrowBoxLayout
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from tests.vision.test_judge_rules import FLAT, _box_at, _cand, _overhead_geometry, _state
from vision.judge.config import JudgeConfig
from vision.judge.count import unexplained_peaks
from vision.judge.size import size_ratios
from vision.judge.validity import ValidityConfig, judge
from vision.reader import Reader
from vision.state.model import DieState
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, FaceReading, Finding, SetAside, Verdict

# The 675a.4 rules alone; the second opinions (issue 55) are tested in test_second_opinions.py.
CFG = ValidityConfig(require_whole_die=False, require_apart=False)
Box = tuple[float, float, float, float]


def _run(
    cands: list[DieCandidate],
    states: list[DieState],
    *,
    expected: int | None,
    geometry: TableGeometry | None = None,
    weak: tuple[DieCandidate, ...] = (),
    config: ValidityConfig = CFG,
    unsure_set_aside: tuple[SetAside, ...] = (),
) -> tuple[Verdict, list[tuple[str, tuple[int, ...]]], tuple[Finding, ...]]:
    reads = tuple(FaceReading(face_probs=tuple(one_hot(3)), pip_count=None) for _ in cands)
    out = judge(
        tuple(cands),
        reads,
        expected_dice=expected,
        config=config,
        states=states,
        geometry=geometry,
        weak_peaks=weak,
        unsure_set_aside=unsure_set_aside,
    )
    return out.verdict, [(f.reason, f.die_ids) for f in out.findings], out.findings


def _peak(x: float, score: float, y: float = 100.0, edge: float = 20.0) -> DieCandidate:
    return DieCandidate(
        box_xyxy=(x, y, x + edge, y + edge),
        top_quad=((x, y), (x + edge, y), (x + edge, y + edge), (x, y + edge)),
        score=score,
    )


@pytest.mark.parametrize(
    ("weak", "verdict", "reason"),
    [
        # 675a.4(b): nothing where a die could be: the missing die left the table
        ((), Verdict.INVALID, "die_off_table"),
        # the detector saw something die-like (0.30, under its 0.35) where no die was found: a person looks
        ((_peak(200.0, 0.30),), Verdict.NO_DECISION, "count_mismatch"),
        # too faint to count (under weak_peak_score 0.25): the short count stands
        ((_peak(200.0, 0.20),), Verdict.INVALID, "die_off_table"),
        # a weak peak on a die already found is that die seen again, not the missing one
        ((_peak(42.0, 0.30),), Verdict.INVALID, "die_off_table"),
    ],
)
def test_675a_4_b_a_short_count_needs_no_die_the_detector_was_unsure_of(
    weak: tuple[DieCandidate, ...], verdict: Verdict, reason: str
) -> None:
    got, findings, details = _run([_cand(0.0), _cand(40.0)], [FLAT, FLAT], expected=3, weak=weak)
    assert got is verdict
    assert findings == [(reason, ())]
    if reason == "count_mismatch":
        assert "(210, 110) score 0.30" in details[0].detail


@pytest.mark.parametrize(
    ("ratio", "big_edge", "verdict", "reason", "ids"),
    [
        # off: the short count stands, 675a.4(b)
        (None, 40.0, Verdict.INVALID, "die_off_table", ()),
        # a box twice the frame's typical die may hold two touching dice: the missing die may be in it
        (1.4, 40.0, Verdict.NO_DECISION, "count_mismatch", (5,)),
        # a box a little large (1.25 times) is one die boxed loosely: the short count stands
        (1.4, 25.0, Verdict.INVALID, "die_off_table", ()),
    ],
)
def test_675a_4_b_a_short_count_beside_a_box_too_big_for_one_die(
    ratio: float | None, big_edge: float, verdict: Verdict, reason: str, ids: tuple[int, ...]
) -> None:
    assert CFG.judge.short_count_max_box_ratio == 1.4  # the default since its fresh sets (2026-12-02)
    config = replace(CFG, judge=replace(CFG.judge, short_count_max_box_ratio=ratio))
    cands = [_cand(0.0), _cand(40.0), _cand(80.0), _cand(120.0), _cand(160.0, edge=big_edge)]
    got, findings, details = _run(cands, [FLAT] * 5, expected=6, config=config)
    assert got is verdict
    assert findings == [(reason, ids)]
    if reason == "count_mismatch":
        assert "die 5 is 2.0 times the frame's typical die" in details[0].detail


@pytest.mark.parametrize(
    ("aside", "expected_dice", "verdict", "reason", "said"),
    [
        # 675a.4(b): nothing but the table where the markers are: the missing die left the table
        ((), 3, Verdict.INVALID, "die_off_table", None),
        # a marker set aside where the frame is not surely the empty box: a see-through die may lie over it
        (
            (SetAside((300.0, 100.0, 330.0, 130.0), 0.5, None, "calibration_marker", 2, 0.981),),
            3,
            Verdict.NO_DECISION,
            "count_mismatch",
            "marker 2 at (315, 115) (it looks 0.981 like the empty box)",
        ),
        # a marker whose look the calibration did not keep (stored before 2026-12-02): it cannot be ruled out
        (
            (SetAside((300.0, 100.0, 330.0, 130.0), 0.5, None, "calibration_marker", 0),),
            3,
            Verdict.NO_DECISION,
            "count_mismatch",
            "marker 0 at (315, 115) (its look was not kept at calibration)",
        ),
        # a table mark likewise
        (
            (SetAside((300.0, 100.0, 330.0, 130.0), 0.5, None, "table_mark", likeness=0.96),),
            3,
            Verdict.NO_DECISION,
            "count_mismatch",
            "table mark at (315, 115)",
        ),
        # the count is the game's: the doubt changes nothing
        (
            (SetAside((300.0, 100.0, 330.0, 130.0), 0.5, None, "table_mark", likeness=0.96),),
            2,
            Verdict.VALID,
            None,
            None,
        ),
    ],
)
def test_675a_4_b_a_short_count_beside_a_doubtful_set_aside_is_left_to_a_person(
    aside: tuple[SetAside, ...], expected_dice: int, verdict: Verdict, reason: str | None, said: str | None
) -> None:
    got, findings, details = _run(
        [_cand(0.0), _cand(40.0)], [FLAT] * 2, expected=expected_dice, unsure_set_aside=aside
    )
    assert got is verdict
    assert [r for r, _ in findings] == ([] if reason is None else [reason])
    if said is not None:
        assert said in details[0].detail and "a person must look" in details[0].detail


UNSURE_MARKER = (SetAside((600.0, 100.0, 630.0, 130.0), 0.5, None, "calibration_marker", 2, 0.981),)


@pytest.mark.parametrize(
    ("aside", "verdict", "reason"),
    [
        # 675a.4(b): the count is short and nothing may hide the missing die: the isolated die the
        # classifier sees on a die has one hidden beneath it
        ((), Verdict.INVALID, "die_on_die"),
        # a see-through die may lie over a marker set aside: the count may be full, nothing hidden beneath
        (UNSURE_MARKER, Verdict.NO_DECISION, "stacked_unclear"),
    ],
)
def test_675a_4_b_a_die_on_a_die_does_not_lean_on_a_count_a_set_aside_may_fill(
    aside: tuple[SetAside, ...], verdict: Verdict, reason: str
) -> None:
    got, findings, _ = _run(
        [_cand(0.0), _cand(80.0)], [FLAT, _state("stacked")], expected=3, unsure_set_aside=aside
    )
    assert got is verdict and reason in [r for r, _ in findings], findings


@pytest.mark.parametrize(
    ("aside", "verdict", "reason"),
    [
        # 675a.4(b): two on the table of three, the third seen beyond the wall: a die that left
        ((), Verdict.INVALID, "die_off_table"),
        # a see-through die may lie over a marker set aside: the game's three may all be on the table, and
        # the thing beyond the wall an object
        (UNSURE_MARKER, Verdict.NO_DECISION, "extra_dice"),
    ],
)
def test_675a_4_b_a_die_off_the_table_does_not_lean_on_a_count_a_set_aside_may_fill(
    aside: tuple[SetAside, ...], verdict: Verdict, reason: str
) -> None:
    got, findings, _ = _run(
        [_cand(0.0), _cand(40.0), _cand(80.0)],
        [FLAT, FLAT, _state("outside")],
        expected=3,
        unsure_set_aside=aside,
    )
    assert got is verdict and reason in [r for r, _ in findings], findings


def test_675a_4_b_a_short_count_is_not_a_die_that_left_when_the_camera_moved() -> None:
    """Read from the image alone after the camera moved, the throw box may be partly out of view."""
    moved = Finding(Verdict.NO_DECISION, "camera_moved", (), "the corner markers lie 12.1 px from ...")
    cands = [_cand(0.0), _cand(40.0)]
    reads = tuple(FaceReading(face_probs=tuple(one_hot(3)), pip_count=None) for _ in cands)
    out = judge(
        tuple(cands), reads, expected_dice=3, config=CFG, states=[FLAT, FLAT], frame_findings=(moved,)
    )
    assert out.verdict is Verdict.NO_DECISION
    assert [f.reason for f in out.findings] == ["camera_moved", "count_mismatch"]
    assert "camera moved since calibration" in out.findings[1].detail


def test_short_count_max_box_ratio_must_exceed_one() -> None:
    with pytest.raises(ValueError, match="short_count_max_box_ratio"):
        JudgeConfig(short_count_max_box_ratio=1.0)


def test_675a_4_b_a_weak_peak_beyond_the_walls_does_not_explain_a_short_count() -> None:
    geo = _overhead_geometry()
    inside = [_box_at(geo, 200.0, 200.0), _box_at(geo, 300.0, 200.0)]
    cands = [DieCandidate(box_xyxy=b, top_quad=((0, 0),) * 4, score=0.9) for b in inside]
    beyond = DieCandidate(box_xyxy=_box_at(geo, 300.0, -45.0), top_quad=((0, 0),) * 4, score=0.3)
    within = DieCandidate(box_xyxy=_box_at(geo, 400.0, 200.0), top_quad=((0, 0),) * 4, score=0.3)
    dice = [DieReading(candidate=c, face=3, face_probs=tuple(one_hot(3))) for c in cands]
    assert unexplained_peaks([beyond, within], dice, geometry=geo, config=JudgeConfig()) == [within]
    got, findings, _ = _run(cands, [FLAT, FLAT], expected=3, geometry=geo, weak=(beyond,))
    assert (got, findings) == (Verdict.INVALID, [("die_off_table", ())])


@pytest.mark.parametrize(
    ("expected", "verdict", "reason"),
    [
        # 675a.4(b): one of the game's dice is off the table
        (3, Verdict.INVALID, "die_off_table"),
        # the two on the table are already the game's: the thing beyond the wall is an object (or a die
        # found twice), not a die that left; a person looks
        (2, Verdict.NO_DECISION, "extra_dice"),
    ],
)
def test_675a_4_b_a_die_off_the_table_must_be_one_of_the_games(
    expected: int, verdict: Verdict, reason: str
) -> None:
    got, findings, _ = _run(
        [_cand(0.0), _cand(40.0), _cand(80.0)], [FLAT, FLAT, _state("outside")], expected=expected
    )
    assert got is verdict
    assert (reason, (3,)) in findings


@pytest.mark.parametrize(
    ("edge", "verdict", "reason"),
    [
        # 675a.4(c): a die-sized die wedged on more than one side: void
        (20.0, Verdict.VOID, "cocked_multi_side"),
        # twice the size of the frame's dice: a chip stack taken for a die, maybe; a person looks
        (40.0, Verdict.NO_DECISION, "object_unclear"),
    ],
)
def test_675a_4_c_a_void_needs_a_die_sized_die(edge: float, verdict: Verdict, reason: str) -> None:
    cands = [_cand(0.0), _cand(40.0), _cand(80.0), _cand(120.0, edge=edge)]
    got, findings, details = _run(cands, [FLAT, FLAT, FLAT, _state("wedged", tilt=40.0)], expected=4)
    assert got is verdict
    assert (reason, (4,)) in findings
    if reason == "object_unclear":
        assert "die 4 is 2.0 times" in details[0].detail
    assert size_ratios([]) == [] and size_ratios(  # fewer than 3 dice: no typical die to compare with
        [DieReading(candidate=_cand(0.0, edge=e), face=3, face_probs=tuple(one_hot(3))) for e in (10, 40)]
    ) == [1.0, 1.0]


def _pair_and_two(geo: TableGeometry, shift_px: float) -> list[DieCandidate]:
    """Two dice far apart and, as dice 3 and 4, two 40-px boxes `shift_px` apart around the felt point
    (300, 200) mm: overlapping far past `overlap_stacked`."""
    x0, y0, x1, y1 = _box_at(geo, 300.0, 200.0)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    pair = [(cx - 20.0 + dx, cy - 20.0, cx + 20.0 + dx, cy + 20.0) for dx in (0.0, shift_px)]
    far = [_box_at(geo, 100.0, 100.0), _box_at(geo, 500.0, 300.0)]
    return [DieCandidate(box_xyxy=b, top_quad=((0, 0),) * 4, score=0.9) for b in (*far, *pair)]


@pytest.mark.parametrize(
    ("shift_px", "from_above", "verdict", "reason"),
    [
        # 675a.4(b): boxes overlapping, felt positions 6 mm apart: one die lies on the other
        (8.0, 10.0, Verdict.INVALID, "die_on_die"),
        (8.0, None, Verdict.INVALID, "die_on_die"),
        # overlapping as much, but 13 mm apart on the felt, seen from straight above with nothing backing a
        # stack: touching dice boxed loosely (JudgeConfig.unbacked_overlap_max_camera_tilt_deg, the default)
        (16.0, 10.0, Verdict.VALID, "stacked_ruled_out"),
        # ... and with that rule off, a person looks
        (16.0, None, Verdict.NO_DECISION, "stacked_unclear"),
    ],
)
def test_675a_4_b_overlap_backed_by_felt_positions(
    shift_px: float, from_above: float | None, verdict: Verdict, reason: str
) -> None:
    assert CFG.judge.unbacked_overlap_max_camera_tilt_deg == 10.0
    config = replace(CFG, judge=replace(CFG.judge, unbacked_overlap_max_camera_tilt_deg=from_above))
    geo = _overhead_geometry()
    got, findings, details = _run(
        _pair_and_two(geo, shift_px), [FLAT] * 4, expected=4, geometry=geo, config=config
    )
    assert got is verdict
    assert findings == [(reason, (3, 4))]
    assert "mm apart" in details[0].detail


@pytest.mark.parametrize(
    ("bar", "verdict", "reason"),
    [
        # any camera: felt positions a few mm apart back the overlap
        (None, Verdict.INVALID, "die_on_die"),
        # under a camera leaning 37 degrees, past the 10-degree bar (the default), loose boxes place dice too
        # roughly: the overlap alone is for a person (675a.4(b) needs a die resting on another, not one
        # behind it)
        (10.0, Verdict.NO_DECISION, "stacked_unclear"),
        # a bar past the camera's lean: the felt positions back it as before
        (40.0, Verdict.INVALID, "die_on_die"),
    ],
)
def test_675a_4_b_felt_positions_back_an_overlap_only_from_above(
    bar: float | None, verdict: Verdict, reason: str
) -> None:
    assert CFG.judge.felt_backing_max_camera_tilt_deg == 10.0  # the default since its fresh sets (2026-12-02)
    config = replace(CFG, judge=replace(CFG.judge, felt_backing_max_camera_tilt_deg=bar))
    intr = CameraIntrinsics.from_fov(width_px=1280, height_px=960, hfov_deg=60.0)
    eye, target = (300.0, -300.0, 700.0), (300.0, 225.0, 0.0)
    pose = CameraPose.look_at(eye_mm=eye, target_mm=target, up=(0.0, 1.0, 0.0))
    geo = TableGeometry(camera=Camera(intr, pose), layout=ThrowBoxLayout())
    assert 30.0 < geo.camera.pose.tilt_deg < 45.0
    got, findings, details = _run(
        _pair_and_two(geo, 4.0), [FLAT] * 4, expected=4, geometry=geo, config=config
    )
    assert got is verdict
    assert findings == [(reason, (3, 4))]
    assert "mm apart" in details[0].detail
    assert ("too rough to place dice under a camera leaning" in details[0].detail) == (bar == 10.0)


def test_felt_backing_max_camera_tilt_deg_is_an_angle() -> None:
    with pytest.raises(ValueError, match="felt_backing_max_camera_tilt_deg"):
        JudgeConfig(felt_backing_max_camera_tilt_deg=95.0)


class _TwoLevelSession(FakeDetectorSession):
    """A detector head with strong peaks (0.9) at `boxes` and weak ones (0.3) at `weak`."""

    def __init__(self, boxes: list[Box], weak: list[Box]) -> None:
        super().__init__(boxes)
        self.weak = FakeDetectorSession(weak, score=0.3)

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        (head,) = super().run(None, input_feed)
        (low,) = self.weak.run(None, input_feed)
        where = low[0, 0] > head[0, 0]
        head[:, :, where] = low[:, :, where]
        return [head]


def test_the_detector_reports_its_weak_peaks_beside_its_candidates(tmp_path: Path) -> None:
    """The optional output of `DieDetector.detect_with_weak`: same candidates, plus the peaks below."""
    strong: list[Box] = [(100.0, 100.0, 160.0, 160.0), (300.0, 100.0, 360.0, 160.0)]
    weak: list[Box] = [(500.0, 300.0, 560.0, 360.0)]
    reader = Reader(
        manifest_path=write_manifest(tmp_path),
        session_factory=factory(_TwoLevelSession(strong, weak), FakeFaceSession([one_hot(3)] * 2)),
    )
    image = np.full((480, 640, 3), 90, np.uint8)
    cands, peaks = reader.detector.detect_with_weak(image, weak_score=0.25)
    assert cands == reader.detector(image)
    assert np.allclose([c.box_xyxy for c in cands], strong, atol=0.5)
    assert len(peaks) == 1 and peaks[0].score == pytest.approx(0.3)
    assert np.allclose(peaks[0].box_xyxy, weak[0], atol=0.5)
    assert reader.detector.detect_with_weak(image, weak_score=0.31)[1] == ()
    with pytest.raises(ValueError, match="weak_score"):
        reader.detector.detect_with_weak(image, weak_score=0.5)
