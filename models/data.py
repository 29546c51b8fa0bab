"""Labelled images for training and evaluation: the real sets (YOLO labels) and synthetic scenes.

Only numpy/OpenCV here, so `throwbox lab eval` can use it without torch. Real-set layouts are described in
`../shared/datasets/real/*/PROVENANCE.txt`: YOLO `class cx cy w h` (normalised), class k = face k + 1.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from calibration.camera import Camera

SHARED_REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "real"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


class DatasetError(Exception):
    """A dataset folder is missing or not in a layout this module understands."""


@dataclass(frozen=True)
class LabelledImage:
    """One image with its dice: boxes (n, 4) xyxy px of the whole die (or top face, see `box_kind`)."""

    path: Path
    boxes_xyxy: NDArray[np.float32]
    faces: NDArray[np.int64]  # (n,) 1..6 (0: no face, only from `load_synth(all_dice=True)`)
    box_kind: str = "die"  # "die": the whole die as seen; "top": the top face only (matteop65)
    camera: Camera | None = None  # synthetic scenes: the camera that took the frame (its calibration)
    # Synthetic scenes: the camera-shake blur the generator gave the frame (px, the label's
    # `render.degradation.motion_px`; 0 or 1: a still frame); None for photos and labels that do not say.
    motion_blur_px: int | None = None
    # Synthetic scenes: per die, whether it is cocked by the generator's truth (one side resting on chips or
    # another object, read by rule: 675a.4(c)); None for photos, whose dice lie flat.
    cocked: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        if self.boxes_xyxy.ndim != 2 or self.boxes_xyxy.shape[1] != 4:
            raise ValueError(f"boxes_xyxy must be (n, 4), got {self.boxes_xyxy.shape}")
        if self.faces.shape != (self.boxes_xyxy.shape[0],):
            raise ValueError("faces must have one entry per box")
        if self.cocked is not None and self.cocked.shape != self.faces.shape:
            raise ValueError("cocked must have one entry per box")


def _read_yolo(label_path: Path, width: int, height: int) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    boxes: list[list[float]] = []
    faces: list[int] = []
    for line_no, line in enumerate(label_path.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 5:
            raise DatasetError(f"{label_path}:{line_no}: expected 'class cx cy w h', got {line!r}")
        cls = int(parts[0])
        cx, cy, w, h = (float(v) for v in parts[1:])
        if not 0 <= cls <= 5:
            raise DatasetError(f"{label_path}:{line_no}: class {cls} is not 0..5")
        boxes.append(
            [(cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height]
        )
        faces.append(cls + 1)
    return np.asarray(boxes, np.float32).reshape(-1, 4), np.asarray(faces, np.int64)


def _image_size(path: Path) -> tuple[int, int]:
    import cv2

    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise DatasetError(f"unreadable image {path}")
    return int(img.shape[1]), int(img.shape[0])


def load_nellbyler(root: Path, split: str) -> list[LabelledImage]:
    """The top-down set: `split` is 'train', 'test' or 'all' (splits/{train,test}.txt)."""
    if split not in ("train", "test", "all"):
        raise DatasetError(f"unknown split {split!r} for {root}; use train, test or all")
    names: list[str] = []
    for part in ("train", "test") if split == "all" else (split,):
        split_file = root / "splits" / f"{part}.txt"
        if not split_file.is_file():
            raise DatasetError(f"split file not found: {split_file}")
        names += [n.strip() for n in split_file.read_text(encoding="utf-8").splitlines() if n.strip()]
    items = []
    for name in names:
        path = root / "images" / name
        w, h = _image_size(path)
        boxes, faces = _read_yolo(root / "labels_yolo" / (Path(name).stem + ".txt"), w, h)
        items.append(LabelledImage(path=path, boxes_xyxy=boxes, faces=faces, box_kind="die"))
    return items


def load_yolo_folder(folder: Path, *, box_kind: str) -> list[LabelledImage]:
    """A folder of images with same-stem YOLO .txt labels (matteop65's train/ and valid/)."""
    if not folder.is_dir():
        raise DatasetError(f"not a folder: {folder}")
    items = []
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES):
        label = path.with_suffix(".txt")
        if not label.is_file():
            continue
        w, h = _image_size(path)
        boxes, faces = _read_yolo(label, w, h)
        items.append(LabelledImage(path=path, boxes_xyxy=boxes, faces=faces, box_kind=box_kind))
    return items


def load_synth(
    root: Path, *, limit: int = 0, all_dice: bool = False, styles_out: Collection[str] = ()
) -> list[LabelledImage]:
    """Synthetic scenes written by `throwbox lab synth`, through `datasets.loaders` (the generator's loader).

    Dice less than 30 % visible are left out, and so are dice with no face by the rules (void, off the
    table) unless `all_dice` (detection training: a wedged die or a die off the felt is still a die in the
    picture); their face is then the one on top as the camera sees it, or 0 where there is none. A scene
    with any die (seen or not) in one of `styles_out` is left out whole: a dice style held out of training.
    """
    from datasets import loaders

    try:
        scenes = loaders.load_synth(root, min_visible=0.3)
    except loaders.DatasetError as exc:
        raise DatasetError(str(exc)) from exc
    items = []
    if styles_out:
        scenes = tuple(
            s for s in scenes if s.truth is None or not any(d.style in styles_out for d in s.truth.dice)
        )
    for scene in scenes[: limit or None]:
        dice = [d for d in scene.dice if all_dice or d.face is not None]
        items.append(
            LabelledImage(
                path=scene.image_path,
                boxes_xyxy=np.asarray([d.box_xyxy for d in dice], np.float32).reshape(-1, 4),
                faces=np.asarray([d.face or d.face_visible or 0 for d in dice], np.int64),
                box_kind="die",
                camera=None if scene.truth is None else scene.truth.camera,
                motion_blur_px=None if scene.truth is None else scene.truth.motion_blur_px,
                cocked=np.asarray([d.cocked for d in dice], np.bool_),
            )
        )
    return items


def load_dataset(path: Path, *, split: str = "test") -> list[LabelledImage]:
    """Recognise a dataset folder by its layout and load it (the `throwbox lab eval DATASET` entry point)."""
    if not path.exists():
        raise DatasetError(f"dataset not found: {path}")
    if (path / "splits").is_dir() and (path / "labels_yolo").is_dir():
        return load_nellbyler(path, split)
    if (path / split).is_dir() and any((path / split).glob("*.txt")):
        return load_yolo_folder(path / split, box_kind="top")
    if any(path.glob("*.txt")) and any(p.suffix.lower() in IMAGE_SUFFIXES for p in path.iterdir()):
        return load_yolo_folder(path, box_kind="die")
    if (path / "labels").is_dir():
        return load_synth(path)
    raise DatasetError(f"{path}: not a layout I know (nellbyler, YOLO folder, or synthetic scenes)")


def describe(items: list[LabelledImage]) -> str:
    """One line: images and dice counted."""
    n_dice = sum(len(i.faces) for i in items)
    return json.dumps({"images": len(items), "dice": n_dice})


HOLD_BACK_SEED = 0  # which photos of a real train folder are kept for tuning: fixed, whatever a run's seed


def held_back(count: int, fraction: float) -> set[int]:
    """Indices of the `fraction` of `count` items (a real train folder, in loading order) kept for tuning.

    The same permutation for every script, so a smaller fraction is a subset of a larger one: the
    die-state model's tenth of nellbyler train is inside the wide face model's fifth.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction must be in [0, 1), got {fraction}")
    order = np.random.default_rng(HOLD_BACK_SEED).permutation(count)
    return set(order[: round(count * fraction)].tolist())
