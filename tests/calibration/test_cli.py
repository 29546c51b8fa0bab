"""`throwbox calibrate ...` end to end on rendered files: intrinsics, table, overlay, check, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from api.cli import app
from calibration.selftest.scenes import displaced
from calibration.table import TableCalibration
from tests.calibration.conftest import Scenes
from vision.judge.config import JudgeConfig

BOARD = "charuco:7x5:40:30:DICT_5X5_100"
LAYOUT_ARGS = [
    "--width-mm", "300", "--depth-mm", "225", "--wall-height-mm", "40",
    "--strip-depth-mm", "40", "--strip-margin-mm", "8",
]  # fmt: skip


@pytest.fixture(scope="module")
def files(scenes: Scenes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("calib-cli")
    for i, img in enumerate(scenes.board_images):
        cv2.imwrite(str(root / f"board_{i}.png"), img)
    cv2.imwrite(str(root / "empty.png"), scenes.empty)
    cv2.imwrite(str(root / "empty_2.png"), scenes.empty_2)
    cv2.imwrite(str(root / "unmoved.png"), scenes.scene.frame(noise_seed=70))
    moved = scenes.scene.frame(pose=displaced(scenes.scene.pose, shift_mm=(10.0, 0.0, 0.0)), noise_seed=71)
    cv2.imwrite(str(root / "moved.png"), moved)
    cv2.imwrite(str(root / "big.png"), np.zeros((720, 1280, 3), np.uint8))
    (root / "not_an_image.png").write_bytes(b"hello")
    return root


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_full_flow(files: Path, scenes: Scenes) -> None:
    data = files / "data"
    boards = [str(p) for p in sorted(files.glob("board_*.png"))]
    code, out = _run(
        "calibrate",
        "intrinsics",
        *boards,
        "--board",
        BOARD,
        "--table",
        "t1",
        "--data-dir",
        str(data),
        "--json",
    )
    assert code == 0, out
    doc = json.loads(out)
    assert doc["views_used"] == len(boards) and doc["rms_px"] < 0.3
    assert (data / "t1.intrinsics.json").is_file()

    overlay = files / "overlay.png"
    code, out = _run(
        "calibrate", "table", "--table", "t1", str(files / "empty.png"), str(files / "empty_2.png"),
        "--data-dir", str(data), "--overlay", str(overlay), "--json", *LAYOUT_ARGS,
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    assert doc["source"] == "markers" and doc["resolution_wh"] == [640, 360]
    stored = TableCalibration.from_dict(json.loads((data / "t1.json").read_text())["body"])
    # What the detector took for dice (none at this size), and each corner marker's look, kept and decoded.
    assert doc["table_marks"] == len(stored.marks) >= 10
    assert sorted(m.marker_id for m in stored.marks if m.marker_id is not None) == [0, 1, 2, 3]
    assert sorted(m.layout_face for m in stored.marks if m.layout_face is not None) == [1, 2, 3, 4, 5, 6]
    assert all(m.patch().size > 0 for m in stored.marks)
    assert (stored.marks_detector or "").startswith("detect_")  # which detector found them, to tell staleness
    # The camera's lean, measured from the markers, as the scene was rendered (within a degree).
    assert doc["camera_tilt_deg"] == pytest.approx(scenes.scene.pose.tilt_deg, abs=1.0)
    limit = JudgeConfig().max_cocked_camera_tilt_deg
    assert ("camera_advice" in doc) == (scenes.scene.pose.tilt_deg > limit)
    written = cv2.imread(str(overlay))
    assert written is not None and written.shape == (360, 640, 3)
    original = cv2.imread(str(files / "empty.png"))
    assert original is not None
    assert np.abs(written.astype(int) - original.astype(int)).sum() > 0  # something was drawn

    # The same calibration, as a person reads it: the tilt line, with the advice only past the limit.
    code, out = _run(
        "calibrate", "table", "--table", "t1", str(files / "empty.png"), "--data-dir", str(data),
        "--no-marks", *LAYOUT_ARGS,
    )  # fmt: skip
    assert code == 0, out
    assert "table marks (what the die detector takes for dice on the empty box): 0 (not looked for" in out
    assert f"camera tilt {doc['camera_tilt_deg']:.1f} deg from straight down" in out
    assert ("mount the camera over the box" in out) == (scenes.scene.pose.tilt_deg > limit)

    code, out = _run(
        "calibrate", "check", "--table", "t1", str(files / "unmoved.png"), "--data-dir", str(data)
    )
    assert code == 0 and "OK" in out, out
    code, out = _run(
        "calibrate", "check", "--table", "t1", str(files / "moved.png"), "--data-dir", str(data), "--json"
    )
    assert code == 3, out
    assert json.loads(out)["status"] == "moved"
    code, out = _run(
        "calibrate", "check", "--table", "t1", str(files / "board_0.png"), "--data-dir", str(data)
    )
    assert code == 4 and "UNKNOWN" in out, out

    code, out = _run(
        "calibrate", "overlay", "--table", "t1", str(files / "unmoved.png"), "--out", str(files / "o2.jpg"),
        "--data-dir", str(data),
    )  # fmt: skip
    assert code == 0 and (files / "o2.jpg").is_file(), out

    code, out = _run(
        "calibrate", "rectify", "--table", "t1", str(files / "unmoved.png"), "--out", str(files / "top.png"),
        "--data-dir", str(data), "--px-per-mm", "1",
    )  # fmt: skip
    assert code == 0, out
    top = cv2.imread(str(files / "top.png"))
    assert top is not None and top.shape == (225, 300, 3)

    # A frame from another camera resolution is refused with the reason.
    code, out = _run("calibrate", "check", "--table", "t1", str(files / "big.png"), "--data-dir", str(data))
    assert code == 2 and "1280x720" in out, out


@pytest.mark.parametrize(
    ("args", "match"),
    [
        # no board in these images
        (["intrinsics", "empty.png", "empty_2.png", "--board", BOARD, "--out", "x.json"], "found in 0 of 2"),
        # malformed board
        (["intrinsics", "board_0.png", "--board", "charuco:7x5", "--out", "x.json"], "cannot parse board"),
        # neither --table nor --out
        (["intrinsics", "board_0.png", "--board", BOARD], "exactly one of --table"),
        # unreadable image
        (["intrinsics", "not_an_image.png", "--board", BOARD, "--out", "x.json"], "not a readable image"),
        # missing image
        (["intrinsics", "nope.png", "--board", BOARD, "--out", "x.json"], "no such file"),
        # table without intrinsics
        (["table", "--table", "t9", "empty.png", "--data-dir", "nodata"], "no calibration file"),
        # check of an uncalibrated table
        (["check", "--table", "t9", "empty.png", "--data-dir", "nodata"], "no calibration file"),
        # unsafe table id
        (["check", "--table", "../x", "empty.png"], "invalid table id"),
        # malformed hand corners
        (["table", "--table", "t9", "empty.png", "--corners", "1,2;3"], "four 'x,y' points"),
    ],
)
def test_refusals_exit_2_with_reason(
    files: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], match: str
) -> None:
    monkeypatch.chdir(files)
    code, out = _run("calibrate", *args)
    assert code == 2, out
    assert match in out


def test_board_printout(tmp_path: Path) -> None:
    out = tmp_path / "board.png"
    code, text = _run("calibrate", "board", "--out", str(out), "--px-per-mm", "2")
    assert code == 0, text
    img = cv2.imread(str(out), cv2.IMREAD_GRAYSCALE)
    assert img is not None and img.shape == (400, 560)


@pytest.mark.parametrize(("tilt", "advised"), [(0.0, False), (10.0, False), (10.01, True), (40.0, True)])
def test_an_oblique_camera_is_told_what_it_costs(tilt: float, advised: bool) -> None:
    from api.cli.calibrate import oblique_advice

    advice = oblique_advice(tilt)
    assert (advice is not None) == advised
    if advice is not None:
        assert "cocked" in advice and "straight above" in advice


def test_the_selftest_reads_its_dice_frame_through_the_calibration() -> None:
    """Full scale (the committed detector boxes the markers and the "Six" label there): the dice frame,
    read as a table with this calibration reads it, gives only faces rendered: all five, valid, or fewer
    where the reader doubts a face (its second opinions, docs/history/never-sure-2.md), left to a person."""
    code, out = _run("calibrate", "selftest", "--views", "6", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["dice_read_verdict"] in ("valid", "no_decision") and len(doc["dice_read"]) >= 3
    assert doc["checks"]["dice frame read with the faces rendered, none wrong (markers and print left out)"]
