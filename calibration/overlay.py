"""Draw a calibration over a frame: box outline, millimetre grid, labelled layout boxes, die-scale marks,
and the table marks (what the die detector takes for dice on the empty box).

Lines are drawn as densely sampled polylines through the lens model, so they bend with the distortion and
lie exactly on what the calibration believes is the felt.
"""

from __future__ import annotations

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.images import to_bgr
from calibration.layout import LAYOUT_LABELS
from calibration.table import TableCalibration

_BOX = (0, 220, 255)  # BGR: amber
_GRID = (200, 200, 200)
_LAYOUT = (255, 255, 0)  # cyan
_DIE = (80, 80, 255)
_MARKER = (255, 0, 255)
_MARK = (255, 255, 255)  # table marks: what the die detector takes for dice on the empty box
_SHIFT = 4  # fixed-point bits for sub-pixel drawing


def _polyline(
    img: NDArray[np.uint8],
    cal: TableCalibration,
    pts_mm: NDArray[np.float64],
    colour: tuple[int, int, int],
    thickness: int,
    *,
    closed: bool = False,
) -> None:
    px = cal.mm_to_pixel(pts_mm)
    pts = np.round(px * (1 << _SHIFT)).astype(np.int32).reshape(-1, 1, 2)
    cv2.polylines(img, [pts], closed, colour, thickness, cv2.LINE_AA, shift=_SHIFT)


def _segment(a: tuple[float, float], b: tuple[float, float], *, step_mm: float = 5.0) -> NDArray[np.float64]:
    n = max(2, int(np.hypot(b[0] - a[0], b[1] - a[1]) / step_mm) + 1)
    return np.stack([np.linspace(a[0], b[0], n), np.linspace(a[1], b[1], n)], axis=1)


def _rect(x0: float, y0: float, x1: float, y1: float) -> NDArray[np.float64]:
    corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)]
    return np.concatenate([_segment(corners[i], corners[i + 1]) for i in range(4)])


def draw_overlay(frame: object, cal: TableCalibration, *, grid_mm: float = 50.0) -> NDArray[np.uint8]:
    """A copy of the frame with the calibration drawn on it."""
    img = to_bgr(frame, name="frame").copy()
    cal.require_resolution(img)
    lay = cal.layout
    scale = max(img.shape[:2]) / 1280.0
    thin, thick = max(1, round(scale)), max(2, round(2 * scale))
    for x in np.arange(grid_mm, lay.width_mm - 1e-6, grid_mm):
        _polyline(img, cal, _segment((float(x), 0.0), (float(x), lay.depth_mm)), _GRID, thin)
    for y in np.arange(grid_mm, lay.depth_mm - 1e-6, grid_mm):
        _polyline(img, cal, _segment((0.0, float(y)), (lay.width_mm, float(y))), _GRID, thin)
    _polyline(img, cal, _rect(0.0, 0.0, lay.width_mm, lay.depth_mm), _BOX, thick)
    font_scale = 0.5 * scale
    for face, rect in lay.layout_boxes().items():
        _polyline(img, cal, _rect(rect.x0, rect.y0, rect.x1, rect.y1), _LAYOUT, thick)
        # Label just beyond the box's far edge, so it does not hide the printed label.
        cx, cy = cal.mm_to_pixel([(rect.centre[0], rect.y1 + 0.25 * lay.strip_margin_mm)])[0]
        label = LAYOUT_LABELS[face]
        (tw, th), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, font_scale, thin)
        org = (round(cx - tw / 2), round(cy - th / 2))
        cv2.putText(img, label, org, cv2.FONT_HERSHEY_SIMPLEX, font_scale, (0, 0, 0), thin + 2, cv2.LINE_AA)
        cv2.putText(img, label, org, cv2.FONT_HERSHEY_SIMPLEX, font_scale, _LAYOUT, thin, cv2.LINE_AA)
    # Die scale: the expected top face of a resting die (at die height) at nine places in the throw area.
    area = lay.throw_area
    e = lay.die_edge_mm
    camera = cal.camera
    for fx in (0.15, 0.5, 0.85):
        for fy in (0.15, 0.5, 0.85):
            x = area.x0 + fx * (area.x1 - area.x0)
            y = area.y0 + fy * (area.y1 - area.y0)
            top = camera.project(
                np.array(
                    [
                        [x - e / 2, y - e / 2, e],
                        [x + e / 2, y - e / 2, e],
                        [x + e / 2, y + e / 2, e],
                        [x - e / 2, y + e / 2, e],
                    ]
                )
            )
            pts = np.round(top * (1 << _SHIFT)).astype(np.int32).reshape(-1, 1, 2)
            cv2.polylines(img, [pts], True, _DIE, thin, cv2.LINE_AA, shift=_SHIFT)
            edge_px = cal.die_edge_px_at(x, y)
            label_org = (
                round(float(top[:, 0].max()) + 3 * scale),
                round(float(top[:, 1].mean()) + 4 * scale),
            )
            cv2.putText(
                img,
                f"{edge_px:.1f}px",
                label_org,
                cv2.FONT_HERSHEY_SIMPLEX,
                0.35 * scale,
                _DIE,
                thin,
                cv2.LINE_AA,
            )
    for quad in cal.reference_corners_px.values():
        pts = np.round(np.asarray(quad) * (1 << _SHIFT)).astype(np.int32).reshape(-1, 1, 2)
        cv2.polylines(img, [pts], True, _MARKER, thin, cv2.LINE_AA, shift=_SHIFT)
    for mark in cal.marks:  # a white box labelled "mark": what reads will leave out while it looks the same
        x0, y0, x1, y1 = (round(v) for v in mark.box_xyxy)
        cv2.rectangle(img, (x0, y0), (x1, y1), _MARK, thin, cv2.LINE_AA)
        cv2.putText(
            img, "mark", (x0, y1 + round(12 * scale)), cv2.FONT_HERSHEY_SIMPLEX, 0.35 * scale, _MARK, thin
        )
    text = f"table {cal.table_id}  {cal.calibration_id.split('#')[-1]}  grid {grid_mm:g} mm"
    org = (round(10 * scale), round(24 * scale))
    (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, font_scale, thin)
    cv2.rectangle(img, (org[0] - 4, org[1] - th - 4), (org[0] + tw + 4, org[1] + base + 2), (0, 0, 0), -1)
    cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, font_scale, (255, 255, 255), thin, cv2.LINE_AA)
    return img
