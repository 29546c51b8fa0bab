"""Die geometry: which face sits on which local axis, the face a die shows, and the cocked-die rule.

Standard layout: opposite faces sum to seven. In the die's own frame the face with value 1 looks along +z,
6 along -z, 2 along +x, 5 along -x, 3 along +y and 4 along -y. Everything here is pure numpy so the
rule can be tested without the physics engine.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# Outward unit normals of the faces in the die's frame, keyed by face value.
FACE_NORMALS: dict[int, tuple[float, float, float]] = {
    1: (0.0, 0.0, 1.0),
    6: (0.0, 0.0, -1.0),
    2: (1.0, 0.0, 0.0),
    5: (-1.0, 0.0, 0.0),
    3: (0.0, 1.0, 0.0),
    4: (0.0, -1.0, 0.0),
}
FACES: tuple[int, ...] = (1, 2, 3, 4, 5, 6)


def opposite(face: int) -> int:
    """The face on the other side of the die (opposite faces sum to seven)."""
    if face not in FACES:
        raise ValueError(f"a die face is 1..6, got {face}")
    return 7 - face


def quat_to_matrix(quat_xyzw: tuple[float, float, float, float] | FloatArray) -> FloatArray:
    """Rotation matrix (die frame -> world) of a unit quaternion in pybullet's x, y, z, w order."""
    x, y, z, w = (float(v) for v in quat_xyzw)
    n = x * x + y * y + z * z + w * w
    if n < 1e-12:
        raise ValueError("zero quaternion")
    s = 2.0 / n
    return np.array(
        [
            [1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
            [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
            [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)],
        ],
        dtype=np.float64,
    )


def world_normals(rot: FloatArray) -> dict[int, FloatArray]:
    """Each face's outward normal in the world frame."""
    return {face: rot @ np.asarray(n, dtype=np.float64) for face, n in FACE_NORMALS.items()}


def face_up(rot: FloatArray) -> int:
    """The face whose normal points most nearly straight up (world +z)."""
    normals = world_normals(rot)
    return max(FACES, key=lambda f: float(normals[f][2]))


def tilt_deg(rot: FloatArray) -> float:
    """Angle between the most upward face normal and the vertical: 0 for a die lying flat."""
    normals = world_normals(rot)
    best = max(float(n[2]) for n in normals.values())
    return float(np.degrees(np.arccos(np.clip(best, -1.0, 1.0))))


def face_towards(rot: FloatArray, direction: FloatArray) -> int:
    """The face whose outward normal points most nearly along `direction` (world frame)."""
    d = np.asarray(direction, dtype=np.float64)
    d = d / max(float(np.linalg.norm(d)), 1e-12)
    normals = world_normals(rot)
    return max(FACES, key=lambda f: float(normals[f] @ d))


EDGE_TIE_COS = 0.1  # faces whose normals look toward a contact within this (cosine) of the best one tie


def resting_side(rot: FloatArray, direction: FloatArray) -> int:
    """The side of a die that rests on an object it touches at `direction` (world frame, from its centre).

    The face looking most nearly toward the contact. Where the contact is at an edge or a corner of the die
    (two or three faces look toward it about equally: within `EDGE_TIE_COS` in cosine of the best), the
    lowest of them: a die propped on an object rests on its lower side, the one it falls onto if the object
    is taken away. A die propped against a neighbouring die or a wall touches it with the edge between its
    rising bottom face and the side face above it; taking the bottom face as the resting side reads the die,
    like one leaning on the rim of a chip stack, by its uppermost face when it leans less than 45 degrees
    (675a.4(c): "read by the side directly opposite the side resting on ... [the] object"). Before
    2026-11-30 the nearest face won the tie by a rounding error, and a propped die could be read by a face
    looking sideways or down.
    """
    d = np.asarray(direction, dtype=np.float64)
    d = d / max(float(np.linalg.norm(d)), 1e-12)
    normals = world_normals(rot)
    best = max(float(n @ d) for n in normals.values())
    tied = [f for f in FACES if float(normals[f] @ d) >= best - EDGE_TIE_COS]
    return min(tied, key=lambda f: float(normals[f][2]))


def face_corners_local(face: int, edge: float) -> FloatArray:
    """The four corners of a face in the die's frame, counter-clockwise seen from outside."""
    n = np.asarray(FACE_NORMALS[face], dtype=np.float64)
    h = edge / 2.0
    # Two tangent axes spanning the face, chosen so that (u, v, n) is right-handed.
    helper = np.array([0.0, 0.0, 1.0]) if abs(n[2]) < 0.5 else np.array([1.0, 0.0, 0.0])
    u = np.cross(helper, n)
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    centre = n * h
    return np.stack([centre + h * (su * u + sv * v) for su, sv in ((-1, -1), (1, -1), (1, 1), (-1, 1))])


def cube_corners_local(edge: float) -> FloatArray:
    """The eight corners of the die in its own frame."""
    h = edge / 2.0
    return np.array([[sx * h, sy * h, sz * h] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])


def matrix_to_quat(rot: FloatArray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method, numerically stable)."""
    m = np.asarray(rot, dtype=np.float64)
    tr = float(np.trace(m))
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    q = np.array([x, y, z, w], dtype=np.float64)
    q /= np.linalg.norm(q)
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def frame_rotation(local: tuple[FloatArray, FloatArray], world: tuple[FloatArray, FloatArray]) -> FloatArray:
    """The rotation taking two orthonormal die-frame vectors onto two orthonormal world vectors."""
    a1, a2 = (np.asarray(v, dtype=np.float64) for v in local)
    b1, b2 = (np.asarray(v, dtype=np.float64) for v in world)
    a = np.column_stack([a1, a2, np.cross(a1, a2)])
    b = np.column_stack([b1, b2, np.cross(b1, b2)])
    return np.asarray(b @ a.T, dtype=np.float64)


def flat_rotation(face: int, yaw_rad: float, second: int | None = None) -> FloatArray:
    """A die lying flat with `face` up, turned by `yaw_rad` about the vertical."""
    if second is None:
        second = next(f for f in FACES if f not in (face, opposite(face)))
    up = np.array([0.0, 0.0, 1.0])
    horiz = np.array([np.cos(yaw_rad), np.sin(yaw_rad), 0.0])
    n_face = np.asarray(FACE_NORMALS[face], dtype=np.float64)
    n_second = np.asarray(FACE_NORMALS[second], dtype=np.float64)
    if abs(float(n_face @ n_second)) > 1e-9:
        raise ValueError(f"face {second} is not adjacent to face {face}")
    return frame_rotation((n_face, n_second), (up, horiz))
