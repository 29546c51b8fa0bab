"""Camera-moved detection: 1 cm or 1 degree is flagged; noise and light changes are not; unknown is said."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from calibration.camera import CameraPose
from calibration.errors import ResolutionMismatchError
from calibration.markers import CornerMarkers
from calibration.moved import check_camera
from calibration.selftest.scenes import Finish, camera_variants, displaced
from calibration.table import TableCalibration, box_corners_mm, calibrate_table
from tests.calibration.conftest import SMALL_LAYOUT, Scenes

# The trial names, for test ids (the poses are built from the scene's camera inside the test).
NAMES = [v[0] for v in camera_variants(CameraPose(rvec=(0.0, 0.0, 0.0), tvec=(0.0, 0.0, 1.0)))]


@pytest.mark.parametrize("index", range(len(NAMES)), ids=NAMES)
def test_camera_variants(scenes: Scenes, index: int) -> None:
    name, _file, moved, pose, finish = camera_variants(scenes.scene.pose)[index]
    frame = scenes.scene.frame(pose=pose, fx=finish, noise_seed=50 + index)
    result = check_camera(scenes.cal, frame)
    assert result.status == ("moved" if moved else "ok"), (name, result)
    assert result.markers_found == 4
    if moved:
        assert result.max_shift_px is not None and result.max_shift_px > 2 * result.threshold_px
    else:
        assert result.max_shift_px is not None and result.max_shift_px < result.threshold_px / 2


def test_two_markers_hidden_still_decides(scenes: Scenes) -> None:
    frame = _cover(scenes, scenes.scene.frame(noise_seed=60), ids=(0, 1))
    result = check_camera(scenes.cal, frame)
    assert result.status == "ok" and result.markers_found == 2


def test_three_markers_hidden_falls_back_to_the_reference_picture(scenes: Scenes) -> None:
    frame = _cover(scenes, scenes.scene.frame(noise_seed=61), ids=(0, 1, 2))
    result = check_camera(scenes.cal, frame)
    assert (result.status, result.method, result.markers_found) == ("ok", "image", 1)
    assert "only 1 of 4" in result.reason
    moved_pose = displaced(scenes.scene.pose, shift_mm=(10.0, 0.0, 0.0))
    frame = _cover(scenes, scenes.scene.frame(pose=moved_pose, noise_seed=63), ids=(0, 1, 2))
    result = check_camera(scenes.cal, frame)
    assert (result.status, result.method) == ("moved", "image")


@pytest.mark.parametrize("index", [1, 4, 7, 8], ids=[NAMES[i] for i in (1, 4, 7, 8)])
def test_hand_calibrated_table_is_checked_against_its_reference_picture(
    scenes: Scenes, by_hand: TableCalibration, index: int
) -> None:
    name, _file, moved, pose, finish = camera_variants(scenes.scene.pose)[index]
    result = check_camera(by_hand, scenes.scene.frame(pose=pose, fx=finish, noise_seed=80 + index))
    assert result.method == "image" and "hand-given" in result.reason
    assert result.status == ("moved" if moved else "ok"), (name, result)


def test_dice_in_the_box_do_not_read_as_motion(scenes: Scenes, by_hand: TableCalibration) -> None:
    frame = scenes.scene.frame(dice=[(100.0, 100.0, 3), (200.0, 160.0, 5), (150.0, 200.0, 6)], noise_seed=64)
    result = check_camera(by_hand, frame)
    assert result.status == "ok", result


def test_blocked_view_is_unknown_not_ok(by_hand: TableCalibration) -> None:
    result = check_camera(by_hand, np.full((360, 640, 3), 15, np.uint8))
    assert result.status == "unknown" and result.method == "none" and not result.moved
    assert "look at the camera" in result.reason


def test_without_markers_or_reference_picture_is_unknown(scenes: Scenes, by_hand: TableCalibration) -> None:
    bare = replace(by_hand, reference_picture=None)
    result = check_camera(bare, scenes.empty)
    assert result.status == "unknown" and "no reference picture" in result.reason


@pytest.fixture(scope="module")
def by_hand(scenes: Scenes) -> TableCalibration:
    """The small scene calibrated from four hand-given corners (clicked to within 0.3 px)."""
    corners = scenes.scene.camera.project(np.c_[box_corners_mm(SMALL_LAYOUT), np.zeros(4)])
    return calibrate_table(
        scenes.empty,
        table_id="hand",
        intrinsics=scenes.intrinsics.intrinsics,
        intrinsics_rms_px=0.1,
        layout=SMALL_LAYOUT,
        corners_px=corners + np.array([[0.2, -0.3], [-0.2, 0.1], [0.3, 0.2], [-0.1, -0.3]]),
    )


def test_frame_of_another_resolution(scenes: Scenes) -> None:
    with pytest.raises(ResolutionMismatchError):
        check_camera(scenes.cal, np.zeros((100, 200, 3), np.uint8))


def test_light_alone_never_moves_markers(scenes: Scenes) -> None:
    frame = scenes.scene.frame(fx=Finish(gain=0.6, offset=20.0, gradient=0.4, noise_sigma=5.0), noise_seed=62)
    assert check_camera(scenes.cal, frame).status == "ok"


def _cover(scenes: Scenes, frame: np.ndarray, *, ids: tuple[int, ...]) -> np.ndarray:
    out = frame.copy()
    for marker_id, quad_mm in CornerMarkers().corners_mm(SMALL_LAYOUT).items():
        if marker_id not in ids:
            continue
        quad = scenes.scene.camera.project(np.c_[quad_mm, np.zeros(4)])
        x0, y0 = np.floor(quad.min(axis=0)).astype(int) - 3
        x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + 3
        out[y0:y1, x0:x1] = (20, 20, 20)  # a hand over the marker
    return out
