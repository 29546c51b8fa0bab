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
