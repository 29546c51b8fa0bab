"""Intrinsics from synthetic board views with a known camera, and every refusal path."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.board import BoardSpec
from calibration.errors import BadImageError, CalibrationRefusedError
from calibration.intrinsics import IntrinsicsLimits, calibrate_intrinsics
from calibration.selftest.scenes import (
    SceneRenderer,
    board_view_poses,
    render_board_views,
    table_camera_truth,
)
from tests.calibration.conftest import Scenes


def test_focal_length_within_one_percent_of_truth(scenes: Scenes) -> None:
    est, truth = scenes.intrinsics.intrinsics, scenes.truth
    assert abs(est.fx / truth.fx - 1.0) < 0.01
    assert abs(est.fy / truth.fy - 1.0) < 0.01
    assert np.hypot(est.cx - truth.cx, est.cy - truth.cy) < 5.0
    assert scenes.intrinsics.rms_px < 0.3
    assert scenes.intrinsics.views_used == len(scenes.board_images)


def test_distortion_recovered(scenes: Scenes) -> None:
    """Undistorting with the estimate agrees with the truth to a small fraction of a pixel at the corners."""
    from calibration.plane import undistort_px

    corners = np.array([[5.0, 5.0], [634.0, 5.0], [634.0, 354.0], [5.0, 354.0], [320.0, 180.0]])
    est = undistort_px(scenes.intrinsics.intrinsics, corners)
    true = undistort_px(scenes.truth, corners)
    # Compare directions (normalised rays), which do not depend on the small focal-length difference.
    k_est, k_true = scenes.intrinsics.intrinsics.matrix, scenes.truth.matrix
    ray_est = (est - k_est[:2, 2]) / np.diag(k_est)[:2]
    ray_true = (true - k_true[:2, 2]) / np.diag(k_true)[:2]
    assert np.abs(ray_est - ray_true).max() * scenes.truth.fx < 1.5


def test_chessboard_calibration() -> None:
    """A plain chessboard works too (smaller camera, six views)."""
    truth = table_camera_truth(width_px=480, height_px=270)
    board = BoardSpec.parse("chessboard:9x6:30")
    renderer = SceneRenderer(truth, supersample=1)
    images = render_board_views(renderer, board, board_view_poses(board, truth, count=6, seed=9), seed=1)
    result = calibrate_intrinsics(images, board)
    assert abs(result.intrinsics.fx / truth.fx - 1.0) < 0.01


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        # more views demanded than given
        (IntrinsicsLimits(min_views=20), "too_few_views"),
        # corners must cover almost the whole image
        (IntrinsicsLimits(min_coverage=0.95), "poor_coverage"),
        # an impossible reprojection limit
        (IntrinsicsLimits(max_rms_px=1e-4), "high_reprojection_error"),
        # principal point must be exactly central
        (IntrinsicsLimits(max_principal_offset=1e-6), "implausible_principal_point"),
        # fx must equal fy exactly
        (IntrinsicsLimits(max_aspect_deviation=0.0), "implausible_aspect"),
        # a narrow lens is expected, the camera is a 62-degree one
        (IntrinsicsLimits(hfov_range_deg=(10.0, 30.0)), "implausible_focal_length"),
    ],
)
def test_refused_by_limits(scenes: Scenes, limits: IntrinsicsLimits, reason: str) -> None:
    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_intrinsics(scenes.board_images[:6], scenes.board, limits=limits)
    assert info.value.reason == reason
    assert str(info.value)  # a sentence for the operator


def test_refused_without_images(scenes: Scenes) -> None:
    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_intrinsics([], scenes.board)
    assert info.value.reason == "no_images"


def test_refused_when_board_not_in_images(scenes: Scenes) -> None:
    blank = [np.full((360, 640, 3), 90, np.uint8) for _ in range(6)]
    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_intrinsics(blank, scenes.board)
    assert info.value.reason == "too_few_views"
    assert "found in 0 of 6" in str(info.value)


def test_refused_for_wrong_board(scenes: Scenes) -> None:
    """Another dictionary's markers are not the board: no views, refused."""
    other = BoardSpec.parse("charuco:7x5:40:30:DICT_6X6_250")
    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_intrinsics(scenes.board_images[:5], other)
    assert info.value.reason == "too_few_views"


def test_refused_for_mixed_resolutions(scenes: Scenes) -> None:
    odd = np.zeros((300, 400, 3), np.uint8)
    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_intrinsics([*scenes.board_images, odd], scenes.board)
    assert info.value.reason == "mixed_resolution"


def test_bad_image_in_the_set(scenes: Scenes) -> None:
    with pytest.raises(BadImageError, match="image 2"):
        calibrate_intrinsics([scenes.board_images[0], scenes.board_images[1], None], scenes.board)


def test_views_without_board_are_reported(scenes: Scenes) -> None:
    blank = np.full((360, 640, 3), 90, np.uint8)
    result = calibrate_intrinsics([blank, *scenes.board_images], scenes.board)
    assert result.views_without_board == (0,)
    assert result.views_used == len(scenes.board_images)


def test_refused_when_the_solver_fails(scenes: Scenes, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenCV raising inside the calibration is a refusal with its message, not a crash."""
    import cv2

    def broken(*_args: object, **_kwargs: object) -> None:
        raise cv2.error("simulated solver failure")

    monkeypatch.setattr(cv2, "calibrateCameraExtended", broken)
    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_intrinsics(scenes.board_images[:5], scenes.board)
    assert info.value.reason == "solver_failed"
