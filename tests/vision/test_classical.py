"""The classical pip count (the second opinion) on dice drawn with known faces, colours, sizes and angles."""

from __future__ import annotations

import numpy as np
import pytest

from tests.vision.drawn import draw_die, plain
from vision.pips.classical import count_pips
from vision.pips.crops import CROP_PX, crop_die

COLOURS = [
    ((235, 235, 235), (20, 20, 20)),  # white die, black pips
    ((30, 30, 180), (240, 240, 240)),  # red casino die, white pips
    ((40, 40, 40), (0, 200, 255)),  # black die, gold pips
]


@pytest.mark.parametrize("face", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("angle_deg", [0, 20, 45])
@pytest.mark.parametrize(("body", "pip"), COLOURS)
@pytest.mark.parametrize("edge_px", [60, 200])
def test_counts_drawn_faces(
    face: int, angle_deg: int, body: tuple[int, int, int], pip: tuple[int, int, int], edge_px: int
) -> None:
    img = plain(300, 300)
    box = draw_die(
        img, face=face, centre_xy=(150, 150), edge_px=edge_px, angle_deg=angle_deg, body_bgr=body, pip_bgr=pip
    )
    assert count_pips(crop_die(img, box)) == face


@pytest.mark.parametrize(
    "crop",
    [
        np.full((CROP_PX, CROP_PX, 3), 128, np.uint8),  # flat grey: nothing to count
        np.random.default_rng(0).integers(0, 256, (CROP_PX, CROP_PX, 3), dtype=np.uint8),  # noise
    ],
)
def test_no_opinion_rather_than_a_guess(crop: np.ndarray) -> None:
    assert count_pips(crop) is None


def test_crop_is_square_and_sized() -> None:
    img = plain(100, 120)
    out = crop_die(img, (10.0, 20.0, 40.0, 35.0))
    assert out.shape == (CROP_PX, CROP_PX, 3)
    big = crop_die(plain(2000, 2000), (0.0, 0.0, 1900.0, 1900.0))  # pre-shrink path of a huge die
    assert big.shape == (CROP_PX, CROP_PX, 3)
