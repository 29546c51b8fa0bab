"""The table's calibration markers are not dice: detections on a corner marker seen whole are set aside.

A table calibrated from corner markers (`calibration.markers`) keeps them on the felt, in the throw box's
inner corners, for the camera-moved check. The die detector never saw ArUco markers in training and boxes
them as dice (black and white squares the size of a die), so every roll would be counted over. Before the
count, each marker is looked for (OpenCV's ArUco detector, in a window around where calibration saw it);
a detection, or a weak peak, whose centre lies inside a marker found whole is that marker, not a die.

Why only a marker found whole: an opaque die lying on a marker's sticker covers part of the marker (a die's
centre inside the marker's square means the die hides the marker's middle), and ArUco needs the whole
marker with its border to decode it. So a marker that is not found sets nothing aside here: its detection
stays in the count (unless it matches the marker's look kept as a table mark, vision/table/marks.py, under
the same likeness bars), where an over count is `no_decision` for a person. A see-through die
is another matter: the marker shows through it and still decodes, and the detector may box only the
marker. So each detection set aside carries how much the frame there looks like the empty box (the
marker's look, kept at calibration), and a short count with a set-aside that is not surely the empty box
(`JudgeConfig.sure_mark_likeness`) is left to a person (vision/judge/count.py), not called a die that left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.markers import CornerMarkers, find_markers
from calibration.marks import TableMark, likeness
from calibration.moved import MIN_MARKERS
from vision.types import DieCandidate, ImageArray, SetAside, Sifted

FloatArray = NDArray[np.float64]

# The search window around a marker's calibrated quad, in marker sides on each side: room for a camera
# nudged by a few pixels (the camera-moved check judges that), small enough to keep the look cheap.
WINDOW_MARGIN_SIDES = 1.0


@dataclass(frozen=True)
class MarkerInView:
    """A corner marker found whole in the frame: its id and its four corners (px, ArUco order)."""

    marker_id: int
    corners_px: tuple[tuple[float, float], ...]

    def contains(self, x_px: float, y_px: float) -> bool:
        """Does the point lie inside (or on the edge of) the marker's quad?"""
        quad = np.asarray(self.corners_px, np.float32).reshape(-1, 1, 2)
        return cv2.pointPolygonTest(quad, (float(x_px), float(y_px)), measureDist=False) >= 0


def markers_near(
    image: ImageArray,
    *,
    markers: CornerMarkers,
    reference_corners_px: Mapping[int, tuple[tuple[float, float], ...]],
) -> tuple[MarkerInView, ...]:
    """The calibration's corner markers found whole, each looked for in a window round its calibrated quad
    (`WINDOW_MARGIN_SIDES`): a few small crops rather than the whole frame. Missing ones are left out."""
    h, w = image.shape[:2]
    found: list[MarkerInView] = []
    for marker_id, ref in sorted(reference_corners_px.items()):
        quad = np.asarray(ref, np.float64).reshape(4, 2)
        side = float(np.mean(np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)))
        pad = WINDOW_MARGIN_SIDES * side
        x0 = max(0, int(np.floor(quad[:, 0].min() - pad)))
        y0 = max(0, int(np.floor(quad[:, 1].min() - pad)))
        x1 = min(w, int(np.ceil(quad[:, 0].max() + pad)))
        y1 = min(h, int(np.ceil(quad[:, 1].max() + pad)))
        if x1 - x0 < 8 or y1 - y0 < 8:
            continue  # the marker's place is out of this frame
        seen = find_markers(np.ascontiguousarray(image[y0:y1, x0:x1]), markers).get(marker_id)
        if seen is None:
            continue
        corners = tuple((float(x + x0), float(y + y0)) for x, y in seen)
        found.append(MarkerInView(marker_id=marker_id, corners_px=corners))
    return tuple(found)


def markers_in_view(
    image: ImageArray,
    *,
    markers: CornerMarkers,
    reference_corners_px: Mapping[int, tuple[tuple[float, float], ...]],
) -> tuple[MarkerInView, ...]:
    """The calibration's corner markers found whole in the frame: near their places (`markers_near`), or,
    with fewer than `MIN_MARKERS` found so, anywhere (the camera may have moved far, or the markers are
    covered; the whole frame once, a few ms, so a moved camera is seen as moved, not as markers missing)."""
    near = markers_near(image, markers=markers, reference_corners_px=reference_corners_px)
    if len(near) >= MIN_MARKERS:
        return near
    anywhere = find_markers(image, markers)
    return tuple(
        MarkerInView(marker_id=i, corners_px=tuple((float(x), float(y)) for x, y in anywhere[i]))
        for i in sorted(reference_corners_px)
        if i in anywhere
    )


def marker_shift_px(
    seen: Sequence[MarkerInView], reference_corners_px: Mapping[int, tuple[tuple[float, float], ...]]
) -> float | None:
    """How far (px) the markers lie from where calibration saw them, as the camera moving would move them:
    each marker's shift is the median of its four corners' (a die lying on a marker's sticker pulls one
    corner's sub-pixel fit by up to about 5 px and leaves the others), and the frame's is the second
    largest of those (one marker knocked is not the camera). None when fewer than
    `calibration.moved.MIN_MARKERS` are seen: no judgement of the camera then."""
    shifts = sorted(
        float(
            np.median(
                np.linalg.norm(
                    np.asarray(m.corners_px) - np.asarray(reference_corners_px[m.marker_id]), axis=1
                )
            )
        )
        for m in seen
        if m.marker_id in reference_corners_px
    )
    if len(shifts) < MIN_MARKERS:
        return None
    return shifts[-2]


def on_marker(box_xyxy: Sequence[float], seen: Sequence[MarkerInView]) -> MarkerInView | None:
    """The marker a detection's box centre lies on, or None."""
    cx, cy = (box_xyxy[0] + box_xyxy[2]) / 2.0, (box_xyxy[1] + box_xyxy[3]) / 2.0
    return next((m for m in seen if m.contains(cx, cy)), None)


def set_markers_aside(
    candidates: Sequence[DieCandidate],
    weak_peaks: Sequence[DieCandidate],
    *,
    seen: Sequence[MarkerInView],
    image: ImageArray,
    marks: Sequence[TableMark] = (),
) -> Sifted:
    """Candidates and weak peaks with those centred on a marker in view taken out.

    Each one taken out carries the frame's likeness to the empty box over its marker when the calibration
    kept the marker's look (`TableMark.marker_id`), else None: a see-through die lying on a marker leaves
    it readable, and with a short count the judge asks that likeness (`sure_mark_likeness`).
    """
    if not seen:
        return Sifted(tuple(candidates), tuple(weak_peaks))
    looks = {m.marker_id: m for m in marks if m.marker_id is not None}
    likeness_of = {
        m.marker_id: None if looks.get(m.marker_id) is None else likeness(image, looks[m.marker_id])
        for m in seen
    }

    def aside_of(cand: DieCandidate) -> SetAside | None:
        marker = on_marker(cand.box_xyxy, seen)
        if marker is None:
            return None
        return SetAside(
            box_xyxy=cand.box_xyxy,
            score=cand.score,
            p_no_die=None,
            reason="calibration_marker",
            marker_id=marker.marker_id,
            likeness=likeness_of[marker.marker_id],
        )

    return Sifted.by(candidates, weak_peaks, aside_of)
