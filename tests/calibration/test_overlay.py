"""The overlay draws the box and the layout boxes where the true camera sees them."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.errors import ResolutionMismatchError
from calibration.overlay import draw_overlay
from tests.calibration.conftest import SMALL_LAYOUT, Scenes

AMBER = np.array([0, 220, 255])
CYAN = np.array([255, 255, 0])


def _colour_near(image: np.ndarray, px: np.ndarray, colour: np.ndarray) -> float:
    """Smallest colour distance to `colour` within one pixel of `px`."""
    u, v = (round(float(c)) for c in px)
    patch = image[v - 1 : v + 2, u - 1 : u + 2].reshape(-1, 3).astype(float)
    return float(np.linalg.norm(patch - colour, axis=1).min())


def test_box_and_layout_boxes_are_drawn_on_the_truth(scenes: Scenes) -> None:
    image = draw_overlay(scenes.empty, scenes.cal)
    cam = scenes.scene.camera
    # Mid-points of the four box walls (felt level), as the true camera sees them.
    w, d = SMALL_LAYOUT.width_mm, SMALL_LAYOUT.depth_mm
    walls = np.array([[w / 2, 0.0, 0.0], [w, d / 2, 0.0], [w / 2, d, 0.0], [0.0, d / 2, 0.0]])
    for px in cam.project(walls):
        assert _colour_near(image, px, AMBER) < 60
    # The far edge of every layout box.
    for rect in SMALL_LAYOUT.layout_boxes().values():
        px = cam.project(np.array([[(rect.x0 + rect.x1) / 2, rect.y1, 0.0]]))[0]
        assert _colour_near(image, px, CYAN) < 60
    # The original frame is left alone.
    assert not np.array_equal(image, scenes.empty)
    assert _colour_near(scenes.empty, cam.project(walls[:1])[0], AMBER) > 100


def test_overlay_needs_the_calibrated_resolution(scenes: Scenes) -> None:
    with pytest.raises(ResolutionMismatchError):
        draw_overlay(np.zeros((100, 100, 3), np.uint8), scenes.cal)
