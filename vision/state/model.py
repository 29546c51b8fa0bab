"""What each die is doing, from the learned die-state classifier on a context crop around the die.

The crop is centred on the detector's box and spans `CONTEXT` reference die sizes, where the reference is
the median box of the frame's dice: so the crop keeps the die's apparent size relative to its neighbours
(a die on a die is closer to the camera, and its box holds two dice), and enough surroundings to see the
chips a die leans on, the die it lies on, or the wall between it and the felt. Training cuts its crops
with this same function (models/train_die_state.py).

Model contract (ONNX, manifest name `die_state`): input (N, 3, 64, 64) float32 RGB in [0, 1]; output
(N, 8): probabilities of the seven `STATE_LABELS` (summing to 1) and the estimated tilt in degrees; the
models before 2026-11-30 give (N, 7), the six die states without `no_die`, and are still read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from vision.onnx_session import OnnxModel
from vision.types import DieCandidate, ImageArray

STATE_LABELS: tuple[str, ...] = ("flat", "cocked", "wedged", "stacked", "under", "outside", "no_die")
FLAT, COCKED, WEDGED, STACKED, UNDER, OUTSIDE, NO_DIE = range(7)
# The die states proper; `no_die` (a detection that is not a die at all: a chip stack, a chip's edge, a
# mark on the felt) came with the 2026-11-30 model. A model with the six states only (its output 6 + 1
# wide) is read as giving `no_die` probability 0.
DIE_STATES = STATE_LABELS[:NO_DIE]
# Kinds of state: the judge first asks which kind (is the die flat, cocked, on a die, off the table?),
# then, within cocked and stacked, which side of it (one side resting or more; on top or underneath).
KINDS: dict[str, tuple[int, ...]] = {
    "flat": (FLAT,),
    "cocked": (COCKED, WEDGED),
    "stacked": (STACKED, UNDER),
    "outside": (OUTSIDE,),
    "no_die": (NO_DIE,),
}
STATE_CROP_PX = 64
CONTEXT = 3.0  # crop side in reference die sizes


@dataclass(frozen=True)
class DieState:
    """The classifier's opinion on one die: a probability per `STATE_LABELS` entry and a tilt estimate."""

    probs: tuple[float, ...]
    tilt_deg: float
    # Found by the second look for a wedged die within a box first called no die (vision/state/probe.py).
    probed: bool = False

    def __post_init__(self) -> None:
        if len(self.probs) != len(STATE_LABELS):
            raise ValueError(f"DieState.probs must have {len(STATE_LABELS)} entries, got {len(self.probs)}")
        if any(not 0.0 <= p <= 1.0 for p in self.probs) or abs(sum(self.probs) - 1.0) > 1e-3:
            raise ValueError(f"DieState.probs must be probabilities summing to 1, got {self.probs}")

    @property
    def label(self) -> str:
        """The most probable state."""
        return STATE_LABELS[int(np.argmax(self.probs))]

    @property
    def confidence(self) -> float:
        """Probability of the most probable state."""
        return float(max(self.probs))

    def p(self, label: str) -> float:
        """Probability of one state by name."""
        return float(self.probs[STATE_LABELS.index(label)])

    @property
    def kind(self) -> str:
        """The most probable kind: flat, cocked (one side or more), stacked (on/under), outside, no_die."""
        return max(KINDS, key=lambda k: self.kind_confidence(k))

    def kind_confidence(self, kind: str | None = None) -> float:
        """Probability of a kind of state (the most probable kind when None)."""
        if kind is None:
            kind = self.kind
        return float(sum(self.probs[i] for i in KINDS[kind]))


def reference_die_px(boxes_xyxy: Sequence[Sequence[float]]) -> float:
    """The frame's typical die size: the median long side of the boxes (most dice of a roll lie flat)."""
    if len(boxes_xyxy) == 0:
        raise ValueError("no boxes to take a reference die size from")
    sides = [max(float(b[2]) - float(b[0]), float(b[3]) - float(b[1])) for b in boxes_xyxy]
    return float(np.median(sides))


