"""`models.augment.camera_shake`: the face model's training blur, the generator's kernel at a die's scale."""

from __future__ import annotations

import numpy as np
import pytest

from datasets.synth.blur import motion_kernel
from models.augment import camera_shake


@pytest.mark.parametrize(("length", "angle"), [(2, 0.0), (5, 37.0), (9, 144.0)])
def test_the_kernel_is_a_line_that_keeps_brightness(length: int, angle: float) -> None:
    k = motion_kernel(length, angle)
    assert k.shape == (length, length) and k.dtype == np.float32
    assert float(k.sum()) == pytest.approx(1.0, abs=1e-5)
    assert float(k.max()) < 1.0  # spread over more than one pixel


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
