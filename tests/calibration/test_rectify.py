"""Rectified top-down view: markers and layout lines land at their millimetre positions."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.errors import ResolutionMismatchError
from calibration.markers import CornerMarkers, find_markers
from calibration.rectify import Rectifier
from tests.calibration.conftest import SMALL_LAYOUT, Scenes


def test_markers_land_at_their_millimetres(scenes: Scenes) -> None:
    rect = Rectifier.build(scenes.cal, px_per_mm=2.0, margin_mm=10.0)
    top = rect.rectify(scenes.empty)
    assert top.shape == (round(245 * 2.0), round(320 * 2.0), 3)
    found = find_markers(top, CornerMarkers())
    assert sorted(found) == [0, 1, 2, 3]  # a mirrored view would not decode
    for marker_id, quad_mm in CornerMarkers().corners_mm(SMALL_LAYOUT).items():
        error_mm = np.linalg.norm(rect.rectified_to_mm(found[marker_id]) - quad_mm, axis=1)
        # ArUco's L-corner bias (~0.3 px in the camera image, see test_scenes) is most of this.
        assert error_mm.max() < 1.0


def test_round_trip_and_refusals(scenes: Scenes) -> None:
    rect = Rectifier.build(scenes.cal, px_per_mm=1.0)
    pts = np.array([[0.0, 0.0], [300.0, 225.0], [12.5, 200.0]])
    assert np.allclose(rect.rectified_to_mm(rect.mm_to_rectified(pts)), pts)
    with pytest.raises(ResolutionMismatchError):
        rect.rectify(np.zeros((100, 100, 3), np.uint8))
    with pytest.raises(ValueError, match="px_per_mm"):
        Rectifier.build(scenes.cal, px_per_mm=0.0)