def crop_context(
    image_bgr: ImageArray,
    box_xyxy: Sequence[float],
    *,
    ref_px: float,
    size_px: int = STATE_CROP_PX,
) -> ImageArray:
    """A (size_px, size_px, 3) BGR crop centred on the box, `CONTEXT * ref_px` wide; black off the frame."""
    if not ref_px > 0:
        raise ValueError(f"ref_px must be positive, got {ref_px}")
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    side = CONTEXT * ref_px
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    h, w = image_bgr.shape[:2]
    ix0, iy0 = round(cx - side / 2.0), round(cy - side / 2.0)
    n = max(2, round(side))
    ix1, iy1 = ix0 + n, iy0 + n
    sub = image_bgr[max(0, iy0) : max(0, min(h, iy1)), max(0, ix0) : max(0, min(w, ix1))]
    canvas = np.zeros((n, n, 3), np.uint8)
    if sub.size:
        oy, ox = max(0, iy0) - iy0, max(0, ix0) - ix0
        canvas[oy : oy + sub.shape[0], ox : ox + sub.shape[1]] = sub
    interp = cv2.INTER_AREA if n > size_px else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(canvas, (size_px, size_px), interpolation=interp), np.uint8)


def crops_to_tensor(crops: Sequence[ImageArray]) -> NDArray[np.float32]:
    """BGR uint8 crops -> (N, 3, H, W) float32 RGB in [0, 1], the classifier's input."""
    if not crops:
        return np.zeros((0, 3, STATE_CROP_PX, STATE_CROP_PX), np.float32)
    batch = np.stack(list(crops))[:, :, :, ::-1].transpose(0, 3, 1, 2)
    return np.ascontiguousarray(batch, dtype=np.float32) * np.float32(1 / 255)


def states_from_output(out: NDArray[np.float32]) -> tuple[DieState, ...]:
    """The model's (N, 8) output -> one `DieState` per row (probabilities renormalised against rounding).

    An (N, 7) output (a six-state model, before `no_die`) gets `no_die` probability 0.
    """
    widths = (len(STATE_LABELS) + 1, len(DIE_STATES) + 1)
    if out.ndim != 2 or out.shape[1] not in widths:
        raise ValueError(f"die-state output must be (N, {widths[0]}) or (N, {widths[1]}), got {out.shape}")
    # All rows at once (the same float64 operations, row by row, as a loop over the rows would do).
    values = out.astype(np.float64)
    if out.shape[1] == widths[1]:
        values = np.concatenate([values[:, :-1], np.zeros((len(values), 1)), values[:, -1:]], axis=1)
    probs = np.clip(values[:, : len(STATE_LABELS)], 0.0, 1.0)
    totals = probs.sum(axis=1)
    empty = np.flatnonzero(~(totals > 0))
    if empty.size:
        raise ValueError(f"die-state output row has no probability mass: {values[empty[0]]}")
    rows = (probs / totals[:, None]).tolist()
    tilts = np.clip(values[:, -1], 0.0, 90.0).tolist()
    return tuple(DieState(probs=tuple(p), tilt_deg=t) for p, t in zip(rows, tilts, strict=True))


class DieStateClassifier:
    """The die-state stage: frame + candidates -> one `DieState` per candidate, in the same order."""

    def __init__(self, model: OnnxModel) -> None:
        self.model = model

    def __call__(self, image_bgr: ImageArray, candidates: Sequence[DieCandidate]) -> tuple[DieState, ...]:
        """Classify every candidate (an empty tuple when there are none)."""
        if not candidates:
            return ()
        ref = reference_die_px([c.box_xyxy for c in candidates])
        return self.at_centres(image_bgr, [box_centre(c.box_xyxy) for c in candidates], ref_px=ref)

    def at_centres(
        self, image_bgr: ImageArray, centres: Sequence[tuple[float, float]], *, ref_px: float
    ) -> tuple[DieState, ...]:
        """Classify the die the crops centred on `centres` show (a crop depends only on its centre and
        the frame's typical die size `ref_px`): vision/state/probe.py asks at the points of a grid."""
        if not centres:
            return ()
        crops = [crop_context(image_bgr, (x, y, x, y), ref_px=ref_px) for x, y in centres]
        (out,) = self.model.run(crops_to_tensor(crops))[:1]
        states = states_from_output(out)
        if len(states) != len(centres):
            raise ValueError(f"die-state model returned {len(states)} rows for {len(centres)} crops")
        return states


def box_centre(box_xyxy: Sequence[float]) -> tuple[float, float]:
    """The centre (x, y) of an (x0, y0, x1, y1) box."""
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    return (x0 + x1) / 2.0, (y0 + y1) / 2.0
