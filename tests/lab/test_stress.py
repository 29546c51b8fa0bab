"""`throwbox lab stress`: each change moves the photo and its labels together, is repeatable, and is scored as
`throwbox lab eval` scores (the unchanged photos give eval's own figures)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.stress import (
    KINDS,
    Kind,
    change,
    condition_rng,
    conditions,
    parse_kinds,
    tilt_homography,
    warp_boxes,
)
from vision.onnx_session import manifest_lists

FIXTURES = Path(__file__).resolve().parent.parent / "vision" / "fixtures"  # three real photos, YOLO labels
runner = CliRunner()
needs_models = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state"),
    reason="models/manifest.json lists no detector, face and die-state models (models/train_*.py)",
)


def _photo(h: int = 240, w: int = 320) -> np.ndarray:
    """Green felt with one white 40 px square (a die) whose box is (100, 60, 140, 100)."""
    img = np.empty((h, w, 3), np.uint8)
    img[:] = (60, 120, 40)
    img[60:100, 100:140] = 255
    return img


BOX = np.array([[100, 60, 140, 100]], np.float32)


def _white_box(img: np.ndarray) -> tuple[float, float, float, float]:
    ys, xs = np.nonzero(img[..., 0] > 200)
    return float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)


def test_a_smaller_photo_scales_its_labels_with_it() -> None:
    img, boxes = change(_photo(), BOX, "smaller", 0.5, np.random.default_rng(0))
    assert img.shape == (120, 160, 3)
    np.testing.assert_allclose(boxes, [[50, 30, 70, 50]])
    np.testing.assert_allclose(_white_box(img), boxes[0], atol=1)


@pytest.mark.parametrize("degrees", [15.0, 30.0, 45.0])
def test_a_tilted_photo_carries_its_labels_and_stays_in_the_frame(degrees: float) -> None:
    photo = _photo()
    img, boxes = change(photo, BOX, "tilt", degrees, np.random.default_rng(0))
    assert img.shape == photo.shape
    # The label box is the box around the warped square, as the picture shows it.
    np.testing.assert_allclose(_white_box(img), boxes[0], atol=1.5)
    # The whole photo, warped, fits the frame: no die leaves it.
    corners = np.array([[[0, 0], [320, 0], [320, 240], [0, 240]]], np.float64)
    warped = cv2.perspectiveTransform(corners, tilt_homography(320, 240, degrees))[0]
    assert warped.min() >= -1e-6 and warped[:, 0].max() <= 320 + 1e-6 and warped[:, 1].max() <= 240 + 1e-6
    # Foreshortened: the far edge (the top) comes out shorter than the near one.
    assert warped[1, 0] - warped[0, 0] < warped[2, 0] - warped[3, 0]


def test_no_tilt_is_no_change() -> None:
    np.testing.assert_allclose(tilt_homography(320, 240, 0.0), np.eye(3), atol=1e-9)
    np.testing.assert_allclose(warp_boxes(BOX, np.eye(3)), BOX)
    assert warp_boxes(np.zeros((0, 4), np.float32), np.eye(3)).shape == (0, 4)


@pytest.mark.parametrize(
    "kind", [k for k in KINDS if k.name not in ("smaller", "tilt")], ids=lambda k: k.name
)
def test_the_picture_only_changes_keep_the_labels_and_the_frame(kind: Kind) -> None:
    photo = _photo()
    for level in kind.levels:
        img, boxes = change(photo, BOX, kind.name, level, np.random.default_rng(1))
        assert img.shape == photo.shape and img.dtype == np.uint8
        np.testing.assert_array_equal(boxes, BOX)
        assert not np.array_equal(img, photo), f"{kind.name} {level} left the photo as it was"


def test_the_draws_repeat_with_the_seed_and_differ_between_photos() -> None:
    photo = _photo()
    one, _ = change(photo, BOX, "noise", 16.0, condition_rng(0, 3, "noise", 2))
    again, _ = change(photo, BOX, "noise", 16.0, condition_rng(0, 3, "noise", 2))
    other, _ = change(photo, BOX, "noise", 16.0, condition_rng(0, 4, "noise", 2))
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(one, other)


def test_hue_turns_colours_and_leaves_greys() -> None:
    red = np.zeros((8, 8, 3), np.uint8)
    red[..., 2] = 255
    turned, _ = change(red, np.zeros((0, 4), np.float32), "hue", 180.0, np.random.default_rng(0))
    assert tuple(int(v) for v in turned[0, 0]) == (255, 255, 0)  # red turned half way round: cyan (BGR)
    grey = np.full((8, 8, 3), 128, np.uint8)
    same, _ = change(grey, np.zeros((0, 4), np.float32), "hue", 90.0, np.random.default_rng(0))
    np.testing.assert_array_equal(same, grey)


def test_kinds_are_parsed_in_order_and_mistakes_named() -> None:
    assert [k.name for k in parse_kinds("tilt, jpeg")] == ["tilt", "jpeg"]
    assert parse_kinds("all") == KINDS
    with pytest.raises(ValueError, match="the kinds are smaller, defocus"):
        parse_kinds("blurry")
    with pytest.raises(ValueError, match="twice"):
        parse_kinds("jpeg,jpeg")
    with pytest.raises(ValueError, match="no change kind"):
        parse_kinds(" , ")
    with pytest.raises(ValueError, match="BGR uint8"):
        change(np.zeros((8, 8), np.uint8), BOX, "jpeg", 40.0, np.random.default_rng(0))
    plan = conditions(parse_kinds("jpeg"))
    assert plan == [("none", 0.0, 0), ("jpeg", 40.0, 1), ("jpeg", 20.0, 2), ("jpeg", 10.0, 3)]


@needs_models
def test_the_command_scores_the_unchanged_photos_as_eval_does(tmp_path: Path) -> None:
    out, plot, sheet = tmp_path / "r.json", tmp_path / "s.png", tmp_path / "sheet.jpg"
    result = runner.invoke(
        app,
        [
            *("stress", str(FIXTURES), "--kinds", "smaller,jpeg", "--json", "--out", str(out)),
            *("--plot", str(plot), "--sheet", str(sheet), "--sheet-image", "1"),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report == json.loads(out.read_text(encoding="utf-8")) | {"plot": str(plot)}
    assert [(r["kind"], r["level"]) for r in report["conditions"]] == [
        ("none", 0.0),
        ("smaller", 0.75),
        ("smaller", 0.5),
        ("smaller", 0.35),
        ("jpeg", 40.0),
        ("jpeg", 20.0),
        ("jpeg", 10.0),
    ]
    assert all(
        r["images"] == 3 and r["dice"] == report["conditions"][0]["dice"] for r in report["conditions"]
    )
    evaluated = runner.invoke(app, ["eval", str(FIXTURES), "--json", "--plot", str(tmp_path / "e.png")])
    assert evaluated.exit_code == 0, evaluated.output
    summary = json.loads(evaluated.output)
    none = report["conditions"][0]
    assert none["recall_pct"] == summary["detection"]["recall_pct"]
    assert none["precision_pct"] == summary["detection"]["precision_pct"]
    assert none["face_learned_of_matched_pct"] == summary["face_accuracy_pct"]["learned_of_matched"]
    assert none["rolls_exact_pct"] == summary["rolls"]["exact_valid_pct"]
    assert plot.stat().st_size > 0
    drawn = cv2.imread(str(sheet))
    # The photo unchanged and at each kind's strongest, 480 px a side (the fixtures are square) under a
    # 28-px caption, in one row.
    assert drawn is not None and drawn.shape[:2] == (480 + 28, 3 * 480)


@needs_models
def test_mistakes_are_named_before_anything_is_read(tmp_path: Path) -> None:
    plot = str(tmp_path / "s.png")
    bad_kind = runner.invoke(app, ["stress", str(FIXTURES), "--kinds", "fog", "--plot", plot])
    assert bad_kind.exit_code == 2 and "no change kind 'fog'" in bad_kind.output
    missing = runner.invoke(app, ["stress", str(tmp_path / "nowhere"), "--plot", plot])
    assert missing.exit_code == 2 and "dataset not found" in missing.output
    negative = runner.invoke(app, ["stress", str(FIXTURES), "--seed", "-1", "--plot", plot])
    assert negative.exit_code == 2 and "--seed" in negative.output
    past = runner.invoke(
        app, ["stress", str(FIXTURES), "--kinds", "jpeg", "--sheet-image", "3", "--plot", plot]
    )
    assert past.exit_code == 2 and "the set has 3 photos" in past.output
    assert not (tmp_path / "s.png").exists()
