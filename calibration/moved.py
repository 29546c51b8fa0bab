"""Has the camera moved since calibration? Compare the corner markers with their stored positions.

The markers' pixel positions in the calibration frame are the reference. A new frame's markers are found
again; if any corner moved by more than `threshold_px`, the camera moved (or was bumped, zoomed or
refocused) and the table must be recalibrated before its reads are trusted. Sub-pixel marker corners keep
an unmoved camera at a few tenths of a pixel even with sensor noise and a change of room light, while
1 cm of displacement or 1 degree of rotation moves them by several pixels (see the README's figures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from calibration.markers import find_markers
from calibration.table import TableCalibration

CheckStatus = Literal["ok", "moved", "unknown"]

DEFAULT_THRESHOLD_PX = 1.5
MIN_MARKERS = 2


@dataclass(frozen=True)
class CameraCheck:
    """Outcome of a camera-moved check: status, evidence, and a sentence saying why."""

    status: CheckStatus
    reason: str
    markers_found: int
    max_shift_px: float | None
    median_shift_px: float | None
    rotation_deg: float | None  # in-image rotation of the marker corners about their centroid
    threshold_px: float

    @property
    def moved(self) -> bool:
        """True only when the markers were found and have moved."""
        return self.status == "moved"


def check_camera(
    cal: TableCalibration, frame: object, *, threshold_px: float = DEFAULT_THRESHOLD_PX
) -> CameraCheck:
    """Compare the frame's corner markers with the calibration's reference positions."""
    cal.require_resolution(frame)
    if cal.markers is None or not cal.reference_corners_px:
        return CameraCheck(
            status="unknown",
            reason="this table was calibrated from hand-given corners: there are no markers to compare",
            markers_found=0,
            max_shift_px=None,
            median_shift_px=None,
            rotation_deg=None,
            threshold_px=threshold_px,
        )
    found = find_markers(frame, cal.markers)
    common = [i for i in sorted(cal.reference_corners_px) if i in found]
    if len(common) < MIN_MARKERS:
        return CameraCheck(
            status="unknown",
            reason=(
                f"only {len(common)} of {len(cal.reference_corners_px)} corner markers visible; at least "
                f"{MIN_MARKERS} are needed to tell whether the camera moved (something covering them?)"
            ),
            markers_found=len(common),
            max_shift_px=None,
            median_shift_px=None,
            rotation_deg=None,
            threshold_px=threshold_px,
        )
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
        reason=reason,
        markers_found=len(common),
        max_shift_px=max_shift,
        median_shift_px=median_shift,
        rotation_deg=rotation,
        threshold_px=threshold_px,
    )
