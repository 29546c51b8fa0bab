"""Camera intrinsics and lens distortion from several views of a calibration board (OpenCV).

A calibration is refused (`CalibrationRefusedError`, with a `reason` tag) rather than returned when it cannot
be trusted: too few usable views, a high reprojection error, corners covering too little of the image, a
principal point far from the centre, non-square pixels or an implausible field of view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from calibration.board import BoardSpec, BoardView, detect_board
from calibration.camera import CameraIntrinsics
from calibration.errors import CalibrationRefusedError
from calibration.images import check_image, resolution_wh


@dataclass(frozen=True)
class IntrinsicsLimits:
    """Acceptance thresholds for an intrinsics calibration."""

    min_views: int = 5
    max_rms_px: float = 1.0
    min_coverage: float = 0.25  # fraction of the image inside the convex hull of all detected corners
    max_principal_offset: float = 0.15  # |c - centre| as a fraction of the image size
    max_aspect_deviation: float = 0.05  # |fx / fy - 1|
    hfov_range_deg: tuple[float, float] = (15.0, 150.0)
    fix_k3: bool = True  # k3 is poorly constrained by few views; free it only with many well-spread views


@dataclass(frozen=True)
class IntrinsicsResult:
    """An accepted calibration: intrinsics, its RMS reprojection error, and what it was computed from."""

    intrinsics: CameraIntrinsics
    rms_px: float
    per_view_rms_px: tuple[float, ...]
    views_used: int
    views_without_board: tuple[int, ...]  # indices of the input images where no board was found
    coverage: float
    board: str

    @property
    def hfov_deg(self) -> float:
        """Horizontal field of view implied by fx."""
        return float(np.degrees(2.0 * np.arctan(self.intrinsics.width_px / (2.0 * self.intrinsics.fx))))


def _coverage(views: Sequence[BoardView], width: int, height: int) -> float:
    pts = np.concatenate([v.image_points for v in views]).astype(np.float32)
    hull = cv2.convexHull(pts)
    return float(cv2.contourArea(hull)) / float(width * height)


def calibrate_intrinsics(
    images: Sequence[object],
    board: BoardSpec,
    *,
    limits: IntrinsicsLimits | None = None,
) -> IntrinsicsResult:
    """Detect the board in every image and calibrate; raise `CalibrationRefusedError` when untrustworthy."""
    lim = limits or IntrinsicsLimits()
    if len(images) == 0:
        raise CalibrationRefusedError("no calibration images given", reason="no_images")
    sizes: set[tuple[int, int]] = set()
    views: list[BoardView] = []
    missing: list[int] = []
    for i, image in enumerate(images):
        img = check_image(image, name=f"image {i}")
        sizes.add(resolution_wh(img))
        view = detect_board(img, board)
        if view is None:
            missing.append(i)
        else:
            views.append(view)
    if len(sizes) != 1:
        raise CalibrationRefusedError(
            f"images have different sizes {sorted(sizes)}: one calibration is for one camera resolution",
            reason="mixed_resolution",
        )
    width, height = sizes.pop()
    if len(views) < lim.min_views:
        raise CalibrationRefusedError(
            f"the board ({board.describe()}) was found in {len(views)} of {len(images)} images; "
            f"at least {lim.min_views} views are needed",
            reason="too_few_views",
        )
    coverage = _coverage(views, width, height)
    if coverage < lim.min_coverage:
        raise CalibrationRefusedError(
            f"board corners cover {coverage:.0%} of the image; at least {lim.min_coverage:.0%} is needed "
            "(move the board towards the edges and corners)",
            reason="poor_coverage",
        )
    flags = cv2.CALIB_FIX_K3 if lim.fix_k3 else 0
    try:
        rms, k, dist, _rvecs, _tvecs, _std_i, _std_e, per_view = cv2.calibrateCameraExtended(
            [v.object_points for v in views],
            [v.image_points for v in views],
            (width, height),
            np.eye(3),
            np.zeros(5),
            flags=flags,
        )
    except cv2.error as exc:
        raise CalibrationRefusedError(f"OpenCV calibration failed: {exc}", reason="solver_failed") from exc
    rms = float(rms)
    if not np.isfinite(rms) or rms > lim.max_rms_px:
        raise CalibrationRefusedError(
            f"reprojection error {rms:.3f} px is above the limit of {lim.max_rms_px} px "
            "(blurred images, a bent board, or the wrong --board size)",
            reason="high_reprojection_error",
        )
    fx, fy, cx, cy = float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2])
    if fx <= 0 or fy <= 0 or abs(fx / fy - 1.0) > lim.max_aspect_deviation:
        raise CalibrationRefusedError(
            f"fx={fx:.1f} and fy={fy:.1f} differ by more than {lim.max_aspect_deviation:.0%}: "
            "non-square pixels are not expected from a table camera",
            reason="implausible_aspect",
        )
    off_x, off_y = abs(cx - width / 2.0) / width, abs(cy - height / 2.0) / height
    if max(off_x, off_y) > lim.max_principal_offset:
        raise CalibrationRefusedError(
            f"principal point ({cx:.1f}, {cy:.1f}) is {max(off_x, off_y):.0%} of the image away from the "
            f"centre; the limit is {lim.max_principal_offset:.0%}",
            reason="implausible_principal_point",
        )
    hfov = float(np.degrees(2.0 * np.arctan(width / (2.0 * fx))))
    if not lim.hfov_range_deg[0] <= hfov <= lim.hfov_range_deg[1]:
        raise CalibrationRefusedError(
            f"horizontal field of view {hfov:.1f} deg is outside {lim.hfov_range_deg}",
            reason="implausible_focal_length",
        )
    dist5 = tuple(float(d) for d in np.asarray(dist).ravel()[:5])
    dist5 = dist5 + (0.0,) * (5 - len(dist5))
    if not all(np.isfinite(dist5)):
        raise CalibrationRefusedError("distortion coefficients are not finite", reason="solver_failed")
    intrinsics = CameraIntrinsics(fx=fx, fy=fy, cx=cx, cy=cy, width_px=width, height_px=height, dist=dist5)
    return IntrinsicsResult(
        intrinsics=intrinsics,
        rms_px=rms,
        per_view_rms_px=tuple(float(e) for e in np.asarray(per_view).ravel()),
        views_used=len(views),
        views_without_board=tuple(missing),
        coverage=coverage,
        board=board.describe(),
    )
