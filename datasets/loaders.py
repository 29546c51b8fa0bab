"""Loaders: synthetic data sets and the real labelled photo sets, read into the same frozen types.

Real sets (see each folder's PROVENANCE.txt; not part of the repository, found under
`../shared/datasets/real/` or `$THROWBOX_REAL_DATA`):
- `d6-topdown-nellbyler`: 250 top-down 640x640 photos, YOLO labels (class k = face k+1) in labels_yolo/,
  the author's train/test split in splits/{train,test}.txt. Boxes enclose the whole die.
- `d6-webcam-matteop65`: 396 webcam photos (640x480) at an angle, train/ and valid/ with YOLO labels next
  to the images (class k = face k+1). Boxes enclose the top face, not the whole die (`box_kind`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.format import FormatError, SceneTruth, read_scene, scene_from_dict

ImageArray = NDArray[np.uint8]
BoxKind = Literal["die", "top_face"]
Point = tuple[float, float]

NELLBYLER = "d6-topdown-nellbyler"
MATTEOP65 = "d6-webcam-matteop65"


class DatasetError(ValueError):
    """A data set folder is missing, incomplete or malformed."""


@dataclass(frozen=True)
class LabelledDie:
    """One labelled die: its box (what `box_kind` says it encloses), face, and what else is known."""

    box_xyxy: tuple[float, float, float, float]
    face: int | None  # None: no face by the rules (void or off the table)
    box_kind: BoxKind = "die"
    top_quad: tuple[Point, Point, Point, Point] | None = None
    cocked: bool = False
    stacked: bool = False
    off_table: bool = False
    visible_fraction: float = 1.0
    face_visible: int | None = None  # the face on top as the camera sees it (synthetic: face_geometric)

    def __post_init__(self) -> None:
        x0, y0, x1, y1 = self.box_xyxy
        if not (x1 > x0 and y1 > y0):
            raise DatasetError(f"box_xyxy must have x1 > x0 and y1 > y0, got {self.box_xyxy}")
        if self.face is not None and self.face not in range(1, 7):
            raise DatasetError(f"face must be 1..6 or None, got {self.face}")


@dataclass(frozen=True)
class LabelledImage:
    """An image file with its labelled dice; `truth` holds the full synthetic ground truth if any."""

    image_path: Path
    resolution_wh: tuple[int, int]
    dice: tuple[LabelledDie, ...]
    source: str
    split: str
    truth: SceneTruth | None = None

    def load(self) -> ImageArray:
        """The image as (H, W, 3) uint8 BGR."""
        img = cv2.imread(str(self.image_path), cv2.IMREAD_COLOR)
        if img is None:
            raise DatasetError(f"cannot read image {self.image_path}")
        return np.asarray(img, dtype=np.uint8)


def real_data_root() -> Path:
    """Where the real photo sets live: $THROWBOX_REAL_DATA, else ../shared/datasets/real next to the repo."""
    env = os.environ.get("THROWBOX_REAL_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "real"


def load_synth(root: Path, *, min_visible: float = 0.0) -> tuple[LabelledImage, ...]:
    """Every scene of a synthetic data set, sorted by scene id; dice below `min_visible` are left out."""
    labels = root / "labels"
    if not labels.is_dir():
        raise DatasetError(f"{root} is not a synthetic data set (no labels/ folder)")
    out = []
    for path in sorted(labels.glob("*.json")):
        try:
            truth = read_scene(path)
        except FormatError as exc:
            raise DatasetError(f"{path}: {exc}") from exc
        dice = tuple(
            LabelledDie(
                box_xyxy=d.box_xyxy,
                face=d.face,
                box_kind="die",
                top_quad=d.top_quad,
                cocked=d.cocked,
                stacked=d.stacked,
                off_table=d.off_table,
                visible_fraction=d.visible_fraction,
                face_visible=d.face_geometric,
            )
            for d in truth.dice
            if d.in_image and d.visible_fraction >= min_visible
        )
        k = truth.camera.intrinsics
        out.append(
            LabelledImage(root / truth.image, (k.width_px, k.height_px), dice, "synth", root.name, truth)
        )
    return tuple(out)


def _image_size(path: Path) -> tuple[int, int]:
    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise DatasetError(f"cannot read image {path}")
    return (int(img.shape[1]), int(img.shape[0]))


def parse_yolo(
    text: str, *, resolution_wh: tuple[int, int], box_kind: BoxKind, where: str
) -> tuple[LabelledDie, ...]:
    """YOLO lines `class xc yc w h` (normalised), class k = face k+1, into pixel boxes."""
    w, h = resolution_wh
    dice = []
    for n, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 5:
            raise DatasetError(f"{where}:{n}: expected 5 fields, got {len(parts)}")
        try:
            cls = int(parts[0])
            xc, yc, bw, bh = (float(v) for v in parts[1:])
        except ValueError as exc:
            raise DatasetError(f"{where}:{n}: not a YOLO label line: {line!r}") from exc
        if cls not in range(6):
            raise DatasetError(f"{where}:{n}: class must be 0..5 (faces 1..6), got {cls}")
        x0 = max(0.0, (xc - bw / 2) * w)
        y0 = max(0.0, (yc - bh / 2) * h)
        x1 = min(float(w), (xc + bw / 2) * w)
        y1 = min(float(h), (yc + bh / 2) * h)
        dice.append(
            LabelledDie(box_xyxy=(x0, y0, x1, y1), face=cls + 1, box_kind=box_kind, face_visible=cls + 1)
        )
    return tuple(dice)


def load_nellbyler(
    root: Path | None = None, *, split: Literal["train", "test"] = "train"
) -> tuple[LabelledImage, ...]:
    """The top-down d6 photos of nell-byler/dice_detection, by the author's split."""
    base = root or real_data_root() / NELLBYLER
    split_file = base / "splits" / f"{split}.txt"
    if not split_file.is_file():
        raise DatasetError(f"{base}: no split file {split_file.name} (is this the {NELLBYLER} folder?)")
    out = []
    for name in split_file.read_text(encoding="utf-8").split():
        img = base / "images" / name
        label = base / "labels_yolo" / (Path(name).stem + ".txt")
        if not label.is_file():
            raise DatasetError(f"{label}: label file missing for {name}")
        size = _image_size(img)
        dice = parse_yolo(
            label.read_text(encoding="utf-8"), resolution_wh=size, box_kind="die", where=str(label)
        )
        out.append(LabelledImage(img, size, dice, NELLBYLER, split))
    return tuple(out)


