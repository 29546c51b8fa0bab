"""Dice drawn with OpenCV for tests: a face of known value, colour and angle on a plain background."""

from __future__ import annotations

import cv2
import numpy as np

from vision.types import ImageArray

# Pip centres on a unit face (-1..1), the usual layout.
PIP_LAYOUT: dict[int, tuple[tuple[float, float], ...]] = {
    1: ((0, 0),),
    2: ((-0.5, -0.5), (0.5, 0.5)),
    3: ((-0.5, -0.5), (0, 0), (0.5, 0.5)),
    4: ((-0.5, -0.5), (0.5, -0.5), (-0.5, 0.5), (0.5, 0.5)),
    5: ((-0.5, -0.5), (0.5, -0.5), (0, 0), (-0.5, 0.5), (0.5, 0.5)),
    6: ((-0.5, -0.5), (0.5, -0.5), (-0.5, 0), (0.5, 0), (-0.5, 0.5), (0.5, 0.5)),
}


def draw_die(
    canvas: ImageArray,
    *,
    face: int,
    centre_xy: tuple[float, float],
    edge_px: float,
    angle_deg: float = 0.0,
    body_bgr: tuple[int, int, int] = (235, 235, 235),
    pip_bgr: tuple[int, int, int] = (20, 20, 20),
    pip_radius_frac: float = 0.09,
) -> tuple[float, float, float, float]:
    """Draw a die seen from above onto `canvas` in place; return its axis-aligned box (xyxy)."""
    cx, cy = centre_xy
    half = edge_px / 2
    rot = np.radians(angle_deg)
    c, s = np.cos(rot), np.sin(rot)
    corners = np.array([[-half, -half], [half, -half], [half, half], [-half, half]])
    pts = corners @ np.array([[c, s], [-s, c]]) + [cx, cy]
    cv2.fillConvexPoly(canvas, pts.round().astype(np.int32), body_bgr, lineType=cv2.LINE_AA)
    radius = max(1, round(edge_px * pip_radius_frac))
    for px, py in PIP_LAYOUT[face]:
        off = np.array([px, py]) * half * 0.95
        x, y = off @ np.array([[c, s], [-s, c]]) + [cx, cy]
        cv2.circle(canvas, (round(x), round(y)), radius, pip_bgr, -1, lineType=cv2.LINE_AA)
    return (
        float(pts[:, 0].min()),
        float(pts[:, 1].min()),
        float(pts[:, 0].max()),
        float(pts[:, 1].max()),
    )


def plain(h: int, w: int, bgr: tuple[int, int, int] = (40, 110, 30)) -> ImageArray:
    """A plain background (felt green by default)."""
    img = np.empty((h, w, 3), np.uint8)
    img[:] = bgr
    return img
