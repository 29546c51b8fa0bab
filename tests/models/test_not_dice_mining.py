"""Which detections the die-state trainer takes as `no_die` (models/train_die_state.py, `--not-dice`)."""

from __future__ import annotations

from models.train_die_state import on_no_die

DIE = (100.0, 100.0, 140.0, 140.0)


def test_a_box_far_from_every_die_is_no_die() -> None:
    assert on_no_die((300.0, 300.0, 360.0, 360.0), [DIE])
    assert on_no_die((10.0, 10.0, 20.0, 20.0), [])


def test_a_box_on_a_die_is_not_taken_as_no_die() -> None:
    assert not on_no_die((102.0, 98.0, 141.0, 139.0), [DIE])  # the die itself
    assert not on_no_die((110.0, 110.0, 130.0, 130.0), [DIE])  # its centre on the die (a pip, a face)
    # a box overlapping a die by IoU >= 0.2 (0.23) with its centre off it (a die half hidden, a loose box)
    assert not on_no_die((75.0, 100.0, 115.0, 140.0), [DIE])


def test_a_chip_stack_beside_a_die_is_no_die() -> None:
    """A chip stack a die leans on overlaps the die's box a little: still no die."""
    assert on_no_die((135.0, 100.0, 185.0, 150.0), [DIE])
