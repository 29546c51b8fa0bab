"""Phantom dice (issue 55): before a box is given a face it must look like a whole die.

A translucent die's see-through pips, a chip or a pip taken for a die make boxes the detector scores as
dice. Two checks, both geometry:

- size: the box's long side against the die's size where it lies: from the table's camera (the long side of
  a whole die's projected cube, `calibration.die_scale.die_box_sides_px`) when the frame has a calibration,
  else the
  frame's typical die (the median long side of its boxes, `vision.judge.size.size_ratios`; no opinion with
  fewer than three boxes). Outside `[min_ratio, max_ratio]` it is not a whole die.
- inside another die: a box whose centre lies inside the top face of a larger box (at least
  `nested_size_ratio` times its long side) is that die's pip, or a hidden face's pip seen through it.

A third, kept apart (`ValidityConfig.require_apart`): a box that another box covers for more than
`max_overlap` of its area is a box across two touching dice, or a die boxed twice; on rendered tuning scenes
(tune-s55900) such boxes were most of the faces given where there was no die (docs/history/never-sure-2.md).

The game's count of dice stays the first check (vision/judge/count.py): this one only says which boxes may
be given a face (`ValidityConfig.require_whole_die`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from calibration.die_scale import die_box_sides_px
from vision.judge.size import MIN_DICE_FOR_MEDIAN
from vision.state.model import reference_die_px
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate


@dataclass(frozen=True)
class PhantomConfig:
    """Bounds of a whole die's size, as ratios of the die's expected long side."""

    # Why 0.6 and 1.6: a die's box grows under an oblique camera (its sides show) and shrinks when half
    # hidden by a wall; a pip is a fifth of a die, a chip stack twice one (vision/judge/size.py counts).
    min_ratio: float = 0.6
    max_ratio: float = 1.6
    nested_size_ratio: float = 1.8  # a box inside one this much larger is its pip
    # Why 0.4: on tune-s55900, boxes covered by another for more than 0.4 of their area held 10 of its 22
    # boxes where there was no die (4 of the 5 given a face at 0.90) and 60 of its 2,931 dice (2 %).
    max_overlap: float = 0.4

    def __post_init__(self) -> None:
        if not 0.0 < self.min_ratio < 1.0 < self.max_ratio:
            raise ValueError(f"need 0 < min_ratio < 1 < max_ratio, got {self.min_ratio}, {self.max_ratio}")
        if not self.nested_size_ratio > 1.0:
            raise ValueError(f"nested_size_ratio must be above 1, got {self.nested_size_ratio}")
        if not 0.0 < self.max_overlap <= 1.0:
            raise ValueError(f"max_overlap must be in (0, 1], got {self.max_overlap}")


def _long_side(box: Sequence[float]) -> float:
    return float(max(box[2] - box[0], box[3] - box[1]))


def size_ratios(candidates: Sequence[DieCandidate], *, geometry: TableGeometry | None) -> list[float | None]:
    """Each box's long side over the die's expected long side there; None: no reference to judge by."""
    boxes = [c.box_xyxy for c in candidates]
    if not boxes:
        return []
    if geometry is not None:
        # The long side of the box a whole die shows where it lies: its cube projected through the table's
        # camera, so an oblique camera's view of a die's sides is part of it (calibration/die_scale.py).
        # Before 2026-12-07 this was the top face's edge times 1.2, which took whole dice under a camera
        # leaning 39 degrees for boxes 1.4-1.75 times a die (tests/vision/test_rectified_crops.py).
        centres = geometry.centres_mm(boxes)
        sides = die_box_sides_px(geometry.camera, centres, die_edge_mm=geometry.layout.die_edge_mm)
        return [_long_side(b) / max(float(e), 1e-6) for b, e in zip(boxes, sides, strict=True)]
    if len(boxes) < MIN_DICE_FOR_MEDIAN:
        return [None] * len(boxes)
    ref = reference_die_px(boxes)
    return [_long_side(b) / ref for b in boxes]


def inside_larger(candidates: Sequence[DieCandidate], *, config: PhantomConfig) -> list[bool]:
    """Per box: does its centre lie inside the top face of a box `nested_size_ratio` times larger?"""
    out = []
    for i, c in enumerate(candidates):
        x0, y0, x1, y1 = c.box_xyxy
        centre = ((x0 + x1) / 2.0, (y0 + y1) / 2.0)
        side = _long_side(c.box_xyxy)
        hit = False
        for j, other in enumerate(candidates):
            if j == i or _long_side(other.box_xyxy) < config.nested_size_ratio * side:
                continue
            quad = np.asarray(other.top_quad, np.float32).reshape(-1, 1, 2)
            if cv2.pointPolygonTest(quad, centre, False) >= 0:
                hit = True
                break
        out.append(hit)
    return out


def whole_dice(
    candidates: Sequence[DieCandidate],
    *,
    geometry: TableGeometry | None = None,
    config: PhantomConfig | None = None,
) -> tuple[bool, ...]:
    """Per box: does it look like a whole die (size where it lies, not inside another die's top face)?"""
    config = config or PhantomConfig()
    ratios = size_ratios(candidates, geometry=geometry)
    nested = inside_larger(candidates, config=config)
    return tuple(
        not n and (r is None or config.min_ratio <= r <= config.max_ratio)
        for r, n in zip(ratios, nested, strict=True)
    )


def overlaps(candidates: Sequence[DieCandidate]) -> tuple[float, ...]:
    """Per box: the largest share of its area that another box covers (0: it stands apart)."""
    boxes = np.asarray([c.box_xyxy for c in candidates], np.float64).reshape(-1, 4)
    if len(boxes) < 2:
        return (0.0,) * len(boxes)
    lo = np.maximum(boxes[:, None, :2], boxes[None, :, :2])
    hi = np.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
    inter = np.clip(hi - lo, 0.0, None).prod(axis=2)
    np.fill_diagonal(inter, 0.0)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return tuple(float(v) for v in (inter / area[:, None]).max(axis=1))
