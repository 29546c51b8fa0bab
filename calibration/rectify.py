"""Rectify: a top-down view of the throw box in millimetres, undistorted, from a camera frame.

Output pixel (row, col) shows felt point x = (col + 0.5) / px_per_mm - margin_mm,
y = depth_mm + margin_mm - (row + 0.5) / px_per_mm: the dealer's side at the bottom, Ace's corner at the
bottom left, as the dealer sees the box. The per-pixel source map is computed once (through the lens
model) and then every frame is one `cv2.remap`.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.errors import ResolutionMismatchError
from calibration.images import check_image
from calibration.table import TableCalibration

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Rectifier:
    """Maps frames of one calibrated table to the top-down millimetre view."""

    table_id: str
    calibration_id: str
    px_per_mm: float
    margin_mm: float
    width_mm: float
    depth_mm: float
    map_x: NDArray[np.float32]
    map_y: NDArray[np.float32]
    resolution_wh: tuple[int, int]

    @classmethod
    def build(cls, cal: TableCalibration, *, px_per_mm: float = 2.0, margin_mm: float = 0.0) -> Rectifier:
        """Compute the source map for a table (cost grows with the output size; keep one per table)."""
        if not 0 < px_per_mm <= 20:
            raise ValueError(f"px_per_mm must be in (0, 20], got {px_per_mm}")
        if margin_mm < 0:
            raise ValueError(f"margin must not be negative, got {margin_mm}")
        w = cal.layout.width_mm + 2 * margin_mm
        d = cal.layout.depth_mm + 2 * margin_mm
        cols, rows = round(w * px_per_mm), round(d * px_per_mm)
        xs = (np.arange(cols) + 0.5) / px_per_mm - margin_mm
        ys = cal.layout.depth_mm + margin_mm - (np.arange(rows) + 0.5) / px_per_mm
        gx, gy = np.meshgrid(xs, ys)
        src = cal.mm_to_pixel(np.stack([gx.ravel(), gy.ravel()], axis=1))
        return cls(
            table_id=cal.table_id,
            calibration_id=cal.calibration_id,
            px_per_mm=px_per_mm,
            margin_mm=margin_mm,
            width_mm=cal.layout.width_mm,
            depth_mm=cal.layout.depth_mm,
            map_x=src[:, 0].reshape(rows, cols).astype(np.float32),
            map_y=src[:, 1].reshape(rows, cols).astype(np.float32),
            resolution_wh=cal.resolution_wh,
        )

    def rectify(self, frame: object) -> NDArray[np.uint8]:
        """The top-down view of a frame (pixels outside the camera's view are black)."""
        img = check_image(frame, name="frame")
        if (img.shape[1], img.shape[0]) != self.resolution_wh:
            raise ResolutionMismatchError(
                f"frame is {img.shape[1]}x{img.shape[0]} px, table {self.table_id!r} was calibrated at "
                f"{self.resolution_wh[0]}x{self.resolution_wh[1]} px"
            )
        out = cv2.remap(img, self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        return np.asarray(out, dtype=np.uint8)

    def mm_to_rectified(self, points_mm: object) -> FloatArray:
        """(n, 2) felt mm -> (n, 2) (col, row) coordinates in the rectified image (pixel centres)."""
        pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
        col = (pts[:, 0] + self.margin_mm) * self.px_per_mm - 0.5
        row = (self.depth_mm + self.margin_mm - pts[:, 1]) * self.px_per_mm - 0.5
        return np.stack([col, row], axis=1)

    def rectified_to_mm(self, points_px: object) -> FloatArray:
        """Inverse of `mm_to_rectified`."""
        pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 2)
        x = (pts[:, 0] + 0.5) / self.px_per_mm - self.margin_mm
        y = self.depth_mm + self.margin_mm - (pts[:, 1] + 0.5) / self.px_per_mm
        return np.stack([x, y], axis=1)
