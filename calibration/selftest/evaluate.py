"""`throwbox calibrate selftest`: calibrate the synthetic scenes of `calibration.selftest.scenes`, rendered
from a known camera, and measure every step against the truth (the targets of issue 6).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import CameraIntrinsics
from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.selftest.scenes import (
    DEFAULT_BOARD,
    SceneRenderer,
    TableScene,
    board_view_poses,
    camera_variants,
    render_board_views,
    table_camera_pose,
    table_camera_truth,
)

if TYPE_CHECKING:
    from calibration.table import TableCalibration

FloatArray = NDArray[np.float64]
UInt8Image = NDArray[np.uint8]


@dataclass(frozen=True)
class MoveTrial:
    """One camera-moved trial: what was done to the camera, whether it should be flagged, what was found."""

    name: str
    expect_moved: bool
    status: str
    method: str  # "markers" (marker calibration) or "image" (hand-corner calibration, reference picture)
    max_shift_px: float | None

    @property
    def correct(self) -> bool:
        """Flagged exactly when the camera really moved."""
        return (self.status == "moved") == self.expect_moved and self.status != "unknown"


# (calibration, dice frame, empty-box frames, dice in the frame) -> (verdict, faces read)
ReadDice = Callable[["TableCalibration", UInt8Image, list[UInt8Image], int], tuple[str, tuple[int, ...]]]


@dataclass(frozen=True)
class CalibrationEvaluation:
    """Calibration measured against the scene truth (see `evaluate_calibration`)."""

    resolution_wh: tuple[int, int]
    views_used: int
    intrinsics_rms_px: float
    fx_error_pct: float
    fy_error_pct: float
    principal_point_error_px: float
    homography_max_mm: float
    homography_rms_mm: float
    layout_corner_max_mm: float
    layout_boxes_correct: int
    die_scale_max_deviation_pct: float
    felt_score_p99: float
    die_score_median: float
    moves: tuple[MoveTrial, ...]
    table_seconds: float
    # The dice frame read through the calibration by the reader (`read_dice` of `evaluate_calibration`):
    # the faces rendered, the verdict and faces read; None where it was not read.
    dice_rendered: tuple[int, ...] = ()
    dice_read_verdict: str | None = None
    dice_read: tuple[int, ...] | None = None

    # Targets from issue 6.
    FOCAL_TARGET_PCT: ClassVar[float] = 1.0
    HOMOGRAPHY_TARGET_MM: ClassVar[float] = 1.0
    LAYOUT_TARGET_MM: ClassVar[float] = 2.0
    DIE_SCALE_TARGET_PCT: ClassVar[float] = 8.0

    @property
    def checks(self) -> dict[str, bool]:
        """Each target and whether it was met."""
        return {
            "focal length within 1 %": max(abs(self.fx_error_pct), abs(self.fy_error_pct))
            < self.FOCAL_TARGET_PCT,
            "homography error under 1 mm across the box": self.homography_max_mm < self.HOMOGRAPHY_TARGET_MM,
            "layout boxes located within 2 mm": self.layout_corner_max_mm < self.LAYOUT_TARGET_MM,
            "every layout box centre attributed to its box": self.layout_boxes_correct == 6,
            "die scale within 8 % of measured dice": self.die_scale_max_deviation_pct
            < self.DIE_SCALE_TARGET_PCT,
            "dice score far above felt": self.die_score_median > 3.0 * self.felt_score_p99,
            "camera moves flagged, unmoved camera not flagged": all(m.correct for m in self.moves),
        } | (
            {}
            if self.dice_read is None
            else {
                # Valid with every face rendered, or left to a person for faces the reader doubts (its
                # second opinions, docs/history/never-sure-2.md) with every face it gave one rendered: the
                # calibration placed the dice and left the markers and print out either way.
                "dice frame read with the faces rendered, none wrong (markers and print left out)": (
                    sorted(self.dice_read) == sorted(self.dice_rendered)
                    if self.dice_read_verdict == "valid"
                    else self.dice_read_verdict == "no_decision"
                    and _within(self.dice_read, self.dice_rendered)
                )
            }
        )

    @property
    def passed(self) -> bool:
        """All targets met."""
        return all(self.checks.values())


def _measure_die(
    frame: UInt8Image, around_px: FloatArray, *, half_px: int
) -> tuple[tuple[float, float], float]:
    """Top-face centre and edge (px, square root of its area) of the bright die near `around_px`.

    Uses image evidence only; the threshold sits half-way between felt and die grey, where a symmetric blur
    leaves the edge in place, and pips are filled in.
    """
    gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    u, v = (round(float(c)) for c in around_px)
    x0, y0 = max(0, u - half_px), max(0, v - half_px)
    roi = gray[y0 : v + half_px, x0 : u + half_px]
    felt, die = float(np.median(roi)), float(np.percentile(roi, 99))
    _t, binary = cv2.threshold(roi, (felt + die) / 2.0, 255, cv2.THRESH_BINARY)
    contours, _h = cv2.findContours(binary, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        raise RuntimeError("die not found in its own test frame")
    filled = np.zeros_like(binary)
    cv2.drawContours(filled, [max(contours, key=cv2.contourArea)], -1, 255, thickness=cv2.FILLED)
    m = cv2.moments(filled, binaryImage=True)
    centre = (m["m10"] / m["m00"] + x0, m["m01"] / m["m00"] + y0)
    return centre, float(np.sqrt(m["m00"]))


def _plane_errors(cal: TableCalibration, scene: TableScene) -> tuple[FloatArray, FloatArray, int]:
    """The calibration's plane against the truth: the error (mm) at every 10 mm of the box, at every layout
    box corner, and how many layout box centres it attributes to their box."""
    layout = scene.layout
    xs, ys = np.meshgrid(
        np.arange(0.0, layout.width_mm + 1e-9, 10.0), np.arange(0.0, layout.depth_mm + 1e-9, 10.0)
    )
    grid_mm = np.stack([xs.ravel(), ys.ravel()], axis=1)
    grid_px = scene.camera.project(np.concatenate([grid_mm, np.zeros((grid_mm.shape[0], 1))], axis=1))
    grid_err = np.linalg.norm(cal.pixel_to_mm(grid_px) - grid_mm, axis=1)

    boxes = layout.layout_boxes()
    corners_mm = np.array([c for rect in boxes.values() for c in rect.corners])
    corners_px = scene.camera.project(
        np.concatenate([corners_mm, np.zeros((corners_mm.shape[0], 1))], axis=1)
    )
    layout_err = np.linalg.norm(cal.pixel_to_mm(corners_px) - corners_mm, axis=1)
    correct = 0
    for face, rect in boxes.items():
        u, v = scene.camera.project(np.array([[*rect.centre, 0.0]]))[0]
        correct += int(cal.layout_box_at_pixel(float(u), float(v)) == face)
    return grid_err, layout_err, correct


def _die_scale_errors(
    cal: TableCalibration,
    scene: TableScene,
    dice_frame: UInt8Image,
    dice: Sequence[tuple[float, float, int]],
) -> tuple[list[float], list[float]]:
    """Each rendered die measured against the calibration's die scale: its deviation (%) and its not-felt
    score."""
    from calibration.die_scale import check_die_scale

    layout = scene.layout
    deviations = []
    die_scores = []
    score = cal.not_felt_score(dice_frame)
    for x, y, _face in dice:
        top_px = scene.camera.project(np.array([[x, y, layout.die_edge_mm]]))[0]
        half = round(2.0 * cal.die_edge_px_at(x, y))
        centre, edge = _measure_die(dice_frame, top_px, half_px=half)
        chk = check_die_scale(
            cal.camera, centre_px=centre, measured_edge_px=edge, die_edge_mm=layout.die_edge_mm
        )
        deviations.append(abs(chk.ratio - 1.0) * 100.0)
        die_scores.append(float(score[round(centre[1]), round(centre[0])]))
    return deviations, die_scores


def _hand_calibration(
    frame: UInt8Image, scene: TableScene, *, intrinsics: CameraIntrinsics, intrinsics_rms_px: float, seed: int
) -> TableCalibration:
    """The table calibrated from four hand-given corners (clicked to within 0.3 px), whose camera-moved check
    has no markers to go by and aligns the frame to the stored reference picture instead."""
    from calibration.table import box_corners_mm, calibrate_table

    clicks = np.random.default_rng(seed + 20).uniform(-0.3, 0.3, (4, 2))
    corners_mm = np.concatenate([box_corners_mm(scene.layout), np.zeros((4, 1))], axis=1)
    return calibrate_table(
        frame,
        table_id="selftest-hand",
        intrinsics=intrinsics,
        intrinsics_rms_px=intrinsics_rms_px,
        layout=scene.layout,
        corners_px=scene.camera.project(corners_mm) + clicks,
    )


def _move_trials(
    calibrations: Sequence[TableCalibration],
    scene: TableScene,
    *,
    seed: int,
    save: Callable[[str, UInt8Image], None],
) -> list[MoveTrial]:
    """Each camera variant (`camera_variants`) rendered and checked against each calibration."""
    from calibration.moved import check_camera

    moves = []
    for i, (name, file_name, expect, pose, fin) in enumerate(camera_variants(scene.pose)):
        moved_frame = scene.frame(pose=pose, fx=fin, noise_seed=seed + 100 + i)
        save(file_name, moved_frame)
        for which in calibrations:
            check = check_camera(which, moved_frame)
            moves.append(MoveTrial(name, expect, check.status, check.method, check.max_shift_px))
    return moves


def _write_truth(path: Path, scene: TableScene, dice: Sequence[tuple[float, float, int]]) -> None:
    """The scenes' truth as JSON beside the rendered images (to run them through the commands by hand)."""
    from calibration.table import intrinsics_to_dict

    truth_doc = {
        "camera": intrinsics_to_dict(scene.intrinsics),
        "pose": {"rvec": list(scene.pose.rvec), "tvec": list(scene.pose.tvec)},
        "board": DEFAULT_BOARD.describe(),
        "layout": asdict(scene.layout),
        "markers": asdict(scene.markers),
        "dice": [{"x_mm": x, "y_mm": y, "face": f} for x, y, f in dice],
    }
    path.write_text(json.dumps(truth_doc, indent=1) + "\n", encoding="utf-8")


