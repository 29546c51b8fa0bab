"""The throw-box plane: homography between image pixels and felt millimetres, and the camera pose.

Pixels are raw camera pixels (with lens distortion). `PlaneMap` undistorts them with the intrinsics and
applies a homography fitted in undistorted pixels, so straight box edges stay straight in the fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.errors import BadCornerPointsError

FloatArray = NDArray[np.float64]

# Iterate the undistortion to convergence: OpenCV's default 5 iterations leave ~1e-3 px of error.
_UNDISTORT_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)


def _as_points(points: object, *, name: str) -> FloatArray:
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim == 1 and arr.shape[0] == 2:
        arr = arr.reshape(1, 2)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name}: expected (n, 2) points, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: points must be finite")
    return arr


def undistort_px(intrinsics: CameraIntrinsics, points_px: object) -> FloatArray:
    """Raw pixels -> ideal (undistorted) pixels of the same camera matrix."""
    pts = _as_points(points_px, name="points_px")
    if pts.shape[0] == 0:
        return pts
    k = intrinsics.matrix
    out = cv2.undistortPoints(
        pts.reshape(-1, 1, 2), k, intrinsics.dist_coeffs, None, None, k, _UNDISTORT_CRITERIA
    )
    return np.asarray(out, dtype=np.float64).reshape(-1, 2)


def distort_px(intrinsics: CameraIntrinsics, points_px: object) -> FloatArray:
    """Ideal (undistorted) pixels -> raw pixels, through the lens model."""
    pts = _as_points(points_px, name="points_px")
    if pts.shape[0] == 0:
        return pts
    k = intrinsics.matrix
    norm = (pts - [k[0, 2], k[1, 2]]) / [k[0, 0], k[1, 1]]
    rays = np.concatenate([norm, np.ones((norm.shape[0], 1))], axis=1).reshape(-1, 1, 3)
    out, _ = cv2.projectPoints(rays, np.zeros(3), np.zeros(3), k, intrinsics.dist_coeffs)
    return np.asarray(out, dtype=np.float64).reshape(-1, 2)


def _apply_h(h: FloatArray, pts: FloatArray) -> FloatArray:
    if pts.shape[0] == 0:
        return pts
    out = cv2.perspectiveTransform(pts.reshape(-1, 1, 2), h)
    return np.asarray(out, dtype=np.float64).reshape(-1, 2)


@dataclass(frozen=True)
class PlaneMap:
    """Maps raw image pixels to felt-plane millimetres (z = 0) and back."""

    intrinsics: CameraIntrinsics
    homography_px_to_mm: tuple[float, ...]  # 3x3, row-major, undistorted pixels -> mm

    def __post_init__(self) -> None:
        h = np.asarray(self.homography_px_to_mm, dtype=np.float64)
        if h.shape != (9,) or not np.all(np.isfinite(h)) or abs(np.linalg.det(h.reshape(3, 3))) < 1e-18:
            raise ValueError("homography must be 9 finite numbers forming an invertible 3x3 matrix")

    @property
    def h(self) -> FloatArray:
        """The 3x3 homography (undistorted px -> mm)."""
        return np.asarray(self.homography_px_to_mm, dtype=np.float64).reshape(3, 3)

    def pixel_to_mm(self, points_px: object) -> FloatArray:
        """(n, 2) raw pixels -> (n, 2) felt mm."""
        return _apply_h(self.h, undistort_px(self.intrinsics, points_px))

    def mm_to_pixel(self, points_mm: object) -> FloatArray:
        """(n, 2) felt mm -> (n, 2) raw pixels."""
        pts = _as_points(points_mm, name="points_mm")
        return distort_px(self.intrinsics, _apply_h(np.asarray(np.linalg.inv(self.h), dtype=np.float64), pts))


@dataclass(frozen=True)
class PlaneFit:
    """A fitted plane mapping, the camera pose it implies, and how well the points fit (mm)."""

    plane: PlaneMap
    pose: CameraPose
    rms_mm: float
    max_mm: float
    points: int

    @property
    def camera(self) -> Camera:
        """Intrinsics and pose together (for projecting points above the felt, e.g. die tops)."""
        return Camera(self.plane.intrinsics, self.pose)


def _min_triangle_area(pts: FloatArray) -> float:
    """Smallest triangle over any three points (OpenCV has no such check; four points make it cheap)."""
    n = pts.shape[0]
    best = np.inf
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                a, b, c = pts[i], pts[j], pts[k]
                area = abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])) / 2.0
                best = min(best, area)
    return float(best)


def fit_plane(
    intrinsics: CameraIntrinsics,
    *,
    image_points_px: object,
    plane_points_mm: object,
) -> PlaneFit:
    """Fit the homography and camera pose from >= 4 raw pixels with their felt positions in mm."""
    img = _as_points(image_points_px, name="image_points_px")
    obj = _as_points(plane_points_mm, name="plane_points_mm")
    if img.shape[0] != obj.shape[0]:
        raise BadCornerPointsError(f"{img.shape[0]} pixel points but {obj.shape[0]} felt points")
    if img.shape[0] < 4:
        raise BadCornerPointsError(f"at least 4 points are needed, got {img.shape[0]}")
    w, h = intrinsics.resolution_wh
    outside = (img[:, 0] < 0) | (img[:, 0] > w - 1) | (img[:, 1] < 0) | (img[:, 1] > h - 1)
    if np.any(outside):
        raise BadCornerPointsError(f"points {img[outside].tolist()} lie outside the {w}x{h} image")
    if img.shape[0] == 4 and _min_triangle_area(img) < 1e-3 * w * h:
        raise BadCornerPointsError(
            f"the four points {img.tolist()} are (nearly) collinear or repeated: they do not span the box"
        )
    und = undistort_px(intrinsics, img)
    hmat, _mask = cv2.findHomography(und, obj, 0)
    if hmat is None or not np.all(np.isfinite(hmat)):
        raise BadCornerPointsError("no homography fits these points (degenerate configuration)")
    hmat = hmat / hmat[2, 2]
    mapped = _apply_h(hmat, und)
    err = np.linalg.norm(mapped - obj, axis=1)
    obj3 = np.concatenate([obj, np.zeros((obj.shape[0], 1))], axis=1)
    ok, rvec, tvec = cv2.solvePnP(
        obj3, img, intrinsics.matrix, intrinsics.dist_coeffs, flags=cv2.SOLVEPNP_IPPE
    )
    if not ok:
        raise BadCornerPointsError("the camera pose could not be solved from these points")
    rvec, tvec = cv2.solvePnPRefineLM(obj3, img, intrinsics.matrix, intrinsics.dist_coeffs, rvec, tvec)
    if float(tvec.ravel()[2]) <= 0:
        raise BadCornerPointsError("the points imply a felt plane behind the camera (wrong corner order?)")
    r, t = rvec.ravel(), tvec.ravel()
    pose = CameraPose(
        rvec=(float(r[0]), float(r[1]), float(r[2])), tvec=(float(t[0]), float(t[1]), float(t[2]))
    )
    return PlaneFit(
        plane=PlaneMap(intrinsics=intrinsics, homography_px_to_mm=tuple(float(v) for v in hmat.ravel())),
        pose=pose,
        rms_mm=float(np.sqrt(np.mean(err**2))),
        max_mm=float(err.max()),
        points=int(img.shape[0]),
    )
