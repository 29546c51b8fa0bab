"""Table marks: what the die detector takes for a die on the empty throw box, remembered with its look.

A real throw box carries print a die detector was never shown: the layout labels' letters, a casino's
logo, the calibration markers, a stain. Whatever the detector finds on the empty box at calibration is
such a mark. The calibration keeps each one as its box and a small grey picture of the empty box around
it (`TableMark`); at read time a detection on a mark's box is the mark, and not a die, only while the frame
there still looks like the empty box (`likeness`, a correlation, so a change of light does not matter).
A die lying on the mark or beside it changes the picture there, and the detection is counted as a die.

Finding the marks needs the detector, which lives in `vision/`: `vision.table.marks` finds them and the
`calibrate table` command stores them; this module holds only the stored form and the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.errors import CorruptCalibrationError
from calibration.images import decode_png_b64, encode_png_b64, to_gray

PAD_FRACTION = 0.25  # the picture kept reaches this fraction of the box's size beyond it on every side
_BLUR_SIGMA_PX = 1.0  # sensor noise out; a die's edges and pips, and print, stay


@dataclass(frozen=True)
class TableMark:
    """One thing on the empty box the detector takes for a die, or a corner marker: its box and the empty
    box's look there."""

    box_xyxy: tuple[float, float, float, float]  # as the detector boxed it on the empty box, or the marker's
    score: float | None  # the detector's score there; None for a corner marker's look
    window_xyxy: tuple[int, int, int, int]  # pixel window of `patch_png_b64` (x0, y0, x1, y1; x1, y1 excl.)
    patch_png_b64: str  # grey PNG of the empty box in that window
    # A corner marker's id: the marker's look, kept so a detection set aside on it (vision/table/markers.py)
    # can be told from a see-through die lying over it. None: a mark the detector found.
    marker_id: int | None = None
    # A labelled layout box's face (593.1(b)(4)): the printed box's look, kept only to see a change there
    # (a die on the print the detector may miss); nothing is ever set aside on it.
    layout_face: int | None = None

    def __post_init__(self) -> None:
        x0, y0, x1, y1 = self.box_xyxy
        if not (x1 > x0 and y1 > y0):
            raise ValueError(f"box_xyxy must have x1 > x0 and y1 > y0, got {self.box_xyxy}")
        wx0, wy0, wx1, wy1 = self.window_xyxy
        if not (wx1 > wx0 >= 0 and wy1 > wy0 >= 0):
            raise ValueError(f"window_xyxy must be a non-empty window of the frame, got {self.window_xyxy}")
        if sum(v is not None for v in (self.score, self.marker_id, self.layout_face)) != 1:
            raise ValueError("a table mark has a detector score, a marker id or a layout face: one of them")

    @cached_property
    def _patch(self) -> NDArray[np.uint8]:
        return self._decode()

    def patch(self) -> NDArray[np.uint8]:
        """The stored picture, decoded once (raises `CorruptCalibrationError` when it is not one)."""
        return self._patch

    def _decode(self) -> NDArray[np.uint8]:
        img = decode_png_b64(self.patch_png_b64, what="table mark picture")
        wx0, wy0, wx1, wy1 = self.window_xyxy
        if img.shape != (wy1 - wy0, wx1 - wx0):
            raise CorruptCalibrationError("table mark picture is not a PNG of its window's size")
        return img

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (inside the table calibration's body)."""
        return {
            "box_xyxy": list(self.box_xyxy),
            "score": self.score,
            "window_xyxy": list(self.window_xyxy),
            "patch_png_b64": self.patch_png_b64,
            "marker_id": self.marker_id,
            "layout_face": self.layout_face,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableMark:
        """Inverse of `to_dict`; raises KeyError, TypeError or ValueError on malformed data."""
        box = tuple(float(v) for v in data["box_xyxy"])
        win = tuple(int(v) for v in data["window_xyxy"])
        if len(box) != 4 or len(win) != 4:
            raise ValueError("a table mark needs a four-number box and window")
        marker_id, layout_face = data.get("marker_id"), data.get("layout_face")
        mark = cls(
            box_xyxy=(box[0], box[1], box[2], box[3]),
            score=None if data["score"] is None else float(data["score"]),
            window_xyxy=(win[0], win[1], win[2], win[3]),
            patch_png_b64=str(data["patch_png_b64"]),
            marker_id=None if marker_id is None else int(marker_id),
            layout_face=None if layout_face is None else int(layout_face),
        )
        mark.patch()  # decodes, or raises CorruptCalibrationError (a ValueError)
        return mark


def _window(box_xyxy: Sequence[float], shape_hw: tuple[int, int]) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    pad_x, pad_y = PAD_FRACTION * (x1 - x0), PAD_FRACTION * (y1 - y0)
    h, w = shape_hw
    return (
        max(0, int(np.floor(x0 - pad_x))),
        max(0, int(np.floor(y0 - pad_y))),
        min(w, int(np.ceil(x1 + pad_x))),
        min(h, int(np.ceil(y1 + pad_y))),
    )


def _look(gray: NDArray[np.uint8], window_xyxy: tuple[int, int, int, int]) -> NDArray[np.uint8]:
    x0, y0, x1, y1 = window_xyxy
    crop = gray[y0:y1, x0:x1]
    return np.asarray(cv2.GaussianBlur(crop, (0, 0), _BLUR_SIGMA_PX), dtype=np.uint8)


def make_mark(
    empty_frame: object,
    *,
    box_xyxy: Sequence[float],
    score: float | None,
    marker_id: int | None = None,
    layout_face: int | None = None,
) -> TableMark:
    """The mark at `box_xyxy` on an empty-box frame (found by the detector with `score`, corner marker
    `marker_id`, or the printed layout box of `layout_face`), with the frame's look there."""
    gray = to_gray(empty_frame, name="empty-box frame")
    window = _window(box_xyxy, (gray.shape[0], gray.shape[1]))
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    return TableMark(
        box_xyxy=(x0, y0, x1, y1),
        score=None if score is None else float(score),
        window_xyxy=window,
        patch_png_b64=encode_png_b64(_look(gray, window)),
        marker_id=marker_id,
        layout_face=layout_face,
    )


def likeness(frame: object, mark: TableMark, *, ignore_xyxy: Sequence[Sequence[float]] = ()) -> float:
    """How much the frame looks like the empty box around the mark: Pearson correlation, -1..1.

    Gain and offset drop out (a lamp dimmed, a camera's exposure), so only a change of what lies there
    (a die) lowers it. A window that falls off the frame, or a flat one, gives 0: not like.
    `ignore_xyxy`: boxes (px) left out of both looks (dice already found there, whose change is known); with
    them the correlation is computed by hand over the pixels left (OpenCV's masked template matching does
    not give the plain coefficient), and 1.0 (alike: nothing left to doubt) when a quarter of the window or
    less is left.
    """
    gray = to_gray(frame, name="frame")
    wx0, wy0, x1, y1 = mark.window_xyxy
    if x1 > gray.shape[1] or y1 > gray.shape[0]:
        return 0.0
    now = _look(gray, mark.window_xyxy).astype(np.float32)
    then = mark.patch().astype(np.float32)
    if ignore_xyxy:
        keep = np.ones(now.shape, bool)
        for bx0, by0, bx1, by1 in ignore_xyxy:
            keep[
                max(0, int(by0) - wy0) : max(0, int(np.ceil(by1)) - wy0),
                max(0, int(bx0) - wx0) : max(0, int(np.ceil(bx1)) - wx0),
            ] = False
        if keep.mean() <= 0.25:
            return 1.0  # what changed there is the dice found: nothing left to doubt
        a, b = now[keep] - now[keep].mean(), then[keep] - then[keep].mean()
        denom = float(np.linalg.norm(a) * np.linalg.norm(b))
        return 0.0 if denom < 1e-3 else float(a @ b / denom)
    if float(now.std()) < 1e-3 or float(then.std()) < 1e-3:
        return 0.0
    # Same-size images: OpenCV's normalised cross-correlation coefficient is their Pearson correlation.
    return float(cv2.matchTemplate(now, then, cv2.TM_CCOEFF_NORMED)[0, 0])