def load_matteop65(
    root: Path | None = None, *, split: Literal["train", "valid"] = "train"
) -> tuple[LabelledImage, ...]:
    """The angled webcam d6 photos of matteop65/Dice_Detection_Recognition (boxes enclose the top face)."""
    base = (root or real_data_root() / MATTEOP65) / split
    if not base.is_dir():
        raise DatasetError(f"{base}: split folder missing (is this the {MATTEOP65} folder?)")
    out = []
    for img in sorted(base.glob("*.jpg")):
        label = img.with_suffix(".txt")
        if not label.is_file():
            raise DatasetError(f"{label}: label file missing for {img.name}")
        size = _image_size(img)
        dice = parse_yolo(
            label.read_text(encoding="utf-8"), resolution_wh=size, box_kind="top_face", where=str(label)
        )
        out.append(LabelledImage(img, size, dice, MATTEOP65, split))
    return tuple(out)


@dataclass(frozen=True)
class LabelledVideo:
    """A synthetic throw video: frame files with timestamps and motion, the frame of rest, the final truth."""

    folder: Path
    fps: float
    frames: tuple[Path, ...]
    times_s: tuple[float, ...]
    moving: tuple[bool, ...]
    at_rest_frame: int  # first frame from which every die stays at rest to the end
    final: SceneTruth
    mp4: Path | None


def load_videos(root: Path) -> tuple[LabelledVideo, ...]:
    """Every throw video under `root` (a data set's videos/ folder), sorted by video id."""
    if not root.is_dir():
        raise DatasetError(f"{root}: no such folder of throw videos")
    out = []
    for doc_path in sorted(root.glob("*/video.json")):
        try:
            doc = json.loads(doc_path.read_text(encoding="utf-8"))
            if doc.get("format") != "throwbox-video/1":
                raise DatasetError(f"{doc_path}: unknown video format {doc.get('format')!r}")
            folder = doc_path.parent
            frames = doc["frames"]
            mp4 = folder / str(doc["mp4"]) if doc.get("mp4") else None
            out.append(
                LabelledVideo(
                    folder=folder,
                    fps=float(doc["fps"]),
                    frames=tuple(folder / str(f["file"]) for f in frames),
                    times_s=tuple(float(f["t_s"]) for f in frames),
                    moving=tuple(bool(f["moving"]) for f in frames),
                    at_rest_frame=int(doc["at_rest_frame"]),
                    final=scene_from_dict(doc["final"]),
                    mp4=mp4 if mp4 is not None and mp4.is_file() else None,
                )
            )
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
            if isinstance(exc, DatasetError):
                raise
            raise DatasetError(f"{doc_path}: malformed video document ({exc!r})") from exc
    return tuple(out)
