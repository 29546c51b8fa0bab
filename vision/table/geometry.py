"""Where a die is on the table, from a table calibration: felt position, throw-box membership, layout box.

Optional: without a calibration (a photo read with `throwbox read`), the judge works from the image alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from calibration.camera import Camera
from calibration.die_scale import die_edges_px, pixel_to_plane_at_height
from calibration.layout import LAYOUT_LABELS, ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.marks import TableMark
from calibration.table import TableCalibration

WALL_PROBES = 9  # places along each wall where `TableGeometry.walls_hide_a_die` looks


@dataclass(frozen=True)
class TableGeometry:
    """A calibrated camera over a known throw box."""

    camera: Camera
    layout: ThrowBoxLayout
    # The corner markers a marker calibration left on the felt and where it saw them
    # (vision/table/markers.py).
    markers: CornerMarkers | None = None
    marker_corners_px: Mapping[int, tuple[tuple[float, float], ...]] = field(default_factory=dict, hash=False)
    # What the detector took for dice on the empty box at calibration (vision/table/marks.py).
    marks: tuple[TableMark, ...] = ()

    @classmethod
    def from_calibration(cls, calibration: TableCalibration) -> TableGeometry:
        """The geometry of a stored table calibration."""
        return cls(
            camera=calibration.camera,
            layout=calibration.layout,
            markers=calibration.markers,
            marker_corners_px=dict(calibration.reference_corners_px),
            marks=calibration.marks,
        )

    def centre_mm(self, box_xyxy: Sequence[float]) -> tuple[float, float]:
        """Felt position (mm) of a die whose whole-die box this is (its centre lies half an edge up)."""
        xy = self.centres_mm([box_xyxy])[0]
        return (float(xy[0]), float(xy[1]))

    def centres_mm(self, boxes_xyxy: Sequence[Sequence[float]]) -> np.ndarray:
        """`centre_mm` of each box, in one go: (n, 2) felt positions in mm."""
        if len(boxes_xyxy) == 0:
            return np.zeros((0, 2), np.float64)
        b = np.asarray(boxes_xyxy, np.float64).reshape(-1, 4)
        centres = np.stack([(b[:, 0] + b[:, 2]) / 2.0, (b[:, 1] + b[:, 3]) / 2.0], axis=1)
        return pixel_to_plane_at_height(self.camera, centres, z_mm=self.layout.die_edge_mm / 2.0)

    def die_edges_px(self, boxes_xyxy: Sequence[Sequence[float]]) -> np.ndarray:
        """The top-face edge (px) a die flat on the felt would show at each box's felt position: (n,).

        Perspective taken out: a die far from an oblique camera is small in the frame, and so is this.
        """
        return die_edges_px(self.camera, self.centres_mm(boxes_xyxy), die_edge_mm=self.layout.die_edge_mm)

    def view_angles_deg(self, boxes_xyxy: Sequence[Sequence[float]]) -> np.ndarray:
        """The angle (degrees) between the vertical and the camera's ray to each die's centre: (n,).

        0 under the camera; it grows toward the frame's edges, and with the camera's own tilt. A die tilted
        `t` degrees toward the camera shows its top face `t` plus this off the camera's axis.
        """
        if len(boxes_xyxy) == 0:
            return np.zeros(0, np.float64)
        half = self.layout.die_edge_mm / 2.0
        centres = self.centres_mm(boxes_xyxy)
        ray = np.asarray(self.camera.pose.position_mm, np.float64)[None, :] - np.column_stack(
            [centres, np.full(len(centres), half)]
        )
        cos = np.abs(ray[:, 2]) / np.maximum(np.linalg.norm(ray, axis=1), 1e-9)
        return np.asarray(np.degrees(np.arccos(np.clip(cos, 0.0, 1.0))), np.float64)

    def beyond_walls_mm(self, x_mm: float, y_mm: float) -> float:
        """How far a felt point lies outside the throw box's inner walls (negative: inside)."""
        box = self.layout.box
        dx = max(box.x0 - x_mm, x_mm - box.x1)
        dy = max(box.y0 - y_mm, y_mm - box.y1)
        if dx <= 0 and dy <= 0:
            return max(dx, dy)
        return float(np.hypot(max(dx, 0.0), max(dy, 0.0)))

    def layout_label(self, x_mm: float, y_mm: float) -> str | None:
        """Name of the labelled layout box (593.1(b)(4)) the point lies in, e.g. "Ace", or None."""
        face = self.layout.layout_box_at(x_mm, y_mm)
        return None if face is None else LAYOUT_LABELS[face]

    def box_in_view(self) -> bool:
        """True when the whole throw box floor is seen (so a die not found is not in it): its corners are
        inside the frame and no wall hides a die lying against it from the camera (`walls_hide_a_die`)."""
        corners = np.array([[x, y, 0.0] for x, y in self.layout.box.corners], np.float64)
        px = self.camera.project(corners)
        w, h = self.camera.intrinsics.width_px, self.camera.intrinsics.height_px
        in_frame = bool(np.all((px[:, 0] >= 0) & (px[:, 0] <= w) & (px[:, 1] >= 0) & (px[:, 1] <= h)))
        return in_frame and not self.walls_hide_a_die()

    def walls_hide_a_die(self) -> bool:
        """Could a die lying flat against a wall be wholly hidden behind that wall from this camera?

        The last part of such a die to go out of sight is its top face's inner edge, one die edge from the
        wall and one die edge above the felt. It is hidden when the camera stands beyond the wall's plane
        and the line of sight from it crosses that plane below the wall's top. Probed at `WALL_PROBES`
        places along each wall (a low, oblique camera over a near wall: 37 of 1,000 cameras of tune-s6400,
        and there every good roll holding a die the render shows not at all). Worked out once per geometry
        (the count rule asks it twice for a short count: whether the box is in view, and why not).
        """
        return self._walls_hide_a_die

    @cached_property
    def _walls_hide_a_die(self) -> bool:
        """`walls_hide_a_die`, computed (a frozen geometry: its camera and walls never change)."""
        box, edge = self.layout.box, self.layout.die_edge_mm
        top = self.layout.wall_height_mm
        eye = self.camera.pose.position_mm
        along = (np.arange(WALL_PROBES) + 0.5) / WALL_PROBES
        walls = ((0, box.x0, 1.0), (0, box.x1, -1.0), (1, box.y0, 1.0), (1, box.y1, -1.0))
        for axis, plane, inward in walls:
            if (eye[axis] - plane) * inward >= 0:
                continue  # the camera is on the box's side of this wall: it hides nothing
            lo, hi = (box.y0, box.y1) if axis == 0 else (box.x0, box.x1)
            for k in along:
                point = np.zeros(3)
                point[axis], point[1 - axis], point[2] = plane + inward * edge, lo + k * (hi - lo), edge
                s = (point[axis] - plane) / (point[axis] - eye[axis])
                if point[2] + (eye[2] - point[2]) * s < top:
                    return True
        return False
