"""The loaders read YOLO-labelled real photos (and fail clearly on bad folders)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from datasets.loaders import (
    DatasetError,
    load_matteop65,
    load_nellbyler,
    parse_yolo,
    real_data_root,
)


def _write_image(path: Path, w: int, h: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.zeros((h, w, 3), dtype=np.uint8))


def test_yolo_class_k_is_face_k_plus_1() -> None:
    dice = parse_yolo(
        "0 0.5 0.5 0.2 0.1\n5 0.25 0.75 0.1 0.1\n", resolution_wh=(200, 100), box_kind="die", where="t"
    )
    assert [d.face for d in dice] == [1, 6]
    assert dice[0].box_xyxy == pytest.approx((80.0, 45.0, 120.0, 55.0))


@pytest.mark.parametrize(
    "text",
    [
        "6 0.5 0.5 0.1 0.1",  # class 6 would be face 7
        "0 0.5 0.5 0.1",  # four fields
        "a 0.5 0.5 0.1 0.1",  # not a number
    ],
)
def test_yolo_rejects_bad_lines(text: str) -> None:
    with pytest.raises(DatasetError):
        parse_yolo(text, resolution_wh=(100, 100), box_kind="die", where="t")


def test_nellbyler_layout(tmp_path: Path) -> None:
    root = tmp_path / "d6-topdown-nellbyler"
    _write_image(root / "images" / "a.jpg", 64, 64)
    (root / "labels_yolo").mkdir()
    (root / "labels_yolo" / "a.txt").write_text("2 0.5 0.5 0.25 0.25\n")
    (root / "splits").mkdir()
    (root / "splits" / "train.txt").write_text("a.jpg\n")
    (images,) = load_nellbyler(root, split="train")
    assert images.resolution_wh == (64, 64)
    assert images.dice[0].face == 3 and images.dice[0].box_kind == "die"
    with pytest.raises(DatasetError, match="split file"):
        load_nellbyler(root, split="test")


def test_matteop65_layout(tmp_path: Path) -> None:
    root = tmp_path / "d6-webcam-matteop65"
    _write_image(root / "valid" / "v.jpg", 80, 60)
    (root / "valid" / "v.txt").write_text("0 0.5 0.5 0.5 0.5\n")
    (images,) = load_matteop65(root, split="valid")
    assert images.dice[0].box_kind == "top_face"
    assert images.dice[0].box_xyxy == pytest.approx((20.0, 15.0, 60.0, 45.0))
    _write_image(root / "valid" / "w.jpg", 80, 60)
    with pytest.raises(DatasetError, match="label file missing"):
        load_matteop65(root, split="valid")


REAL = real_data_root()


@pytest.mark.skipif(
    not (REAL / "d6-topdown-nellbyler").is_dir(), reason="needs the real photo sets in ../shared"
)
def test_real_sets_load() -> None:
    train, test = load_nellbyler(split="train"), load_nellbyler(split="test")
    assert (len(train), len(test)) == (200, 50)
    assert all(1 <= d.face <= 6 for im in train for d in im.dice if d.face is not None)
    webcam = load_matteop65(split="train") + load_matteop65(split="valid")
    assert len(webcam) == 396
