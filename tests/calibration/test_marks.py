"""Table marks: their stored form, the look comparison, and their place in a stored calibration."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from calibration.errors import CorruptCalibrationError
from calibration.marks import TableMark, likeness, make_mark
from calibration.store import load_table, save_table
from calibration.table import TableCalibration, canonical_json, stale_marks_message
from tests.calibration.conftest import Scenes

# A box over the printed layout strip of the small scene (the "Ace" box's corner), where there is print.
BOX = (120.0, 250.0, 150.0, 280.0)


@pytest.mark.parametrize(
    ("score", "marker_id", "face"), [(0.6, None, None), (None, 3, None), (None, None, 6)]
)
def test_a_mark_survives_its_dict(
    scenes: Scenes, score: float | None, marker_id: int | None, face: int | None
) -> None:
    mark = make_mark(scenes.empty, box_xyxy=BOX, score=score, marker_id=marker_id, layout_face=face)
    again = TableMark.from_dict(json.loads(json.dumps(mark.to_dict())))
    assert again == mark and again.marker_id == marker_id and again.layout_face == face
    x0, y0, x1, y1 = mark.window_xyxy
    assert x0 < 120 and y0 < 250 and x1 > 150 and y1 > 280  # the window holds the box and a margin
    assert again.patch().shape == (y1 - y0, x1 - x0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"patch_png_b64": "bm90IGEgcG5n"}, "not a PNG"),  # base64 of "not a png"
        ({"patch_png_b64": "***"}, "cannot be decoded"),  # not base64 at all
        ({"window_xyxy": [0, 0, 5, 5]}, "window's size"),  # a picture of another size than its window
    ],
)
def test_a_corrupt_mark_is_refused(scenes: Scenes, change: dict[str, object], message: str) -> None:
    data = {**make_mark(scenes.empty, box_xyxy=BOX, score=0.6).to_dict(), **change}
    with pytest.raises(CorruptCalibrationError, match=message):
        TableMark.from_dict(data)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"box_xyxy": (10.0, 10.0, 5.0, 20.0)}, "x1 > x0"),
        ({"window_xyxy": (-1, 0, 10, 10)}, "non-empty window"),
        ({"window_xyxy": (5, 5, 5, 10)}, "non-empty window"),
        ({"score": None}, "a detector score, a marker id or a layout face"),  # none of them
        ({"marker_id": 1}, "a detector score, a marker id or a layout face"),  # two of them
        ({"score": None, "marker_id": 1, "layout_face": 2}, "a detector score, a marker id or a layout face"),
    ],
)
def test_a_mark_with_a_bad_box_is_refused(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {
        "box_xyxy": (0.0, 0.0, 10.0, 10.0),
        "score": 0.5,
        "window_xyxy": (0, 0, 12, 12),
        "patch_png_b64": "",
    }
    with pytest.raises(ValueError, match=message):
        TableMark(**{**base, **kwargs})  # type: ignore[arg-type]


def test_likeness_is_the_empty_boxs_look_under_any_light(scenes: Scenes) -> None:
    mark = make_mark(scenes.empty, box_xyxy=BOX, score=0.6)
    frame = scenes.scene.frame(noise_seed=11).astype(np.float64)
    assert likeness(scenes.empty_2, mark) > 0.99  # another empty frame: other noise
    assert likeness(np.clip(frame * 0.6 + 20, 0, 255).astype(np.uint8), mark) > 0.99  # dimmer, greyer
    assert likeness(np.clip(frame * 1.3, 0, 255).astype(np.uint8), mark) > 0.99  # brighter


def test_a_die_on_the_mark_changes_its_look(scenes: Scenes) -> None:
    mark = make_mark(scenes.empty, box_xyxy=BOX, score=0.6)
    cx, cy = (BOX[0] + BOX[2]) / 2, (BOX[1] + BOX[3]) / 2
    x_mm, y_mm = scenes.cal.pixel_to_mm(np.array([[cx, cy]]))[0]
    with_die = scenes.scene.frame(dice=((float(x_mm), float(y_mm), 5),), noise_seed=12)
    assert likeness(with_die, mark) < 0.9


def test_a_window_off_the_frame_or_flat_is_not_like(scenes: Scenes) -> None:
    mark = make_mark(scenes.empty, box_xyxy=(600.0, 330.0, 639.0, 359.0), score=0.6)
    assert likeness(scenes.empty[:300, :600], mark) == 0.0  # the frame is smaller than the window's place
    flat = np.full_like(scenes.empty, 90)
    assert likeness(flat, mark) == 0.0


def _with_marks(cal: TableCalibration, scenes: Scenes) -> TableCalibration:
    return replace(cal, marks=(make_mark(scenes.empty, box_xyxy=BOX, score=0.6),))


def test_marks_are_stored_with_the_calibration(scenes: Scenes, tmp_path: Path) -> None:
    cal = _with_marks(scenes.cal, scenes)
    save_table(cal, tmp_path)
    loaded = load_table(tmp_path, cal.table_id, resolution_wh=cal.resolution_wh)
    assert loaded.marks == cal.marks
    assert loaded.calibration_id == cal.calibration_id != scenes.cal.calibration_id  # marks are checksummed


def test_a_calibration_without_marks_keeps_the_form_it_had_before_marks(scenes: Scenes) -> None:
    """Calibrations stored before marks existed have no "marks" key; writing none keeps their checksum."""
    body = scenes.cal.to_dict()
    assert "marks" not in body
    assert TableCalibration.from_dict(body).marks == ()
    assert "marks" in _with_marks(scenes.cal, scenes).to_dict()


@pytest.mark.parametrize(
    ("marks", "message"),
    [
        ([{"box_xyxy": [1, 2, 3]}], "marks"),  # a mark missing its fields
        ("not a list", "marks"),
        ([], "empty 'marks' list"),  # written only by hand: an empty list would change the id
    ],
)
def test_a_stored_calibration_with_bad_marks_is_refused(
    scenes: Scenes, tmp_path: Path, marks: object, message: str
) -> None:
    path = save_table(_with_marks(scenes.cal, scenes), tmp_path)
    doc = json.loads(path.read_text())
    doc["body"]["marks"] = marks
    text = canonical_json(doc["body"])
    doc["checksum"] = "sha256:" + hashlib.sha256(text.encode()).hexdigest()  # a well-formed file otherwise
    path.write_text(json.dumps(doc))
    with pytest.raises(CorruptCalibrationError) as err:
        load_table(tmp_path, scenes.cal.table_id, resolution_wh=scenes.cal.resolution_wh)
    assert str(path) in str(err.value) and message in str(err.value)


@pytest.mark.parametrize(
    ("has_marks", "found_by", "reader_uses", "stale"),
    [
        (True, "detect_a", "detect_a", False),  # the same detector: the marks fit
        (True, "detect_a", "detect_b", True),  # a new detector boxes other print: calibrate again
        (False, "detect_a", "detect_b", False),  # no marks: nothing to go stale
        (True, None, "detect_b", False),  # not recorded (a hand-made file): nothing to compare
        (True, "detect_a", None, False),  # a reader without a named detector
    ],
)
def test_marks_from_another_detector_are_called_stale(
    scenes: Scenes, has_marks: bool, found_by: str | None, reader_uses: str | None, stale: bool
) -> None:
    cal = replace(_with_marks(scenes.cal, scenes) if has_marks else scenes.cal, marks_detector=found_by)
    message = stale_marks_message(cal, reader_uses)
    assert (message is not None) is stale
    if message is not None:
        assert "detect_a" in message and "detect_b" in message and "calibrate the table again" in message


def test_the_detector_that_found_the_marks_is_stored(scenes: Scenes, tmp_path: Path) -> None:
    cal = replace(_with_marks(scenes.cal, scenes), marks_detector="detect_a")
    save_table(cal, tmp_path)
    loaded = load_table(tmp_path, cal.table_id, resolution_wh=cal.resolution_wh)
    assert loaded.marks_detector == "detect_a" and loaded.calibration_id == cal.calibration_id
