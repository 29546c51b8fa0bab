"""Shared synthetic scenes for the calibration tests: a half-size throw box seen by a 640x360 camera.

The box is half the default size and the camera half the resolution, so pixels per millimetre match the
full-size selftest while rendering four times fewer pixels. Everything is rendered once per session.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from calibration.board import BoardSpec
from calibration.camera import CameraIntrinsics
from calibration.intrinsics import IntrinsicsResult, calibrate_intrinsics
from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.selftest.scenes import (
    DEFAULT_BOARD,
    SceneRenderer,
    TableScene,
    board_view_poses,
    render_board_views,
    table_camera_pose,
    table_camera_truth,
)
from calibration.table import TableCalibration, calibrate_table

SMALL_LAYOUT = ThrowBoxLayout(
    width_mm=300.0, depth_mm=225.0, wall_height_mm=40.0, strip_depth_mm=40.0, strip_margin_mm=8.0
)
WIDTH_PX, HEIGHT_PX = 640, 360
BOARD_VIEWS = 8


@dataclass(frozen=True)
class Scenes:
    """Truth and rendered images shared by the tests."""

    truth: CameraIntrinsics
    board: BoardSpec
    board_images: list[np.ndarray]
    intrinsics: IntrinsicsResult
    scene: TableScene
    empty: np.ndarray
    empty_2: np.ndarray
    cal: TableCalibration


@pytest.fixture(scope="session")
def scenes() -> Scenes:
    """Board views, intrinsics, an empty-box scene and its marker calibration (rendered once)."""
    truth = table_camera_truth(width_px=WIDTH_PX, height_px=HEIGHT_PX)
    renderer = SceneRenderer(truth, supersample=2)
    poses = board_view_poses(DEFAULT_BOARD, truth, count=BOARD_VIEWS, seed=3)
    images = render_board_views(renderer, DEFAULT_BOARD, poses, seed=4)
    intr = calibrate_intrinsics(images, DEFAULT_BOARD)
    scene = TableScene(
        SMALL_LAYOUT, CornerMarkers(), truth, table_camera_pose(SMALL_LAYOUT), seed=5, renderer=renderer
    )
    empty = scene.frame(noise_seed=1)
    empty_2 = scene.frame(noise_seed=2)
    cal = calibrate_table(
        empty,
        table_id="t-small",
        intrinsics=intr.intrinsics,
        intrinsics_rms_px=intr.rms_px,
        layout=SMALL_LAYOUT,
        markers=CornerMarkers(),
        felt_frames=[empty_2],
    )
    return Scenes(truth, DEFAULT_BOARD, images, intr, scene, empty, empty_2, cal)
