"""Label corrections from a committed file (`throwbox lab eval --label-overrides`), the set left as it is."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.label_overrides import LabelOverrideError, apply_overrides, read_overrides
from models.data import LabelledImage

COMMITTED = (
    Path(__file__).parents[2] / "reports" / "reader" / "faces-lite-2" / "nellbyler-label-overrides.json"
)


def items() -> list[LabelledImage]:
    boxes = np.zeros((3, 4), np.float32) + np.arange(4, dtype=np.float32)
    return [
        LabelledImage(path=Path("a/IMG_1.jpg"), boxes_xyxy=boxes, faces=np.array([2, 5, 5])),
        LabelledImage(path=Path("a/IMG_2.jpg"), boxes_xyxy=boxes, faces=np.array([1, 2, 3])),
    ]


def write(tmp_path: Path, entries: object) -> Path:
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps(entries))
    return path


def test_a_correction_changes_that_die_only(tmp_path: Path) -> None:
    before = items()
    path = write(tmp_path, [{"image": "IMG_1.jpg", "die": 3, "labelled": 5, "face": 6, "why": "six pips"}])
    after = apply_overrides(before, read_overrides(path))
    assert after[0].faces.tolist() == [2, 5, 6]
    assert before[0].faces.tolist() == [2, 5, 5]  # the loaded set is not changed in place
    assert after[1] is before[1]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"image": "IMG_9.jpg", "die": 1, "labelled": 2, "face": 3}, "not an image"),
        ({"image": "IMG_1.jpg", "die": 4, "labelled": 2, "face": 3}, "has 3 labelled dice"),
        ({"image": "IMG_1.jpg", "die": 1, "labelled": 4, "face": 3}, "labelled 2, not 4"),
    ],
)
def test_a_correction_that_does_not_match_is_refused(
    tmp_path: Path, entry: dict[str, object], message: str
) -> None:
    with pytest.raises(LabelOverrideError, match=message):
        apply_overrides(items(), read_overrides(write(tmp_path, [entry])))


def test_malformed_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LabelOverrideError, match="list"):
        read_overrides(write(tmp_path, {"image": "x"}))
    with pytest.raises(LabelOverrideError, match="entry 1"):
        read_overrides(write(tmp_path, [{"image": "x"}]))
    with pytest.raises(LabelOverrideError, match=r"faces 1\.\.6"):
        read_overrides(write(tmp_path, [{"image": "x", "die": 1, "labelled": 0, "face": 3}]))


def test_the_committed_nellbyler_corrections() -> None:
    corrections = read_overrides(COMMITTED)
    assert [(o.image, o.labelled, o.face) for o in corrections] == [
        ("IMG_20191209_095555.jpg", 5, 6),
        ("IMG_20191209_100002.jpg", 2, 3),
    ]
    from models.data import SHARED_REAL, load_nellbyler

    real = SHARED_REAL / "d6-topdown-nellbyler"
    if not real.is_dir():
        pytest.skip("../shared is not here (a newcomer's clone)")

    test = load_nellbyler(real, "test")
    after = apply_overrides(test, corrections)
    changed = sum(int((a.faces != b.faces).sum()) for a, b in zip(test, after, strict=True))
    assert changed == 2
