"""ArUco markers at the four inner corners of the throw box, and finding them in a frame.

Each marker lies flat on the felt (z = 0) in an inner corner of the box, its sides along the walls, on a
white sticker that leaves a quiet zone of `inset_mm` between the walls and the marker's black border (the
detector needs contrast all round). Markers are printed to read upright from the dealer's side, like the
layout labels: the marker image's x runs along world x and its top edge faces the far side (+y).

Ids go round the box: dealer's left, dealer's right, far right, far left (see `calibration.camera` for the
world frame). Marker corners are listed in ArUco order (marker image top-left, top-right, bottom-right,
bottom-left): world (x0, y1), (x1, y1), (x1, y0), (x0, y0) for a marker spanning x0..x1, y0..y1.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.errors import MarkersNotFoundError
from calibration.images import to_gray
from calibration.layout import ThrowBoxLayout

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class CornerMarkers:
    """Which ArUco markers sit at the box corners, and how big they are."""

    dictionary: str = "DICT_4X4_50"
    ids: tuple[int, int, int, int] = (0, 1, 2, 3)
    side_mm: float = 30.0
    inset_mm: float = 5.0

    def __post_init__(self) -> None:
        if not self.dictionary.startswith("DICT_") or not hasattr(cv2.aruco, self.dictionary):
            raise ValueError(f"unknown ArUco dictionary {self.dictionary!r}")
        if len(set(self.ids)) != 4:
            raise ValueError(f"four distinct marker ids are needed, got {self.ids}")
        if not self.side_mm > 0:
            raise ValueError(f"marker side must be positive, got {self.side_mm}")
        if self.inset_mm < 0:
            raise ValueError(f"marker inset must not be negative, got {self.inset_mm}")

    @property
    def sticker_mm(self) -> float:
        """Side of the white sticker the marker is printed on (marker plus quiet zone on both sides)."""
        return self.side_mm + 2.0 * self.inset_mm

    def aruco_dictionary(self) -> cv2.aruco.Dictionary:
        """The OpenCV dictionary object."""
        return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))

    def corners_mm(self, layout: ThrowBoxLayout) -> dict[int, FloatArray]:
        """Each marker's four corners on the felt, (4, 2) mm in ArUco corner order, keyed by id."""
        s, q, w, d = self.side_mm, self.inset_mm, layout.width_mm, layout.depth_mm
        origins = ((q, q), (w - s - q, q), (w - s - q, d - s - q), (q, d - s - q))
        out: dict[int, FloatArray] = {}
        for marker_id, (x0, y0) in zip(self.ids, origins, strict=True):
            out[marker_id] = np.array(
                [[x0, y0 + s], [x0 + s, y0 + s], [x0 + s, y0], [x0, y0]], dtype=np.float64
            )
        return out

    def marker_image(self, marker_id: int, *, side_px: int) -> NDArray[np.uint8]:
        """The printable marker (grey, one-bit border) at `side_px` pixels."""
        img = cv2.aruco.generateImageMarker(self.aruco_dictionary(), marker_id, side_px, borderBits=1)
        return np.asarray(img, dtype=np.uint8)


def find_markers(image: object, markers: CornerMarkers) -> dict[int, FloatArray]:
    """Corner markers visible in the frame: id -> (4, 2) sub-pixel corners; missing ones left out."""
    gray = to_gray(image, name="frame")
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    params.cornerRefinementWinSize = 3
    params.cornerRefinementMaxIterations = 60
    params.cornerRefinementMinAccuracy = 0.001
    detector = cv2.aruco.ArucoDetector(markers.aruco_dictionary(), params)
    corners, ids, _rejected = detector.detectMarkers(gray)
    found: dict[int, FloatArray] = {}
    if ids is None:
        return found
    wanted = set(markers.ids)
    seen_twice: set[int] = set()
    for quad, marker_id in zip(corners, np.asarray(ids).ravel(), strict=True):
        mid = int(marker_id)
        if mid not in wanted:
            continue
        if mid in found:
            seen_twice.add(mid)
        found[mid] = np.asarray(quad, dtype=np.float64).reshape(4, 2)
    for mid in seen_twice:  # an id seen twice is ambiguous: do not guess which one is the corner
        del found[mid]
    return found


def require_markers(image: object, markers: CornerMarkers) -> dict[int, FloatArray]:
    """All four corner markers, or `MarkersNotFoundError` naming the missing ones."""
    found = find_markers(image, markers)
    missing = tuple(i for i in markers.ids if i not in found)
    if missing:
        raise MarkersNotFoundError(
            f"corner markers {list(missing)} ({markers.dictionary}) not found (or seen twice) in the frame; "
            "all four must be visible, or give the box corners by hand",
            missing_ids=missing,
        )
    return found
