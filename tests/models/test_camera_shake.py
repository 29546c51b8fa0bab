"""`models.augment.camera_shake`: the face model's training blur, the generator's kernel at a die's scale."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from datasets.synth.blur import motion_kernel
from models.augment import camera_shake
from models.data import LabelledImage


@pytest.mark.parametrize(("length", "angle"), [(2, 0.0), (5, 37.0), (9, 144.0)])
def test_the_kernel_is_a_line_that_keeps_brightness(length: int, angle: float) -> None:
    k = motion_kernel(length, angle)
    assert k.shape == (length, length) and k.dtype == np.float32
    assert float(k.sum()) == pytest.approx(1.0, abs=1e-5)
    assert float(k.max()) < 1.0  # spread over more than one pixel


def test_the_kernel_lies_along_its_angle() -> None:
    """At 0 degrees the line is the middle row; at 90 the middle column."""
    flat, upright = motion_kernel(7, 0.0), motion_kernel(7, 90.0)
    assert float(flat[3].sum()) == pytest.approx(1.0, abs=1e-5)
    assert float(upright[:, 3].sum()) == pytest.approx(1.0, abs=1e-5)


def test_a_flat_patch_stays_flat() -> None:
    flat = np.full((96, 96, 3), 120, np.uint8)
    out = camera_shake(flat, 56.0, np.random.default_rng(0))
    assert out.shape == flat.shape and out.dtype == np.uint8
    assert int(np.abs(out.astype(int) - 120).max()) <= 1


def _pips() -> np.ndarray:
    img = np.full((96, 96, 3), 230, np.uint8)
    for y in (30, 48, 66):
        for x in (30, 66):
            img[y - 3 : y + 4, x - 3 : x + 4] = 20
    return img


def test_a_bigger_die_is_smeared_further() -> None:
    """The line is a share of the die's side: the same draws smear a die of 60 px more than one of 12."""
    sharp = _pips()
    contrast = [
        float(camera_shake(sharp, die_px, np.random.default_rng(4)).astype(float).std())
        for die_px in (12.0, 60.0)
    ]
    assert contrast[1] < contrast[0] < float(sharp.astype(float).std())


def _photo(tmp_path: Path) -> LabelledImage:
    path = tmp_path / "photo.png"
    img = np.full((120, 120, 3), 60, np.uint8)
    img[30:90, 30:90] = _pips()[18:78, 18:78]
    cv2.imwrite(str(path), img)
    boxes = np.array([[30, 30, 90, 90]], np.float32)
    return LabelledImage(path=path, boxes_xyxy=boxes, faces=np.array([6], np.int64))


def test_shake_synthetic_only_leaves_a_photos_dice_as_they_were(tmp_path: Path) -> None:
    """Stage 19b's switch: a photo's die (no camera in its label) is cut exactly as without --shake."""
    from models.train_pips import CropSampler

    items = [_photo(tmp_path)]
    plain = CropSampler(items, 7).sample(0)[0]
    kept = CropSampler(items, 7, shake=1.0, shake_synthetic_only=True).sample(0)[0]
    shaken = CropSampler(items, 7, shake=1.0).sample(0)[0]
    assert np.array_equal(plain, kept)
    assert not np.array_equal(plain, shaken)


def test_shake_synthetic_only_still_shakes_a_rendered_die(tmp_path: Path) -> None:
    """A generator's scene (its label gives the camera) is shaken with --shake-synthetic-only too."""
    from models.train_pips import CropSampler

    camera = Camera(
        CameraIntrinsics.from_fov(width_px=120, height_px=120, hfov_deg=40.0),
        CameraPose.look_at(eye_mm=(0.0, 0.0, 800.0), target_mm=(0.0, 0.0, 0.0)),
    )
    items = [dataclasses.replace(_photo(tmp_path), camera=camera)]
    plain = CropSampler(items, 7).sample(0)[0]
    shaken = CropSampler(items, 7, shake=1.0, shake_synthetic_only=True).sample(0)[0]
    assert not np.array_equal(plain, shaken)


def test_train_pips_refuses_a_shake_out_of_range() -> None:
    for extra in (["--shake", "1.5"], ["--shake-synthetic-only"]):
        out = subprocess.run(
            [sys.executable, "-m", "models.train_pips", *extra], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 2 and "--shake" in out.stderr, out.stderr


def test_a_cocked_share_draws_the_cocked_dice_that_often(tmp_path: Path) -> None:
    """`--cocked-share` (a face model for the dice called cocked): that share of the crops comes from the dice
    the generator's truth calls cocked; without it the draws are exactly as before."""
    from models.train_pips import CropSampler

    photo = _photo(tmp_path)
    boxes = np.array([[30, 30, 90, 90], [0, 0, 30, 30], [90, 90, 120, 120], [0, 90, 30, 120]], np.float32)
    scene = LabelledImage(
        path=photo.path,
        boxes_xyxy=boxes,
        faces=np.array([6, 1, 2, 3], np.int64),
        cocked=np.array([False, False, False, True]),
    )
    plain = CropSampler([scene], 3, cocked_share=0.0)
    assert plain.cocked == [3]
    # the faces the sampler of bb258bd (before --cocked-share) drew for these dice with seed 3: no draw added
    assert [plain.sample()[1] for _ in range(12)] == [3, 3, 1, 2, 2, 3, 1, 3, 3, 3, 3, 2]
    sampler = CropSampler([scene], 3, cocked_share=0.6)
    faces = [sampler.sample()[1] for _ in range(2000)]
    share = faces.count(3) / len(faces)  # 0.6 + 0.4 / 4 of the crops are the cocked die's
    assert abs(share - 0.7) < 0.04, share
    with pytest.raises(ValueError, match="needs cocked dice"):
        CropSampler([photo], 3, cocked_share=0.5)
    with pytest.raises(ValueError, match="0 to 1"):
        CropSampler([scene], 3, cocked_share=1.5)
    with pytest.raises(ValueError, match="one entry per box"):
        LabelledImage(path=photo.path, boxes_xyxy=boxes, faces=scene.faces, cocked=np.array([True]))


def test_load_synth_marks_the_dice_cocked_on_chips(tmp_path: Path) -> None:
    """`LabelledImage.cocked` comes from the generator's truth: rendered throws with a die cocked on chips."""
    from typer.testing import CliRunner

    from lab.cli import app
    from models.data import load_synth

    out = tmp_path / "cocked"
    args = ["synth", str(out), "--scenes", "2", "--seed", "5", "--mix", "cocked=1", "--workers", "1"]
    result = CliRunner().invoke(app, [*args, "--width", "320", "--height", "240", "--oblique", "0"])
    assert result.exit_code == 0, result.output
    items = load_synth(out)
    assert all(it.cocked is not None and it.cocked.shape == it.faces.shape for it in items)
    assert sum(int(it.cocked.sum()) for it in items if it.cocked is not None) >= 1


def test_train_pips_refuses_a_cocked_share_out_of_range() -> None:
    argv = [sys.executable, "-m", "models.train_pips", "--cocked-share", "2"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--cocked-share" in out.stderr, out.stderr
