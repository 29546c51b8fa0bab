"""Pinhole camera model (OpenCV conventions) shared by calibration, the generator and the reader.

World frame (millimetres): the felt plane of the throw box is z = 0, x runs from the dealer's left to
the dealer's right, y runs from the dealer's side of the box toward the players, z points up. The
origin is the inner corner of the throw box on the dealer's side, at the dealer's left.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class CameraIntrinsics:
    """Focal lengths and principal point in pixels, image size, and OpenCV distortion (k1 k2 p1 p2 k3)."""

    fx: float
    fy: float
    cx: float
    cy: float
    width_px: int
    height_px: int
    dist: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if self.fx <= 0 or self.fy <= 0:
            raise ValueError(f"focal lengths must be positive, got fx={self.fx}, fy={self.fy}")
        if self.width_px <= 0 or self.height_px <= 0:
            raise ValueError(f"image size must be positive, got {self.width_px}x{self.height_px}")

    @property
    def matrix(self) -> FloatArray:
        """The 3x3 camera matrix K."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]], dtype=np.float64)

    @property
    def dist_coeffs(self) -> FloatArray:
        """Distortion coefficients as the array OpenCV expects."""
        return np.asarray(self.dist, dtype=np.float64)

    @property
    def resolution_wh(self) -> tuple[int, int]:
        """Image size as (width, height)."""
        return (self.width_px, self.height_px)

    @classmethod
    def from_fov(
        cls, *, width_px: int, height_px: int, hfov_deg: float, dist: tuple[float, ...] = ()
    ) -> CameraIntrinsics:
        """Square pixels, centred principal point, focal length from the horizontal field of view."""
        f = (width_px / 2.0) / np.tan(np.radians(hfov_deg) / 2.0)
        coeffs = tuple(dist) + (0.0,) * (5 - len(dist))
        return cls(
            fx=float(f),
            fy=float(f),
            cx=width_px / 2.0,
            cy=height_px / 2.0,
            width_px=width_px,
            height_px=height_px,
            dist=coeffs[:5],
        )


@dataclass(frozen=True)
class CameraPose:
    """World-to-camera transform as OpenCV's Rodrigues vector and translation (mm)."""

    rvec: tuple[float, float, float]
    tvec: tuple[float, float, float]

    @property
    def rotation(self) -> FloatArray:
        """3x3 rotation matrix R (world -> camera)."""
        rot, _ = cv2.Rodrigues(np.asarray(self.rvec, dtype=np.float64))
        return np.asarray(rot, dtype=np.float64)

    @property
    def position_mm(self) -> FloatArray:
        """Camera centre in world coordinates."""
        return np.asarray(-self.rotation.T @ np.asarray(self.tvec, dtype=np.float64))

    @property
    def tilt_deg(self) -> float:
        """Angle between the optical axis and straight down (world -z), degrees: 0 for a top-down camera."""
        axis = self.rotation.T @ np.array([0.0, 0.0, 1.0])  # the camera's +z (viewing direction) in world
        return float(np.degrees(np.arccos(np.clip(-axis[2], -1.0, 1.0))))

    @classmethod
    def look_at(
        cls,
        *,
        eye_mm: tuple[float, float, float],
        target_mm: tuple[float, float, float],
        up: tuple[float, float, float] = (0.0, 1.0, 0.0),
    ) -> CameraPose:
        """A camera at `eye_mm` looking at `target_mm`; image "up" follows `up` as far as possible.

        OpenCV cameras look along +z with +y pointing down in the image.
        """
        eye = np.asarray(eye_mm, dtype=np.float64)
        forward = np.asarray(target_mm, dtype=np.float64) - eye
        forward /= np.linalg.norm(forward)
        up_vec = np.asarray(up, dtype=np.float64)
        right = np.cross(forward, up_vec)
        if np.linalg.norm(right) < 1e-9:
            raise ValueError("`up` must not be parallel to the viewing direction")
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        rot = np.stack([right, down, forward])  # rows: camera x, y, z axes in world coordinates
        rvec, _ = cv2.Rodrigues(rot)
        tvec = -rot @ eye
        r = rvec.ravel()
        return cls(
            rvec=(float(r[0]), float(r[1]), float(r[2])),
            tvec=(float(tvec[0]), float(tvec[1]), float(tvec[2])),
        )


@dataclass(frozen=True)
class Camera:
    """Intrinsics and pose together: everything needed to project world points to pixels."""

    intrinsics: CameraIntrinsics
    pose: CameraPose
    meta: dict[str, str] = field(default_factory=dict, compare=False)

    def project(self, points_mm: FloatArray) -> FloatArray:
        """Project (n, 3) world points in mm to (n, 2) pixel coordinates (with distortion)."""
        pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 1, 3)
        if pts.shape[0] == 0:
            return np.zeros((0, 2), dtype=np.float64)
        px, _ = cv2.projectPoints(
            pts,
            np.asarray(self.pose.rvec, dtype=np.float64),
            np.asarray(self.pose.tvec, dtype=np.float64),
            self.intrinsics.matrix,
            self.intrinsics.dist_coeffs,
        )
        return np.asarray(px.reshape(-1, 2), dtype=np.float64)

    def plane_homography(self) -> FloatArray:
        """Homography from the felt plane (x, y mm, z = 0) to undistorted pixels."""
        rot = self.pose.rotation
        t = np.asarray(self.pose.tvec, dtype=np.float64)
        h = self.intrinsics.matrix @ np.column_stack([rot[:, 0], rot[:, 1], t])
        return np.asarray(h / h[2, 2], dtype=np.float64)
