"""The classical pip count's layout check: the tightened cases (a four with two side-face pips, a glint
beside an ace, an ace off the centre) are refused, true layouts at any angle pass."""

from __future__ import annotations

import numpy as np
import pytest

from vision.pips.classical import layout_fits

DIE = 80.0  # die edge in px
A = 0.27 * DIE  # pip offset from the face centre on a standard die
CENTRE = np.array([48.0, 48.0])

LAYOUTS: dict[int, list[tuple[float, float]]] = {
    1: [(0, 0)],
    2: [(-A, -A), (A, A)],
    3: [(-A, -A), (0, 0), (A, A)],
    4: [(-A, -A), (A, -A), (-A, A), (A, A)],
    5: [(-A, -A), (A, -A), (0, 0), (-A, A), (A, A)],
    6: [(-A, -A), (A, -A), (-A, 0), (A, 0), (-A, A), (A, A)],
}


def placed(offsets: list[tuple[float, float]], angle_deg: float = 0.0) -> np.ndarray:
    t = np.deg2rad(angle_deg)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    return np.asarray(np.array(offsets, float) @ rot.T + CENTRE, float)


@pytest.mark.parametrize("n", range(1, 7))
@pytest.mark.parametrize("angle", [0.0, 20.0, 45.0, 70.0])
def test_true_layouts_pass_at_any_angle(n: int, angle: float) -> None:
    assert layout_fits(placed(LAYOUTS[n], angle), face_centre=CENTRE, die_px=DIE)


def test_a_four_with_two_side_face_pips_is_not_a_six() -> None:
    # the four's pips, and two pips of a side face seen in perspective beyond one edge
    four_and_side = [*LAYOUTS[4], (-A / 2, 1.9 * A), (A / 2, 1.9 * A)]
    assert not layout_fits(placed(four_and_side, 10.0), face_centre=CENTRE, die_px=DIE)


def test_a_glint_beside_an_ace_is_not_a_two() -> None:
    assert not layout_fits(placed([(0, 0), (0.3 * DIE, 0)]), face_centre=CENTRE, die_px=DIE)


def test_a_lone_pip_off_the_centre_is_not_an_ace() -> None:
    assert not layout_fits(placed([(0.16 * DIE, 0.0)]), face_centre=CENTRE, die_px=DIE)


def test_four_points_on_a_circle_that_are_no_square_are_not_a_four() -> None:
    r = A * np.sqrt(2)
    kite = [(r * np.cos(np.deg2rad(a)), r * np.sin(np.deg2rad(a))) for a in (0, 60, 180, 240)]
    assert not layout_fits(placed(kite), face_centre=CENTRE, die_px=DIE)
