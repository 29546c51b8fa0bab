"""Loading labelled folders: YOLO labels to whole-die boxes in pixels, faces 1..6, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.data import DatasetError, load_dataset, load_yolo_folder

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
