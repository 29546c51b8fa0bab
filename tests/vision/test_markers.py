"""The table's calibration markers are not dice (vision/table/markers.py).

The table and reader are tests/vision/conftest.py's: the selftest's throw box with its four ArUco corner
markers, rendered at 1280x720, its real calibration, and the committed models.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from calibration.selftest.scenes import Finish, displaced, rotated
from tests.vision.conftest import DICE, LAYOUT, MARKERS, Table
from vision.annotate import annotate
from vision.judge.config import JudgeConfig
from vision.reader import Reader
from vision.table.geometry import TableGeometry
from vision.table.markers import (
    MarkerInView,
    marker_shift_px,
    markers_in_view,
    markers_near,
    on_marker,
    set_markers_aside,
)
from vision.types import DieCandidate, Frame, SetAside, Sifted


def _box(cx: float, cy: float, half: float = 10.0) -> DieCandidate:
    quad = ((cx - half, cy - half), (cx + half, cy - half), (cx + half, cy + half), (cx - half, cy + half))
    return DieCandidate(box_xyxy=(cx - half, cy - half, cx + half, cy + half), top_quad=quad, score=0.7)


BLANK = np.zeros((400, 400, 3), np.uint8)
SQUARE = MarkerInView(
    marker_id=7, corners_px=((100.0, 100.0), (140.0, 100.0), (140.0, 140.0), (100.0, 140.0))
)


@pytest.mark.parametrize(
    ("centre", "expect_aside"),
    [
        ((120.0, 120.0), True),  # the marker's middle: the detector boxed the marker
        ((101.0, 139.0), True),  # inside, near a corner
        ((140.0, 120.0), True),  # on its edge
        ((150.0, 120.0), False),  # beside it: a die lying against the sticker stays a die
        ((300.0, 300.0), False),  # far off
    ],
)
def test_a_detection_centred_on_a_marker_in_view_is_set_aside(
    centre: tuple[float, float], expect_aside: bool
) -> None:
    out = set_markers_aside([_box(*centre)], [_box(*centre)], seen=[SQUARE], image=BLANK)
    kept, peaks, aside = out.candidates, out.weak_peaks, out.set_aside
    assert (len(aside) == 1) is expect_aside and (len(out.peaks_set_aside) == 1) is expect_aside
    assert len(kept) == len(peaks) == (0 if expect_aside else 1)
    if expect_aside:
        assert aside[0].reason == "calibration_marker" and aside[0].marker_id == 7
        assert aside[0].p_no_die is None and aside[0].score == pytest.approx(0.7)
        assert aside[0].likeness is None  # no look of marker 7 was kept


def test_no_marker_in_view_sets_nothing_aside() -> None:
    cands, peaks = [_box(120.0, 120.0)], [_box(200.0, 200.0)]
    assert set_markers_aside(cands, peaks, seen=[], image=BLANK) == Sifted(tuple(cands), tuple(peaks))
    assert on_marker(cands[0].box_xyxy, []) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p_no_die": None, "reason": "no_die"}, "p_no_die goes with"),  # the classifier's call needs its p
        ({"p_no_die": None, "reason": "table_no_die"}, "p_no_die goes with"),  # so does the table filter's
        ({"p_no_die": 0.9, "reason": "calibration_marker"}, "marker id goes with"),  # no id
        ({"p_no_die": 0.9, "reason": "no_die", "marker_id": 2}, "marker id goes with"),
        ({"p_no_die": 0.9, "reason": "chip"}, "reason must be one of"),
        ({"p_no_die": None, "reason": "table_mark"}, "needs its likeness"),
        ({"p_no_die": 0.9, "reason": "no_die", "likeness": 0.99}, "not with reason 'no_die'"),
        ({"p_no_die": None, "reason": "calibration_marker", "marker_id": 2, "likeness": 0.999}, None),  # fine
        ({"p_no_die": None, "reason": "calibration_marker", "marker_id": 2}, None),  # fine: look not kept
    ],
)
def test_set_aside_refuses_inconsistent_fields(kwargs: dict[str, object], message: str | None) -> None:
    if message is None:
        aside = SetAside(box_xyxy=(0.0, 0.0, 1.0, 1.0), score=0.5, **kwargs)  # type: ignore[arg-type]
        assert aside.what == "marker 2" and aside.as_dict()["likeness"] == kwargs.get("likeness")
        return
    with pytest.raises(ValueError, match=message):
        SetAside(box_xyxy=(0.0, 0.0, 1.0, 1.0), score=0.5, **kwargs)  # type: ignore[arg-type]


def test_the_four_markers_are_found_where_calibration_saw_them(table: Table) -> None:
    frame = table.scene.frame(dice=DICE, noise_seed=3)
    seen = markers_in_view(frame, markers=MARKERS, reference_corners_px=table.cal.reference_corners_px)
    assert sorted(m.marker_id for m in seen) == [0, 1, 2, 3]
    for m in seen:
        shift = np.abs(np.asarray(m.corners_px) - np.asarray(table.cal.reference_corners_px[m.marker_id]))
        assert shift.max() < 1.0


def test_a_die_lying_on_a_marker_hides_it_so_nothing_is_set_aside_there(table: Table) -> None:
    quad_mm = MARKERS.corners_mm(LAYOUT)[1]  # dealer's right
    x_mm, y_mm = (float(v) for v in quad_mm.mean(axis=0))
    frame = table.scene.frame(dice=(*DICE, (x_mm, y_mm, 4)), noise_seed=4)
    seen = markers_in_view(frame, markers=MARKERS, reference_corners_px=table.cal.reference_corners_px)
    assert sorted(m.marker_id for m in seen) == [0, 2, 3]


def test_the_reader_does_not_count_the_markers_as_dice(table: Table, committed_reader: Reader) -> None:
    """The bug this module mends: with markers in view a roll of three read as more than three."""
    frame = table.scene.frame(dice=DICE, noise_seed=3)
    geometry = replace(table.geometry(), marks=())  # the markers alone: no table marks, no looks kept
    reader = committed_reader
    with_markers = reader.read(Frame(image=frame, frame_id="f"), expected_dice=len(DICE), geometry=geometry)
    markers = [a for a in with_markers.set_aside if a.reason == "calibration_marker"]
    assert markers, "the detector no longer boxes the markers: this test no longer shows the mend"
    found = with_markers.dice
    centres = [
        ((d.candidate.box_xyxy[0] + d.candidate.box_xyxy[2]) / 2, d.candidate.box_xyxy[3]) for d in found
    ]
    truth_px = geometry.camera.project(np.array([[x, y, LAYOUT.die_edge_mm] for x, y, _ in DICE]))
    for tx, ty in truth_px:  # each die placed is found once, and nothing else is counted
        assert sum(abs(cx - tx) < 15 and abs(by - ty) < 30 for cx, by in centres) == 1, (tx, ty, centres)
    seen = markers_in_view(frame, markers=MARKERS, reference_corners_px=table.cal.reference_corners_px)
    assert not [d for d in found if on_marker(d.candidate.box_xyxy, seen) is not None]
    assert {a.marker_id for a in markers} <= {m.marker_id for m in seen}
    # Without the markers' places (a geometry that does not know them), the same frame is over counted.
    bare = TableGeometry(camera=geometry.camera, layout=geometry.layout)
    without = reader.read(Frame(image=frame, frame_id="f"), expected_dice=len(DICE), geometry=bare)
    assert len(without.dice) + len(without.set_aside) > len(DICE)
    # The evidence frame draws what was set aside, and the document names it.
    assert annotate(frame, with_markers).shape == frame.shape
    doc = with_markers.as_dict()["set_aside"]
    assert {"reason": "calibration_marker"}.items() <= doc[0].items() and doc[0]["marker_id"] in (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("moved", "expect_moved"),
    [
        (None, False),  # where it was calibrated, new light: read as the table
        ("x10", True),  # displaced 10 mm: the markers' corners lie 12 px off
        ("roll1", True),  # turned 1 degree about its axis: 7.7 px
        ("x60", True),  # displaced 60 mm: no marker lies near its place, found by the whole-frame look
    ],
)
def test_a_camera_moved_since_calibration_is_seen_by_its_markers(
    table: Table, committed_reader: Reader, moved: str | None, expect_moved: bool
) -> None:
    """The calibration's felt positions, layout boxes and die sizes no longer fit a moved camera: the roll
    is read from the image alone and left to a person (camera_moved), naming the shift."""
    pose = {
        None: table.scene.pose,
        "x10": displaced(table.scene.pose, shift_mm=(10.0, 0.0, 0.0)),
        "roll1": rotated(table.scene.pose, axis_cam=(0.0, 0.0, 1.0), angle_deg=1.0),
        "x60": displaced(table.scene.pose, shift_mm=(60.0, 0.0, 0.0)),
    }[moved]
    fx = Finish(gain=0.75, offset=6.0, gradient=0.25) if moved is None else Finish()
    frame = table.scene.frame(pose=pose, fx=fx, dice=DICE, noise_seed=7)
    refs = table.cal.reference_corners_px
    seen = markers_in_view(frame, markers=MARKERS, reference_corners_px=refs)
    near = markers_near(frame, markers=MARKERS, reference_corners_px=refs)
    if moved is None:  # all four seen where they were: the check had something to judge by
        assert (
            sorted(m.marker_id for m in seen) == [0, 1, 2, 3] and (marker_shift_px(seen, refs) or 9.0) < 0.5
        )
    if moved == "x60":  # none near its place: the whole-frame look found them
        assert len(near) < 2 <= len(seen)
    roll = committed_reader.read(Frame(image=frame, frame_id="f"), expected_dice=3, geometry=table.geometry())
    reasons = [f.reason for f in roll.findings]
    assert ("camera_moved" in reasons) is expect_moved
    if expect_moved:
        assert reasons[0] == "camera_moved" and roll.verdict.value == "no_decision"
        assert "calibrate the table again" in roll.findings[0].detail
        assert all(d.layout_box is None for d in roll.dice)  # read from the image alone: no felt positions
    else:  # valid, or left to a person only for a face the reader doubts (never-sure-2.md), never moved
        assert roll.verdict.value == "valid" or set(reasons) == {"face_uncertain"}, roll.reasons


@pytest.mark.parametrize(
    ("shifts", "corner_pull", "expected"),
    [
        ([0.2, 0.4], 0.0, 0.2),  # two markers, each moved whole: the second largest
        ([4.0, 4.0, 4.0, 4.0], 0.0, 4.0),  # the camera moved: every marker alike
        ([0.1, 0.1, 0.1, 5.0], 0.0, 0.1),  # one marker knocked (or a wrong fit) is not the camera
        ([0.0, 0.0, 0.0, 0.0], 4.8, 0.0),  # a die on a sticker pulls one corner of each: medians stay
        ([3.0], 0.0, None),  # one marker alone does not judge the camera
        ([], 0.0, None),
    ],
)
def test_marker_shift_is_the_camera_not_one_marker_or_one_corner(
    shifts: list[float], corner_pull: float, expected: float | None
) -> None:
    ref = {i: ((0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0)) for i in range(4)}
    seen = [
        MarkerInView(
            marker_id=i,
            corners_px=tuple(
                (x + d + (corner_pull if k == 0 else 0.0), y) for k, (x, y) in enumerate(ref[i])
            ),
        )
        for i, d in enumerate(shifts)
    ]
    got = marker_shift_px(seen, ref)
    assert got == (None if expected is None else pytest.approx(expected))


def test_a_die_on_a_markers_sticker_is_not_a_camera_moved(table: Table, committed_reader: Reader) -> None:
    """A die 2 mm from a far marker's inner corner pulls that corner's fit by px (the reason the shift is
    taken per marker by its median): the roll is read as the table, not as a moved camera."""
    quad = MARKERS.corners_mm(LAYOUT)[2]  # far right
    cx, cy = LAYOUT.width_mm / 2, LAYOUT.depth_mm / 2
    corner = quad[np.argmin(np.hypot(quad[:, 0] - cx, quad[:, 1] - cy))]
    x, y = corner + np.sign([cx - corner[0], cy - corner[1]]) * (LAYOUT.die_edge_mm / 2 + 2.0)
    frame = table.scene.frame(dice=(*DICE[:2], (float(x), float(y), 3)), noise_seed=5)
    refs = table.cal.reference_corners_px
    pulled = max(
        float(np.linalg.norm(np.asarray(m.corners_px) - np.asarray(refs[m.marker_id]), axis=1).max())
        for m in markers_in_view(frame, markers=MARKERS, reference_corners_px=refs)
    )
    assert pulled > JudgeConfig().max_marker_shift_px  # by its worst corner alone, it would look moved
    roll = committed_reader.read(Frame(image=frame, frame_id="f"), expected_dice=3, geometry=table.geometry())
    assert "camera_moved" not in [f.reason for f in roll.findings], roll.reasons


def test_max_marker_shift_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_marker_shift_px"):
        JudgeConfig(max_marker_shift_px=0.0)
