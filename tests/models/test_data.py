"""Loading labelled folders: YOLO labels to whole-die boxes in pixels, faces 1..6, clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from models.data import DatasetError, load_dataset, load_synth, load_yolo_folder

FIXTURES = Path(__file__).resolve().parents[1] / "vision" / "fixtures"


def test_fixture_folder_loads_with_pixel_boxes() -> None:
    items = load_yolo_folder(FIXTURES, box_kind="die")
    assert [i.path.name for i in items] == sorted(p.name for p in FIXTURES.glob("*.jpg"))
    assert sum(len(i.faces) for i in items) == 38
    for it in items:
        assert it.boxes_xyxy.min() >= 0 and it.boxes_xyxy.max() <= 640
        assert set(it.faces.tolist()) <= {1, 2, 3, 4, 5, 6}
        assert np.all(it.boxes_xyxy[:, 2] > it.boxes_xyxy[:, 0])


def test_bad_label_line_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes((FIXTURES / "IMG_20191208_111702.jpg").read_bytes())
    (tmp_path / "a.txt").write_text("7 0.5 0.5 0.1 0.1\n")
    with pytest.raises(DatasetError, match=r"a.txt:1: class 7"):
        load_yolo_folder(tmp_path, box_kind="die")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "not found"),  # no such folder
        (lambda p: p, "not a layout I know"),  # an empty folder
    ],
)
def test_unknown_dataset_is_a_clear_error(tmp_path: Path, make: object, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        load_dataset(make(tmp_path))  # type: ignore[operator]


def test_synthetic_dice_with_no_face_are_kept_for_detection_only_when_asked(tmp_path: Path) -> None:
    # The off-table fixture scene (tests/vision/fixtures/judge, rendered by `throwbox lab synth`): one die
    # in the picture has no face by the rules (it is off the felt), nine have one.
    judge = Path(__file__).resolve().parent.parent / "vision" / "fixtures" / "judge"
    (tmp_path / "labels").mkdir()
    shutil.copy(judge / "off_table.json", tmp_path / "labels" / "off_table.json")
    shutil.copy(judge / "off_table.jpg", tmp_path / "off_table.jpg")
    (faced,) = load_synth(tmp_path)
    (every,) = load_synth(tmp_path, all_dice=True)
    assert len(faced.faces) == 9 and set(faced.faces.tolist()) <= set(range(1, 7))
    assert len(every.faces) == 10
    extra = [b for b in every.boxes_xyxy.tolist() if b not in faced.boxes_xyxy.tolist()]
    assert len(extra) == 1  # the off-table die, as a box the detector must learn to find


def test_held_back_photos_are_fixed_nested_and_sized() -> None:
    from models.data import held_back

    fifth, tenth = held_back(200, 1 / 5), held_back(200, 1 / 10)
    assert len(fifth) == 40 and len(tenth) == 20
    assert tenth <= fifth  # the die-state model's tenth of nellbyler train is inside the face model's fifth
    assert held_back(200, 1 / 5) == fifth  # the same photos on every call, whatever a run's seed
    assert all(0 <= k < 200 for k in fifth)
    assert held_back(5, 0.0) == set()
    with pytest.raises(ValueError, match="fraction"):
        held_back(10, 1.0)
