"""Camera-moved detection: 1 cm or 1 degree is flagged; noise and light changes are not; unknown is said."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.camera import CameraPose
from calibration.errors import ResolutionMismatchError
from calibration.markers import CornerMarkers
from calibration.moved import check_camera
from calibration.table import box_corners_mm, calibrate_table
from datasets.calib_scenes import Finish, camera_variants
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


def test_three_markers_hidden_is_unknown(scenes: Scenes) -> None:
    frame = _cover(scenes, scenes.scene.frame(noise_seed=61), ids=(0, 1, 2))
    result = check_camera(scenes.cal, frame)
    assert result.status == "unknown" and not result.moved
    assert "only 1 of 4" in result.reason


def test_manual_calibration_cannot_tell(scenes: Scenes) -> None:
    corners = scenes.scene.camera.project(np.c_[box_corners_mm(SMALL_LAYOUT), np.zeros(4)])
    cal = calibrate_table(
        scenes.empty,
        table_id="hand",
        intrinsics=scenes.intrinsics.intrinsics,
        intrinsics_rms_px=0.1,
        layout=SMALL_LAYOUT,
        corners_px=corners,
    )
    result = check_camera(cal, scenes.empty)
    assert result.status == "unknown" and "hand-given" in result.reason


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
