"""Pixel <-> felt mapping, plane fitting and its refusals (hand-given corners included)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.errors import BadCornerPointsError
from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.plane import PlaneMap, distort_px, fit_plane, undistort_px
from calibration.table import box_corners_mm, calibrate_table
from tests.calibration.conftest import SMALL_LAYOUT, Scenes

TRUTH = CameraIntrinsics.from_fov(
    width_px=640, height_px=360, hfov_deg=62.0, dist=(-0.21, 0.075, 0.0006, -0.0004)
)
POSE = CameraPose.look_at(eye_mm=(150.0, 40.0, 430.0), target_mm=(150.0, 112.5, 0.0))


def test_distort_undistort_round_trip() -> None:
    pts = np.array([[0.0, 0.0], [639.0, 359.0], [320.0, 180.0], [10.5, 300.25]])
    assert np.abs(distort_px(TRUTH, undistort_px(TRUTH, pts)) - pts).max() < 1e-6


def test_exact_homography_maps_truth_exactly() -> None:
    cam = Camera(TRUTH, POSE)
    h = np.linalg.inv(cam.plane_homography())
    plane = PlaneMap(TRUTH, tuple(float(v) for v in (h / h[2, 2]).ravel()))
    mm = np.array([[0.0, 0.0], [300.0, 225.0], [123.4, 56.7]])
    px = cam.project(np.c_[mm, np.zeros(3)])
    assert np.abs(plane.pixel_to_mm(px) - mm).max() < 1e-6
    assert np.abs(plane.mm_to_pixel(mm) - px).max() < 1e-6


def test_fit_from_exact_points_recovers_pose() -> None:
    cam = Camera(TRUTH, POSE)
    mm = box_corners_mm(SMALL_LAYOUT)
    fit = fit_plane(TRUTH, image_points_px=cam.project(np.c_[mm, np.zeros(4)]), plane_points_mm=mm)
    assert fit.max_mm < 1e-4  # exact points: only floating-point error
    assert np.abs(fit.pose.position_mm - POSE.position_mm).max() < 1e-3


@pytest.mark.parametrize(
    ("pixels", "felt", "match"),
    [
        # three points only
        ([[10, 10], [100, 10], [100, 100]], [[0, 0], [1, 0], [1, 1]], "at least 4"),
        # counts differ
        ([[10, 10], [100, 10], [100, 100], [10, 100]], [[0, 0], [1, 0], [1, 1]], "felt points"),
        # all on a line
        ([[10, 10], [100, 10], [200, 10], [300, 10]], [[0, 0], [1, 0], [1, 1], [0, 1]], "collinear"),
        # a point outside the image
        ([[10, 10], [700, 10], [100, 100], [10, 100]], [[0, 0], [1, 0], [1, 1], [0, 1]], "outside"),
        # a repeated point
        (
            [[10, 10], [10, 10], [100, 100], [10, 100]],
            [[0, 0], [1, 0], [1, 1], [0, 1]],
            "collinear or repeated",
        ),
    ],
)
def test_fit_refusals(pixels: list[list[float]], felt: list[list[float]], match: str) -> None:
    with pytest.raises(BadCornerPointsError, match=match):
        fit_plane(TRUTH, image_points_px=np.array(pixels, float), plane_points_mm=np.array(felt, float))


def test_hand_given_corners_calibrate_within_a_millimetre(scenes: Scenes) -> None:
    """Four corners clicked to 0.3 px give the same plane as the markers, within a millimetre."""
    cam = scenes.scene.camera
    clicks = np.array([[0.3, -0.2], [-0.3, 0.2], [0.2, 0.3], [-0.2, -0.3]])
    corners = cam.project(np.c_[box_corners_mm(SMALL_LAYOUT), np.zeros(4)]) + clicks
    cal = calibrate_table(
        scenes.empty,
        table_id="hand",
        intrinsics=scenes.intrinsics.intrinsics,
        intrinsics_rms_px=scenes.intrinsics.rms_px,
        layout=SMALL_LAYOUT,
        corners_px=corners,
    )
    assert cal.source == "manual"
    grid = np.array([[x, y] for x in range(0, 301, 50) for y in range(0, 226, 45)], float)
    px = cam.project(np.c_[grid, np.zeros(len(grid))])
    assert np.linalg.norm(cal.pixel_to_mm(px) - grid, axis=1).max() < 1.0


@pytest.mark.parametrize(
    ("corners", "match"),
    [
        # dealer's right and far right swapped: a bow-tie
        ([[100, 300], [300, 100], [540, 300], [100, 100]], "convex"),
        # the right order mirrored (dealer's right first)
        ([[540, 300], [100, 300], [100, 100], [540, 100]], "mirrored"),
        # three points
        ([[100, 300], [540, 300], [540, 100]], "four"),
        # not numbers
        ([["a", "b"], [1, 2], [3, 4], [5, 6]], "not numbers"),
        # not finite
        ([[np.nan, 300], [540, 300], [540, 100], [100, 100]], "finite"),
    ],
)
def test_hand_corner_refusals(scenes: Scenes, corners: object, match: str) -> None:
    with pytest.raises(BadCornerPointsError, match=match):
        calibrate_table(
            scenes.empty,
            table_id="hand",
            intrinsics=scenes.intrinsics.intrinsics,
            intrinsics_rms_px=scenes.intrinsics.rms_px,
            layout=SMALL_LAYOUT,
            corners_px=corners,
        )


def test_markers_and_corners_are_exclusive(scenes: Scenes) -> None:
    with pytest.raises(ValueError, match="either"):
        calibrate_table(
            scenes.empty,
            table_id="x",
            intrinsics=scenes.intrinsics.intrinsics,
            intrinsics_rms_px=0.1,
            layout=ThrowBoxLayout(),
            markers=CornerMarkers(),
            corners_px=[[0, 0], [1, 0], [1, 1], [0, 1]],
        )
