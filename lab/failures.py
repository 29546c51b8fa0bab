"""What the reader got wrong on a labelled set, die by die, and its sheet (`throwbox lab eval --failures`).

Per image the reader's dice are matched to the labels as the scores are (`lab.evaluate.match`), and each
labelled die is a failure when the learned classifier reads another face (`wrong`), when it is read right but
left uncertain (`uncertain`: the classifier unsure, or the pip count against it), or when no detection
matches it (`missed`); a detection that matches no label is `false`. The sheet draws each in its colour on a
crop around the die, with the label, the reading and its probability, so a person sees at a glance what
kind of die fails and why (the figures alone do not say).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from lab.evaluate import match
from vision.annotate import tile_grid
from vision.types import Roll

KINDS: tuple[str, ...] = ("wrong", "missed", "false", "uncertain")  # the sheet's order
KIND_BGR: dict[str, tuple[int, int, int]] = {
    "wrong": (0, 0, 220),
    "missed": (220, 120, 0),
    "false": (200, 0, 200),
    "uncertain": (0, 170, 255),
}
TILE_PX = 128
CONTEXT = 2.2  # a tile is this many die sizes wide: the die with its neighbours
CAPTION_PX = 30


@dataclass(frozen=True)
class DieFailure:
    """One labelled die the reader did not read right, or one detection on no labelled die."""

    image: str  # the image's path
    kind: str  # one of KINDS
    box_xyxy: tuple[float, float, float, float]  # the detection's box (the label's for `missed`)
    label: int | None  # the labelled face (None for `false`)
    read: int | None  # the learned classifier's face (None for `missed`)
    confidence: float | None  # its top probability
    pip_count: int | None
    reasons: tuple[str, ...]  # why the judge left it uncertain, if it did


def die_failures(
    image: Path, gt_xyxy: NDArray[np.float32], gt_faces: NDArray[np.int64], roll: Roll, *, box_kind: str
) -> list[DieFailure]:
    """The failures of one read image against its labels (see the module's text)."""
    pred = np.array([d.candidate.box_xyxy for d in roll.dice], np.float32).reshape(-1, 4)
    score = np.array([d.candidate.score for d in roll.dice], np.float32)
    pairs = match(pred, score, gt_xyxy, box_kind=box_kind)
    out: list[DieFailure] = []
    for p, g in pairs:
        die, truth = roll.dice[p], int(gt_faces[g])
        learned = int(np.argmax(die.face_probs)) + 1
        if learned == truth and die.face is not None:
            continue
        out.append(
            DieFailure(
                image=str(image),
                kind="wrong" if learned != truth else "uncertain",
                box_xyxy=die.candidate.box_xyxy,
                label=truth,
                read=learned,
                confidence=round(die.confidence, 4),
                pip_count=die.pip_count,
                reasons=die.reasons,
            )
        )
    matched_gt, matched_pred = {g for _, g in pairs}, {p for p, _ in pairs}
    for g in range(len(gt_faces)):
        if g not in matched_gt:
            box = tuple(float(v) for v in gt_xyxy[g])
            missed = (box[0], box[1], box[2], box[3])
            out.append(DieFailure(str(image), "missed", missed, int(gt_faces[g]), None, None, None, ()))
    for p, die in enumerate(roll.dice):
        if p not in matched_pred:
            learned = int(np.argmax(die.face_probs)) + 1
            confidence = round(die.confidence, 4)
            box_xyxy = die.candidate.box_xyxy
            out.append(
                DieFailure(
                    str(image), "false", box_xyxy, None, learned, confidence, die.pip_count, die.reasons
                )
            )
    return out


def counts(failures: Iterable[DieFailure]) -> dict[str, int]:
    """Failures per kind, every kind named."""
    seen = Counter(f.kind for f in failures)
    return {k: seen.get(k, 0) for k in KINDS}


def _caption(f: DieFailure) -> tuple[str, str]:
    label = "-" if f.label is None else str(f.label)
    if f.kind == "missed":
        return f"label {label}", "missed"
    read = f"read {f.read} p{f.confidence:.2f}" if f.confidence is not None else f"read {f.read}"
    count = "" if f.pip_count is None else f" c{f.pip_count}"
    return f"L{label} {read}{count}", f.kind


def _tile(image: NDArray[np.uint8], f: DieFailure) -> NDArray[np.uint8]:
    x0, y0, x1, y1 = f.box_xyxy
    side = max(x1 - x0, y1 - y0, 8.0) * CONTEXT
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    scale = TILE_PX / side
    affine = np.array(
        [[scale, 0, TILE_PX / 2 - scale * cx], [0, scale, TILE_PX / 2 - scale * cy]], np.float32
    )
    white = (255, 255, 255)
    tile = cv2.warpAffine(
        image, affine, (TILE_PX, TILE_PX), borderMode=cv2.BORDER_CONSTANT, borderValue=white
    )
    colour = KIND_BGR[f.kind]
    half, c = TILE_PX / CONTEXT / 2, TILE_PX / 2  # the die's box, centred on the tile
    cv2.rectangle(tile, (round(c - half), round(c - half)), (round(c + half), round(c + half)), colour, 2)
    panel = np.full((TILE_PX + CAPTION_PX, TILE_PX, 3), 255, np.uint8)
    panel[:TILE_PX] = tile
    for row, text in enumerate(_caption(f)):
        ink = colour if row else (0, 0, 0)
        cv2.putText(panel, text, (2, TILE_PX + 12 + 13 * row), cv2.FONT_HERSHEY_PLAIN, 0.85, ink, 1)
    return panel


def failure_sheet(
    failures: Sequence[DieFailure],
    load: Callable[[str], NDArray[np.uint8]],
    *,
    columns: int = 10,
    max_tiles: int = 150,
) -> NDArray[np.uint8]:
    """A grid of tiles, wrong faces first, then missed dice, false detections and dice left uncertain."""
    if columns < 1 or max_tiles < 1:
        raise ValueError(f"columns and max_tiles must be >= 1, got {columns}, {max_tiles}")
    ordered = sorted(failures, key=lambda f: KINDS.index(f.kind))[:max_tiles]
    tiles: list[NDArray[np.uint8]] = []
    cache: dict[str, NDArray[np.uint8]] = {}
    for f in ordered:
        if f.image not in cache:
            cache = {f.image: load(f.image)}
        tiles.append(_tile(cache[f.image], f))
    return tile_grid(tiles, columns)


def write(
    failures: Sequence[DieFailure], folder: Path, load: Callable[[str], NDArray[np.uint8]]
) -> dict[str, Any]:
    """Write `folder/failures.jsonl` (one failure a line) and `folder/failures.jpg` (the sheet)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "failures.jsonl").open("w", encoding="utf-8") as fh:
        for f in failures:
            fh.write(json.dumps(asdict(f)) + "\n")
    sheet = folder / "failures.jpg"
    if not cv2.imwrite(str(sheet), failure_sheet(failures, load), [cv2.IMWRITE_JPEG_QUALITY, 90]):
        raise OSError(f"could not write {sheet}")
    return {"folder": str(folder), "sheet": str(sheet), "by_kind": counts(failures)}
