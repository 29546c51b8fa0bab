"""Has the camera moved since calibration? Compare the frame with what was stored at calibration.

First choice, the corner markers: their pixel positions in the calibration frame are the reference; a new
frame's markers are found again and if any corner moved by more than `threshold_px`, the camera moved (or
was bumped, zoomed or refocused) and the table must be recalibrated before its reads are trusted.
Sub-pixel marker corners keep an unmoved camera at a few tenths of a pixel even with sensor noise and a
change of room light, while 1 cm of displacement or 1 degree of rotation moves them by several pixels (see
docs/calibration.md, Measured accuracy).

Fallback, when fewer than two markers are visible or the table was calibrated from hand-given corners:
the frame is aligned to the stored reference picture (`calibration.reference`, ECC) and the alignment's
largest displacement over the box outline is compared with the same threshold. When neither works (the
view no longer resembles the reference at all), the answer is "unknown", never "ok".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from calibration.markers import find_markers
from calibration.reference import MIN_CORRELATION, align_to_reference
from calibration.table import TableCalibration, box_outline_mm

CheckStatus = Literal["ok", "moved", "unknown"]
CheckMethod = Literal["markers", "image", "none"]

DEFAULT_THRESHOLD_PX = 1.5
MIN_MARKERS = 2
_IMAGE_MASK_MARGIN_MM = 40.0  # the box plus its walls' inner edge: people outside it do not count


@dataclass(frozen=True)
class CameraCheck:
    """Outcome of a camera-moved check: status, how it was decided, evidence, and a sentence saying why."""

    status: CheckStatus
    method: CheckMethod
    reason: str
    markers_found: int
    max_shift_px: float | None
    median_shift_px: float | None
    rotation_deg: float | None  # in-image rotation about the markers' centroid (marker method only)
    threshold_px: float

    @property
    def moved(self) -> bool:
        """True only when the camera was seen to move."""
        return self.status == "moved"


def check_camera(
    cal: TableCalibration, frame: object, *, threshold_px: float = DEFAULT_THRESHOLD_PX
) -> CameraCheck:
    """Compare the frame with the calibration: corner markers if visible, else the reference picture."""
    cal.require_resolution(frame)
    found_count = 0
    why_not_markers = "this table was calibrated from hand-given corners (no markers)"
    if cal.markers is not None and cal.reference_corners_px:
        found = find_markers(frame, cal.markers)
        common = [i for i in sorted(cal.reference_corners_px) if i in found]
        found_count = len(common)
        if len(common) >= MIN_MARKERS:
            return _by_markers(cal, found, common, threshold_px)
        why_not_markers = (
            f"only {len(common)} of {len(cal.reference_corners_px)} corner markers visible (at least "
            f"{MIN_MARKERS} needed; something covering them?)"
        )
    return _by_picture(cal, frame, threshold_px, found_count, why_not_markers)


def _by_markers(
    cal: TableCalibration, found: dict[int, np.ndarray], common: list[int], threshold_px: float
) -> CameraCheck:
    ref = np.concatenate([np.asarray(cal.reference_corners_px[i], dtype=np.float64) for i in common])
    now = np.concatenate([found[i] for i in common])
    shifts = np.linalg.norm(now - ref, axis=1)
    sim, _inliers = cv2.estimateAffinePartial2D(ref, now, method=cv2.LMEDS)
    rotation = None if sim is None else float(np.degrees(np.arctan2(sim[1, 0], sim[0, 0])))
    max_shift, median_shift = float(shifts.max()), float(np.median(shifts))
    moved = max_shift > threshold_px
    reason = (
        f"marker corners moved by up to {max_shift:.2f} px (limit {threshold_px} px): recalibrate the table"
        if moved
        else f"marker corners within {max_shift:.2f} px of the calibration (limit {threshold_px} px)"
    )
    return CameraCheck(
        status="moved" if moved else "ok",
        method="markers",
        reason=reason,
        markers_found=len(common),
        max_shift_px=max_shift,
        median_shift_px=median_shift,
        rotation_deg=rotation,
        threshold_px=threshold_px,
    )


def _by_picture(
    cal: TableCalibration, frame: object, threshold_px: float, markers_found: int, why_not_markers: str
) -> CameraCheck:
    def unknown(reason: str) -> CameraCheck:
        return CameraCheck(
            status="unknown",
            method="none",
            reason=reason,
            markers_found=markers_found,
            max_shift_px=None,
            median_shift_px=None,
            rotation_deg=None,
            threshold_px=threshold_px,
        )

    if cal.reference_picture is None:
        return unknown(f"{why_not_markers}, and no reference picture is stored: cannot tell")
    mask = cal.box_mask(inset_mm=-_IMAGE_MASK_MARGIN_MM)
    alignment = align_to_reference(cal.reference_picture, frame, mask=mask)
    if alignment is None or alignment.correlation < MIN_CORRELATION:
        corr = "no convergence" if alignment is None else f"correlation {alignment.correlation:.2f}"
        return unknown(
            f"{why_not_markers}, and the view does not match the reference picture ({corr}): the camera "
            "moved a lot or the view is blocked; look at the camera"
        )
    outline = cal.mm_to_pixel(box_outline_mm(cal.layout))
    moved_outline = cv2.perspectiveTransform(outline.reshape(-1, 1, 2), alignment.homography).reshape(-1, 2)
    shifts = np.linalg.norm(moved_outline - outline, axis=1)
    max_shift, median_shift = float(shifts.max()), float(np.median(shifts))
    moved = max_shift > threshold_px
    what = "moved by up to" if moved else "stayed within"
    return CameraCheck(
        status="moved" if moved else "ok",
        method="image",
        reason=(
            f"{why_not_markers}; aligned to the reference picture (correlation {alignment.correlation:.2f}): "
            f"the box outline {what} {max_shift:.2f} px (limit {threshold_px} px)"
        ),
        markers_found=markers_found,
        max_shift_px=max_shift,
        median_shift_px=median_shift,
        rotation_deg=None,
        threshold_px=threshold_px,
    )
