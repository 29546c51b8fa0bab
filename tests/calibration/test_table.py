"""Table calibration from corner markers against the scene truth: plane, layout boxes, die scale, felt."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.camera import Camera
from calibration.die_scale import check_die_scale, die_edge_px
from calibration.errors import CalibrationRefusedError, MarkersNotFoundError, ResolutionMismatchError
from calibration.layout import LAYOUT_ORDER
from calibration.markers import CornerMarkers
from calibration.table import calibrate_table
from tests.calibration.conftest import SMALL_LAYOUT, Scenes


def _truth_px(cam: Camera, mm: np.ndarray, z_mm: float = 0.0) -> np.ndarray:
    return cam.project(np.c_[mm, np.full(len(mm), z_mm)])


def test_homography_error_under_one_millimetre_across_the_box(scenes: Scenes) -> None:
    xs, ys = np.meshgrid(np.arange(0.0, 301.0, 10.0), np.arange(0.0, 226.0, 10.0))
    grid = np.c_[xs.ravel(), ys.ravel()]
    err = np.linalg.norm(scenes.cal.pixel_to_mm(_truth_px(scenes.scene.camera, grid)) - grid, axis=1)
    assert err.max() < 1.0


def test_layout_boxes_located_within_two_millimetres(scenes: Scenes) -> None:
    boxes = SMALL_LAYOUT.layout_boxes()
    corners = np.array([c for rect in boxes.values() for c in rect.corners])
    err = np.linalg.norm(scenes.cal.pixel_to_mm(_truth_px(scenes.scene.camera, corners)) - corners, axis=1)
    assert err.max() < 2.0


def test_593_1_b_4_layout_box_of_each_pixel(scenes: Scenes) -> None:
    """Ace at the dealer's left ... Two at the dealer's right; a pixel between boxes is in none."""
    cam = scenes.scene.camera
    faces = []
    for face, rect in SMALL_LAYOUT.layout_boxes().items():
        u, v = _truth_px(cam, np.array([rect.centre]))[0]
        faces.append(scenes.cal.layout_box_at_pixel(float(u), float(v)))
        assert faces[-1] == face
    assert tuple(faces) == LAYOUT_ORDER
    # In the image the dealer is at the bottom: Ace's box is left of Two's.
    ace = _truth_px(cam, np.array([SMALL_LAYOUT.layout_boxes()[1].centre]))[0]
    two = _truth_px(cam, np.array([SMALL_LAYOUT.layout_boxes()[2].centre]))[0]
    assert ace[0] < two[0]
    gap = np.array([[SMALL_LAYOUT.layout_boxes()[1].x1 + SMALL_LAYOUT.strip_margin_mm / 2, 30.0]])
    u, v = _truth_px(cam, gap)[0]
    assert scenes.cal.layout_box_at_pixel(float(u), float(v)) is None
    # The throw area is in no layout box.
    u, v = _truth_px(cam, np.array([[150.0, 180.0]]))[0]
    assert scenes.cal.layout_box_at_pixel(float(u), float(v)) is None


def test_layout_box_of_a_die_top_uses_its_height(scenes: Scenes) -> None:
    """A die resting on the edge of the Six box: its top-face centre pixel, read at die height, is in Six."""
    rect = SMALL_LAYOUT.layout_boxes()[6]
    centre = np.array([[rect.x0 + 12.0, rect.y1 - 12.0]])
    u, v = _truth_px(scenes.scene.camera, centre, z_mm=SMALL_LAYOUT.die_edge_mm)[0]
    assert scenes.cal.layout_box_at_pixel(float(u), float(v), height_mm=SMALL_LAYOUT.die_edge_mm) == 6


def test_die_scale_matches_truth_and_varies_with_perspective(scenes: Scenes) -> None:
    cam = scenes.scene.camera
    near = scenes.cal.die_edge_px_at(150.0, 20.0)
    far = scenes.cal.die_edge_px_at(150.0, 205.0)
    assert near > far  # the camera is set back toward the dealer
    for x, y in [(30.0, 60.0), (150.0, 112.0), (270.0, 200.0)]:
        truth = die_edge_px(cam, x_mm=x, y_mm=y, die_edge_mm=SMALL_LAYOUT.die_edge_mm)
        assert abs(scenes.cal.die_edge_px_at(x, y) / truth - 1.0) < 0.01


def test_die_scale_check_against_a_measured_die(scenes: Scenes) -> None:
    cam = scenes.scene.camera
    e = SMALL_LAYOUT.die_edge_mm
    centre = _truth_px(cam, np.array([[150.0, 150.0]]), z_mm=e)[0]
    truth = die_edge_px(cam, x_mm=150.0, y_mm=150.0, die_edge_mm=e)
    good = check_die_scale(
        scenes.cal.camera, centre_px=(centre[0], centre[1]), measured_edge_px=truth, die_edge_mm=e
    )
    assert good.ok
    assert abs(good.x_mm - 150.0) < 1.0 and abs(good.y_mm - 150.0) < 1.0
    # A die 20 % too big is not what the calibration expects (wrong zoom, or not a die).
    big = check_die_scale(
        scenes.cal.camera, centre_px=(centre[0], centre[1]), measured_edge_px=truth * 1.2, die_edge_mm=e
    )
    assert not big.ok
    with pytest.raises(ValueError, match="positive"):
        check_die_scale(scenes.cal.camera, centre_px=(1.0, 1.0), measured_edge_px=0.0, die_edge_mm=e)


def test_felt_model_separates_dice_from_felt(scenes: Scenes) -> None:
    frame = scenes.scene.frame(dice=[(150.0, 150.0, 4)], noise_seed=7)
    score = scenes.cal.not_felt_score(frame)
    u, v = _truth_px(scenes.scene.camera, np.array([[150.0, 150.0]]), z_mm=SMALL_LAYOUT.die_edge_mm)[0]
    felt_u, felt_v = _truth_px(scenes.scene.camera, np.array([[80.0, 150.0]]))[0]
    assert scenes.cal.felt is not None
    p99 = scenes.cal.felt.felt_score_p99
    assert score[round(v), round(u)] > 5 * p99
    assert score[round(felt_v), round(felt_u)] < 2 * p99
    # Felt pixels of another empty frame stay low overall.
    empty_scores = scenes.cal.not_felt_score(scenes.empty_2)[scenes.cal.felt_mask() > 0]
    assert np.quantile(empty_scores, 0.99) < 1.5 * p99


def test_felt_score_needs_the_calibrated_resolution(scenes: Scenes) -> None:
    with pytest.raises(ResolutionMismatchError):
        scenes.cal.not_felt_score(np.zeros((720, 1280, 3), np.uint8))


def test_missing_marker_is_named(scenes: Scenes) -> None:
    frame = scenes.empty.copy()
    quad = _truth_px(scenes.scene.camera, CornerMarkers().corners_mm(SMALL_LAYOUT)[2])
    x0, y0 = np.floor(quad.min(axis=0)).astype(int) - 3
    x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + 3
    frame[y0:y1, x0:x1] = (30, 100, 40)  # a chip lying on marker 2
    with pytest.raises(MarkersNotFoundError) as info:
        calibrate_table(
            frame,
            table_id="x",
            intrinsics=scenes.intrinsics.intrinsics,
            intrinsics_rms_px=0.1,
            layout=SMALL_LAYOUT,
            markers=CornerMarkers(),
        )
    assert info.value.missing_ids == (2,)


def test_frame_of_another_resolution_is_refused(scenes: Scenes) -> None:
    with pytest.raises(ResolutionMismatchError, match="1280x720"):
        calibrate_table(
            np.zeros((720, 1280, 3), np.uint8),
            table_id="x",
            intrinsics=scenes.intrinsics.intrinsics,
            intrinsics_rms_px=0.1,
            layout=SMALL_LAYOUT,
            markers=CornerMarkers(),
        )


@pytest.mark.parametrize(
    ("markers", "layout_change"),
    [
        # markers are 30 mm but 40 mm was given
        (CornerMarkers(side_mm=40.0), {}),
        # the box is 300 mm wide but 330 mm was given
        (CornerMarkers(), {"width_mm": 330.0}),
    ],
)
def test_settings_that_do_not_match_the_table_are_refused(
    scenes: Scenes, markers: CornerMarkers, layout_change: dict[str, float]
) -> None:
    from dataclasses import replace

    with pytest.raises(CalibrationRefusedError) as info:
        calibrate_table(
            scenes.empty,
            table_id="x",
            intrinsics=scenes.intrinsics.intrinsics,
            intrinsics_rms_px=0.1,
            layout=replace(SMALL_LAYOUT, **layout_change),
            markers=markers,
        )
    assert info.value.reason == "plane_fit_error"


def test_felt_frame_of_another_resolution_is_refused(scenes: Scenes) -> None:
    with pytest.raises(ResolutionMismatchError, match="felt frame 1"):
        calibrate_table(
            scenes.empty,
            table_id="x",
            intrinsics=scenes.intrinsics.intrinsics,
            intrinsics_rms_px=0.1,
            layout=SMALL_LAYOUT,
            markers=CornerMarkers(),
            felt_frames=[np.zeros((720, 1280, 3), np.uint8)],
        )