def evaluate_calibration(
    *,
    seed: int = 0,
    views: int = 12,
    width_px: int = 1280,
    height_px: int = 720,
    supersample: int = 2,
    log: Callable[[str], None] | None = None,
    out_dir: Path | None = None,
    layout: ThrowBoxLayout | None = None,
    read_dice: ReadDice | None = None,
) -> CalibrationEvaluation:
    """Render board views and throw-box frames from a known camera, calibrate, and compare with the truth.

    With `out_dir`, the rendered images are written there (`board_NN.png`, `table_*.png`) with
    `truth.json`, so the same scenes can be run through the `throwbox calibrate` commands by hand.
    `read_dice(calibration, dice_frame, empty_frames, n_dice)` -> (verdict, faces) reads the dice frame
    through the calibration (the reader lives in vision/, which this module does not import), and adds
    its check.
    """
    from calibration.intrinsics import calibrate_intrinsics
    from calibration.table import calibrate_table

    def say(msg: str) -> None:
        if log is not None:
            log(msg)

    truth = table_camera_truth(width_px=width_px, height_px=height_px)
    say(f"rendering {views} ChArUco views ({DEFAULT_BOARD.describe()}) at {width_px}x{height_px}")
    renderer = SceneRenderer(truth, supersample=supersample)
    poses = board_view_poses(DEFAULT_BOARD, truth, count=views, seed=seed)
    images = render_board_views(renderer, DEFAULT_BOARD, poses, seed=seed + 1)

    def save(name: str, image: UInt8Image) -> None:
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            if not cv2.imwrite(str(out_dir / name), image):
                raise OSError(f"cannot write {out_dir / name}")

    for i, image in enumerate(images):
        save(f"board_{i:02d}.png", image)
    say("calibrating intrinsics")
    intr = calibrate_intrinsics(images, DEFAULT_BOARD)
    est = intr.intrinsics

    layout = layout or ThrowBoxLayout()
    markers = CornerMarkers()
    scene = TableScene(
        layout,
        markers,
        truth,
        table_camera_pose(layout),
        seed=seed,
        supersample=supersample,
        renderer=renderer,
    )
    say("rendering the empty throw box and calibrating the table")
    frame = scene.frame(noise_seed=seed + 10)
    felt_frames = [scene.frame(noise_seed=seed + 11)]
    save("table_empty.png", frame)
    save("table_empty_2.png", felt_frames[0])
    started = time.perf_counter()
    cal = calibrate_table(
        frame,
        table_id="selftest",
        intrinsics=est,
        intrinsics_rms_px=intr.rms_px,
        layout=layout,
        markers=markers,
        felt_frames=felt_frames,
    )
    table_seconds = time.perf_counter() - started

    grid_err, layout_err, correct = _plane_errors(cal, scene)

    say("measuring dice against the die scale")
    area = layout.throw_area
    dice = [
        (area.x0 + fx * (area.x1 - area.x0), area.y0 + fy * (area.y1 - area.y0), face)
        for fx, fy, face in ((0.2, 0.25, 5), (0.5, 0.5, 2), (0.8, 0.72, 6), (0.28, 0.78, 1), (0.75, 0.2, 3))
    ]
    dice_frame = scene.frame(dice=dice, noise_seed=seed + 12)
    save("table_dice.png", dice_frame)
    deviations, die_scores = _die_scale_errors(cal, scene, dice_frame, dice)

    read: tuple[str, tuple[int, ...]] | None = None
    if read_dice is not None:
        say("reading the dice frame through the calibration")
        read = read_dice(cal, dice_frame, [frame, *felt_frames], len(dice))

    say("camera-moved trials")
    by_hand = _hand_calibration(frame, scene, intrinsics=est, intrinsics_rms_px=intr.rms_px, seed=seed)
    moves = _move_trials((cal, by_hand), scene, seed=seed, save=save)
    if out_dir is not None:
        _write_truth(out_dir / "truth.json", scene, dice)

    return CalibrationEvaluation(
        resolution_wh=truth.resolution_wh,
        views_used=intr.views_used,
        intrinsics_rms_px=intr.rms_px,
        fx_error_pct=(est.fx / truth.fx - 1.0) * 100.0,
        fy_error_pct=(est.fy / truth.fy - 1.0) * 100.0,
        principal_point_error_px=float(np.hypot(est.cx - truth.cx, est.cy - truth.cy)),
        homography_max_mm=float(grid_err.max()),
        homography_rms_mm=float(np.sqrt(np.mean(grid_err**2))),
        layout_corner_max_mm=float(layout_err.max()),
        layout_boxes_correct=correct,
        die_scale_max_deviation_pct=float(max(deviations)),
        felt_score_p99=cal.felt.felt_score_p99 if cal.felt is not None else float("nan"),
        die_score_median=float(np.median(die_scores)),
        moves=tuple(moves),
        table_seconds=table_seconds,
        dice_rendered=tuple(f for _, _, f in dice),
        dice_read_verdict=None if read is None else read[0],
        dice_read=None if read is None else read[1],
    )


def _within(read: Sequence[int], rendered: Sequence[int]) -> bool:
    """Is every face read one of the faces rendered, as many times at most?"""
    left = list(rendered)
    for face in read:
        if face not in left:
            return False
        left.remove(face)
    return True
