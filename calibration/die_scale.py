"""Die scale: how many pixels a die's edge spans at each place in the box (it varies with perspective).

The die's top face is a square of `die_edge_mm` lying at height `die_edge_mm` above the felt; its expected
edge in pixels is the mean length of that square's four projected sides, through the calibrated camera
(with distortion).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera
from calibration.plane import undistort_px

FloatArray = NDArray[np.float64]


def die_edge_px(camera: Camera, *, x_mm: float, y_mm: float, die_edge_mm: float) -> float:
    """Expected edge length in pixels of the top face of a die resting flat with its centre at (x, y)."""
    return float(die_edges_px(camera, np.array([[x_mm, y_mm]]), die_edge_mm=die_edge_mm)[0])


def die_edges_px(camera: Camera, centres_mm: object, *, die_edge_mm: float) -> FloatArray:
    """`die_edge_px` at each of (n, 2) felt positions in mm, in one projection: (n,) pixels."""
    if not die_edge_mm > 0:
        raise ValueError(f"die edge must be positive, got {die_edge_mm}")
    xy = np.asarray(centres_mm, dtype=np.float64).reshape(-1, 2)
    half = die_edge_mm / 2.0
    offsets = np.array([[-half, -half], [half, -half], [half, half], [-half, half]])
    corners = xy[:, None, :] + offsets[None, :, :]  # (n, 4, 2): the top face's corners, in order round it
    square = np.concatenate([corners, np.full((len(xy), 4, 1), die_edge_mm)], axis=2)
    px = camera.project(square.reshape(-1, 3)).reshape(-1, 4, 2)
    sides = np.linalg.norm(px - np.roll(px, -1, axis=1), axis=2)
    return np.asarray(sides.mean(axis=1), dtype=np.float64)


def die_box_sides_px(camera: Camera, centres_mm: object, *, die_edge_mm: float) -> FloatArray:
    """The long side (px) of the box a whole die flat at each of (n, 2) felt positions shows: its cube's
    eight corners projected, square to the box and turned 45 degrees, the two long sides averaged: (n,).

    Under an oblique camera a die's box holds its top face and the sides turned to the camera, so it is
    longer than the top face's edge by a share that grows with the camera's lean (vision/judge/phantom.py).
    """
    if not die_edge_mm > 0:
        raise ValueError(f"die edge must be positive, got {die_edge_mm}")
    xy = np.asarray(centres_mm, dtype=np.float64).reshape(-1, 2)
    half = die_edge_mm / 2.0
    sides = []
    for turn in (0.0, np.pi / 4.0):
        c, s = np.cos(turn), np.sin(turn)
        square = np.array([[-half, -half], [half, -half], [half, half], [-half, half]]) @ np.array(
            [[c, s], [-s, c]]
        )
        corners = xy[:, None, :] + square[None, :, :]  # (n, 4, 2)
        cube = np.concatenate(
            [
                np.concatenate([corners, np.zeros((len(xy), 4, 1))], axis=2),
                np.concatenate([corners, np.full((len(xy), 4, 1), die_edge_mm)], axis=2),
            ],
            axis=1,
        )  # (n, 8, 3)
        px = camera.project(cube.reshape(-1, 3)).reshape(-1, 8, 2)
        extent = px.max(axis=1) - px.min(axis=1)
        sides.append(extent.max(axis=1))
    return np.asarray(np.mean(sides, axis=0), dtype=np.float64)


def die_edge_grid(
    camera: Camera, *, width_mm: float, depth_mm: float, die_edge_mm: float, step_mm: float = 25.0
) -> FloatArray:
    """Expected die edge (px) on a grid of die centres across the box; rows follow y, columns x."""
    xs = np.arange(die_edge_mm / 2.0, width_mm - die_edge_mm / 2.0 + 1e-9, step_mm)
    ys = np.arange(die_edge_mm / 2.0, depth_mm - die_edge_mm / 2.0 + 1e-9, step_mm)
    return np.array(
        [[die_edge_px(camera, x_mm=float(x), y_mm=float(y), die_edge_mm=die_edge_mm) for x in xs] for y in ys]
    )


def pixel_to_plane_at_height(camera: Camera, points_px: object, *, z_mm: float) -> FloatArray:
    """Raw pixels -> (x, y) mm where their rays cross the plane at height `z_mm` (e.g. die tops)."""
    und = undistort_px(camera.intrinsics, points_px)
    rot = camera.pose.rotation
    t = np.asarray(camera.pose.tvec, dtype=np.float64)
    h = camera.intrinsics.matrix @ np.column_stack([rot[:, 0], rot[:, 1], rot[:, 2] * z_mm + t])
    out = cv2.perspectiveTransform(und.reshape(-1, 1, 2), np.linalg.inv(h))
    return np.asarray(out, dtype=np.float64).reshape(-1, 2)


@dataclass(frozen=True)
class DieScaleCheck:
    """A measured die edge compared with the calibrated expectation at the same place."""

    x_mm: float
    y_mm: float
    expected_px: float
    measured_px: float
    tolerance: float

    @property
    def ratio(self) -> float:
        """measured / expected."""
        return self.measured_px / self.expected_px

    @property
    def ok(self) -> bool:
        """True when the measurement agrees within the relative tolerance."""
        return abs(self.ratio - 1.0) <= self.tolerance


def check_die_scale(
    camera: Camera,
    *,
    centre_px: tuple[float, float],
    measured_edge_px: float,
    die_edge_mm: float,
    tolerance: float = 0.08,
) -> DieScaleCheck:
    """Compare a die measured in the image (top-face centre and edge, px) with the calibrated die scale."""
    if not measured_edge_px > 0:
        raise ValueError(f"measured die edge must be positive, got {measured_edge_px}")
    xy = pixel_to_plane_at_height(camera, [centre_px], z_mm=die_edge_mm)[0]
    expected = die_edge_px(camera, x_mm=float(xy[0]), y_mm=float(xy[1]), die_edge_mm=die_edge_mm)
    return DieScaleCheck(
        x_mm=float(xy[0]),
        y_mm=float(xy[1]),
        expected_px=expected,
        measured_px=float(measured_edge_px),
        tolerance=tolerance,
    )
