"""675a.4(b)-(c) as the generator applies them, on hand-made poses and contacts (no physics engine)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.layout import ThrowBoxLayout
from datasets.synth.dice import (
    FACE_NORMALS,
    FACES,
    face_up,
    flat_rotation,
    frame_rotation,
    matrix_to_quat,
    opposite,
    quat_to_matrix,
    resting_side,
    tilt_deg,
)
from datasets.synth.physics import DieContacts, DiePose
from datasets.synth.truth import PhysicalTruth, physical_truth, scene_verdict

LAYOUT = ThrowBoxLayout()


def _pose(rot: np.ndarray, x: float = 300.0, y: float = 300.0, z: float = 9.5) -> DiePose:
    return DiePose((x, y, z), matrix_to_quat(rot))


def _contacts(
    touches: set[str],
    sides: frozenset[int] | set[int] = frozenset(),
    kinds: frozenset[str] | set[str] = frozenset(),
    below: tuple[int, ...] = (),
) -> DieContacts:
    return DieContacts(frozenset(touches), frozenset(sides), frozenset(kinds), below)


def _tilted(face: int, deg: float) -> np.ndarray:
    import cv2

    tilt, _ = cv2.Rodrigues(np.array([np.radians(deg), 0.0, 0.0]))
    return np.asarray(tilt @ flat_rotation(face, 0.4))


@pytest.mark.parametrize("face", FACES)
def test_opposite_faces_sum_to_seven(face: int) -> None:
    assert face + opposite(face) == 7


@pytest.mark.parametrize("face", FACES)
def test_flat_die_shows_its_face(face: int) -> None:
    rot = flat_rotation(face, 1.1)
    assert face_up(rot) == face
    assert tilt_deg(rot) == pytest.approx(0.0, abs=1e-6)
    # Quaternion round trip keeps the rotation.
    np.testing.assert_allclose(quat_to_matrix(matrix_to_quat(rot)), rot, atol=1e-9)


def test_flat_die_touching_a_neighbour_is_not_cocked() -> None:
    t = physical_truth(_pose(flat_rotation(4, 0.0)), _contacts({"felt", "die"}, {2}, {"die"}), LAYOUT)
    assert (t.face, t.cocked, t.stacked, t.rests_on) == (4, False, False, "felt")


def test_675a_4_c_cocked_die_read_opposite_the_side_on_the_chips() -> None:
    rot = _tilted(1, 30.0)
    # The die's 5-side rests on the chips: the face read is 2, whatever face looks most upward.
    t = physical_truth(_pose(rot), _contacts({"felt", "chips"}, {5}, {"chips"}), LAYOUT)
    assert t.cocked and t.rests_on == "chips" and t.sides_resting == 1
    assert t.face == 2
    assert t.face_geometric == 1


def test_675a_4_c_more_than_one_side_resting_is_void() -> None:
    t = physical_truth(_pose(_tilted(3, 44.0)), _contacts({"chips"}, {1, 2}, {"chips"}), LAYOUT)
    assert t.cocked and t.sides_resting == 2 and t.face is None
    verdict, reasons = scene_verdict([t], expected=1, missing=0)
    assert (verdict, reasons) == ("void", ("cocked_multi_side",))


def test_675a_4_b_die_on_die_is_invalid() -> None:
    t = physical_truth(_pose(flat_rotation(6, 0.0), z=28.5), _contacts({"die"}, {1}, {"die"}, (0,)), LAYOUT)
    assert t.stacked and t.rests_on == "die" and t.face == 6
    assert scene_verdict([t], expected=1, missing=0) == ("invalid", ("stacked",))


def test_675a_4_b_die_off_the_table_is_invalid() -> None:
    t = physical_truth(_pose(flat_rotation(2, 0.0), x=-40.0), _contacts({"outside"}), LAYOUT)
    assert t.off_table and t.face is None and t.rests_on == "outside"
    assert scene_verdict([t], expected=1, missing=0) == ("invalid", ("off_table",))


def _flat_truth(face: int) -> PhysicalTruth:
    return physical_truth(_pose(flat_rotation(face, 0.0)), _contacts({"felt"}), LAYOUT)


@pytest.mark.parametrize(
    ("missing", "present", "expected", "verdict", "reasons"),
    [
        (0, 10, 10, "valid", ()),  # all there, all flat
        (1, 9, 10, "invalid", ("missing",)),  # a die missing from the picture: off the table
        (0, 9, 10, "invalid", ("missing",)),  # fewer dice than the game uses, even if nobody said so
        (0, 6, 6, "valid", ()),  # the six-dice variation
    ],
)
def test_scene_verdict_counts(
    missing: int, present: int, expected: int, verdict: str, reasons: tuple[str, ...]
) -> None:
    dice = [_flat_truth(1 + i % 6) for i in range(present)]
    assert scene_verdict(dice, expected=expected, missing=missing) == (verdict, reasons)


def test_invalid_wins_over_void_and_lists_both() -> None:
    void_die = physical_truth(_pose(_tilted(3, 44.0)), _contacts({"chips"}, {1, 2}, {"chips"}), LAYOUT)
    off = physical_truth(_pose(flat_rotation(2, 0.0), x=-40.0), _contacts({"outside"}), LAYOUT)
    assert scene_verdict([void_die, off], expected=2, missing=0) == (
        "invalid",
        ("off_table", "cocked_multi_side"),
    )


# The side a propped die rests on (`resting_side`): 675a.4(c) reads a cocked die "by the side directly
# opposite the side resting on the chips or other object". A die propped against a neighbouring die or a
# wall touches it with an edge or a corner, where two or three faces look toward the contact about equally.


def _propped(lean_deg: float) -> tuple[np.ndarray, int, int]:
    """A die whose bottom face rises toward +x at `lean_deg`: (rotation, bottom face, +x side face)."""
    th = np.radians(lean_deg)
    bottom = np.array([np.sin(th), 0.0, -np.cos(th)])  # outward normal: down, toward the support
    side = np.array([np.cos(th), 0.0, np.sin(th)])  # the side face above it, looking at the support
    rot = frame_rotation(
        (np.asarray(FACE_NORMALS[2], dtype=np.float64), np.asarray(FACE_NORMALS[1], dtype=np.float64)),
        (bottom, side),
    )
    return rot, 2, 1


def test_675a_4_c_a_face_contact_rests_on_that_face() -> None:
    rot, bottom, _ = _propped(30.0)
    assert resting_side(rot, rot @ np.asarray(FACE_NORMALS[bottom], dtype=np.float64)) == bottom
    # Off the face's centre but well inside it (a chip rim under a leaning die) it is still that face.
    toward = rot @ (np.asarray(FACE_NORMALS[bottom], dtype=np.float64) * 9.5 + np.array([0.0, 3.0, 2.0]))
    assert resting_side(rot, toward) == bottom


@pytest.mark.parametrize("lean", [15.0, 30.0, 40.0])
def test_675a_4_c_a_die_propped_on_an_edge_is_read_by_its_uppermost_face(lean: float) -> None:
    rot, bottom, side = _propped(lean)
    n = {f: rot @ np.asarray(FACE_NORMALS[f], dtype=np.float64) for f in FACES}
    edge = (n[bottom] + n[side]) * 9.5  # the edge between them touches the support (a die's vertical side)
    assert abs(float(n[bottom] @ edge) - float(n[side] @ edge)) < 1e-9  # an exact tie
    assert resting_side(rot, edge) == bottom
    # A hair nearer the side face (a rounding error in the contact point) changes nothing.
    assert resting_side(rot, edge + n[side] * 0.05) == bottom
    contacts = _contacts({"felt", "die"}, {resting_side(rot, edge)}, {"die"})
    z = 9.5 * (np.cos(np.radians(lean)) + np.sin(np.radians(lean)))
    t = physical_truth(_pose(rot, z=z), contacts, LAYOUT)
    assert t.cocked and t.rests_on == "die" and t.sides_resting == 1
    assert t.face == face_up(rot) == opposite(bottom)


def test_675a_4_c_a_corner_contact_rests_on_the_lowest_of_its_three_faces() -> None:
    rot, bottom, side = _propped(25.0)
    n = {f: rot @ np.asarray(FACE_NORMALS[f], dtype=np.float64) for f in FACES}
    third = next(f for f in FACES if f not in (bottom, side, opposite(bottom), opposite(side)))
    corner = n[bottom] + n[side] + n[third]
    assert resting_side(rot, corner) == bottom


def test_675a_4_c_a_contact_well_inside_a_side_face_rests_on_that_face() -> None:
    """The tie is only for edges and corners: a contact 3.5 mm inside the side face's edge is that face's."""
    rot, bottom, side = _propped(30.0)
    n = {f: rot @ np.asarray(FACE_NORMALS[f], dtype=np.float64) for f in FACES}
    inside = n[side] * 9.5 + n[bottom] * 6.0  # on the side face, 6 mm from its centre toward the bottom edge
    assert resting_side(rot, inside) == side
