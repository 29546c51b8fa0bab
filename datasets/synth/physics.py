"""The throw, simulated with pybullet: felt, walls, chip stacks and 19 mm casino dice, run until at rest.

Units inside pybullet are SI (metres, kilograms, seconds); the world frame is the one of
`calibration.camera` (felt plane z = 0, origin at the dealer's-left inner corner) scaled from mm to m.
Each simulation runs in its own fresh DIRECT client, so a scene depends only on its inputs: that is what
makes the generator deterministic for a seed whatever the number of worker processes.

Chip stacks are static bodies: real stacks do not move when a die leans on them, and a dynamic stack of
thin cylinders needs spinning friction and many solver iterations to come to rest (measured in issue 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from calibration.layout import DIE_EDGE_MM, ThrowBoxLayout
from datasets.synth.dice import quat_to_matrix, resting_side

FloatArray = NDArray[np.float64]

TIME_STEP_S = 1.0 / 480.0  # stable for 19 mm dice with 50 solver iterations (issue 3)
SOLVER_ITERATIONS = 50
DIE_MASS_KG = 0.008  # casino dice weigh about 8 g
CHIP_RADIUS_MM = 19.5  # 39 mm casino chip
CHIP_HEIGHT_MM = 3.3
WALL_THICKNESS_MM = 20.0
REST_LIN_MM_S = 2.0
REST_ANG_RAD_S = 0.05
REST_HOLD_S = 0.25
REST_CHECK_STEPS = 4  # velocities are checked every 4 steps (1/120 s): the rest test is the costly part
MAX_SIM_S = 6.0
PRESSED_DOWN_COS = 0.5  # a contact pushing this die down within 60 degrees of vertical: the other lies on it
COCKED_TILT_DEG = 5.0  # tilted more than this and touching something besides the felt: cocked


@dataclass(frozen=True)
class ChipStack:
    """A stack of casino chips standing on the felt (a static obstacle)."""

    x_mm: float
    y_mm: float
    n_chips: int
    colour_rgba: tuple[float, float, float, float] = (0.8, 0.1, 0.1, 1.0)

    def __post_init__(self) -> None:
        if self.n_chips < 1:
            raise ValueError(f"a chip stack has at least one chip, got {self.n_chips}")

    @property
    def height_mm(self) -> float:
        """Height of the stack."""
        return self.n_chips * CHIP_HEIGHT_MM


@dataclass(frozen=True)
class DieStart:
    """Initial state of one die (metres, xyzw quaternion, m/s, rad/s)."""

    position_m: tuple[float, float, float]
    quat_xyzw: tuple[float, float, float, float]
    lin_vel_m_s: tuple[float, float, float] = (0.0, 0.0, 0.0)
    ang_vel_rad_s: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class DiePose:
    """Where a die is: centre in mm and orientation (xyzw quaternion, die frame -> world)."""

    position_mm: tuple[float, float, float]
    quat_xyzw: tuple[float, float, float, float]

    @property
    def rotation(self) -> FloatArray:
        """Rotation matrix die frame -> world."""
        return quat_to_matrix(self.quat_xyzw)


@dataclass(frozen=True)
class DieContacts:
    """What a resting die touches: faces of the die touching objects other than the felt, by kind."""

    touches: frozenset[str]  # kinds touched: "felt", "outside", "wall", "chips", "die"
    side_faces: frozenset[int]  # die faces in contact with chips, walls or other dice
    side_kinds: frozenset[str]  # kinds those side faces rest on
    supported_by_die: tuple[int, ...]  # indices of dice this one sits on top of


@dataclass(frozen=True)
class SimResult:
    """Final poses, contacts, whether everything came to rest, and (optionally) sampled frames."""

    poses: tuple[DiePose, ...]
    contacts: tuple[DieContacts, ...]
    settled: bool
    sim_time_s: float
    trajectory: tuple[tuple[float, tuple[DiePose, ...]], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class PhysicsWorld:
    """The static scene: throw box, chip stacks, die size."""

    layout: ThrowBoxLayout
    chips: tuple[ChipStack, ...] = ()
    die_edge_mm: float = DIE_EDGE_MM


def _mm(v: tuple[float, ...] | list[float]) -> tuple[float, float, float]:
    return (float(v[0]) * 1000.0, float(v[1]) * 1000.0, float(v[2]) * 1000.0)


def simulate(
    world: PhysicsWorld,
    starts: tuple[DieStart, ...],
    *,
    max_time_s: float = MAX_SIM_S,
    sample_fps: float | None = None,
    on_sample: Callable[[float, tuple[DiePose, ...]], None] | None = None,
) -> SimResult:
    """Drop the dice into the box and step until every die is at rest (issue 3's criterion) or time runs out.

    With `sample_fps`, the poses are recorded at that frame rate from release to rest (for videos).
    """
    import pybullet as pb

    cid = pb.connect(pb.DIRECT)
    try:
        pb.setGravity(0, 0, -9.81, physicsClientId=cid)
        pb.setPhysicsEngineParameter(
            fixedTimeStep=TIME_STEP_S, numSolverIterations=SOLVER_ITERATIONS, physicsClientId=cid
        )
        kinds: dict[int, str] = {}
        lay = world.layout
        w, d = lay.width_mm / 1000.0, lay.depth_mm / 1000.0
        # The table: a big slab whose top is z = 0; the felt is its part inside the walls.
        ground = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[2.0, 2.0, 0.05], physicsClientId=cid)
        gid = pb.createMultiBody(0, ground, -1, [w / 2, d / 2, -0.05], physicsClientId=cid)
        pb.changeDynamics(gid, -1, lateralFriction=0.6, restitution=0.25, physicsClientId=cid)
        kinds[gid] = "felt"
        for centre, half in wall_boxes_m(lay):
            shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=list(half), physicsClientId=cid)
            wid = pb.createMultiBody(0, shape, -1, list(centre), physicsClientId=cid)
            pb.changeDynamics(wid, -1, lateralFriction=0.4, restitution=0.5, physicsClientId=cid)
            kinds[wid] = "wall"
        for stack in world.chips:
            h = stack.height_mm / 1000.0
            shape = pb.createCollisionShape(
                pb.GEOM_CYLINDER, radius=CHIP_RADIUS_MM / 1000.0, height=h, physicsClientId=cid
            )
            sid = pb.createMultiBody(
                0, shape, -1, [stack.x_mm / 1000.0, stack.y_mm / 1000.0, h / 2], physicsClientId=cid
            )
            pb.changeDynamics(sid, -1, lateralFriction=0.5, restitution=0.3, physicsClientId=cid)
            kinds[sid] = "chips"
        die_half_m = world.die_edge_mm / 2000.0
        die_shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[die_half_m] * 3, physicsClientId=cid)
        dice: list[int] = []
        for s in starts:
            did = pb.createMultiBody(
                DIE_MASS_KG, die_shape, -1, list(s.position_m), list(s.quat_xyzw), physicsClientId=cid
            )
            pb.changeDynamics(
                did,
                -1,
                lateralFriction=0.45,
                restitution=0.45,
                rollingFriction=1e-5,
                spinningFriction=1e-4,
                linearDamping=0.04,
                angularDamping=0.04,
                physicsClientId=cid,
            )
            pb.resetBaseVelocity(did, list(s.lin_vel_m_s), list(s.ang_vel_rad_s), physicsClientId=cid)
            dice.append(did)
            kinds[did] = "die"

        def poses() -> tuple[DiePose, ...]:
            out = []
            for did in dice:
                pos, orn = pb.getBasePositionAndOrientation(did, physicsClientId=cid)
                out.append(DiePose(_mm(pos), (orn[0], orn[1], orn[2], orn[3])))
            return tuple(out)

        trajectory: list[tuple[float, tuple[DiePose, ...]]] = []
        sample_every = round(1.0 / (sample_fps * TIME_STEP_S)) if sample_fps else 0
        hold_steps = round(REST_HOLD_S / TIME_STEP_S)
        max_steps = round(max_time_s / TIME_STEP_S)
        calm = 0
        step = 0
        settled = False
        while step < max_steps:
            if sample_every and step % sample_every == 0:
                snap = poses()
                trajectory.append((step * TIME_STEP_S, snap))
                if on_sample is not None:
                    on_sample(step * TIME_STEP_S, snap)
            pb.stepSimulation(physicsClientId=cid)
            step += 1
            if step % REST_CHECK_STEPS:
                continue
            moving = False
            for did in dice:
                lin, ang = pb.getBaseVelocity(did, physicsClientId=cid)
                if math.hypot(*lin) * 1000.0 > REST_LIN_MM_S or math.hypot(*ang) > REST_ANG_RAD_S:
                    moving = True
                    break
            calm = 0 if moving else calm + REST_CHECK_STEPS
            if calm >= hold_steps:
                settled = True
                break
        final = poses()
        if sample_every:
            trajectory.append((step * TIME_STEP_S, final))
        contacts = tuple(_contacts(pb, cid, i, dice, kinds, final, world) for i in range(len(dice)))
        return SimResult(final, contacts, settled, step * TIME_STEP_S, tuple(trajectory))
    finally:
        pb.disconnect(physicsClientId=cid)


def wall_boxes_m(
    layout: ThrowBoxLayout,
) -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """Centres and half extents (m) of the four walls standing just outside the felt rectangle."""
    w, d = layout.width_mm / 1000.0, layout.depth_mm / 1000.0
    t = WALL_THICKNESS_MM / 1000.0
    h = layout.wall_height_mm / 1000.0
    return [
        ((w / 2, -t / 2, h / 2), (w / 2 + t, t / 2, h / 2)),
        ((w / 2, d + t / 2, h / 2), (w / 2 + t, t / 2, h / 2)),
        ((-t / 2, d / 2, h / 2), (t / 2, d / 2, h / 2)),
        ((w + t / 2, d / 2, h / 2), (t / 2, d / 2, h / 2)),
    ]


def _contacts(
    pb: object,
    cid: int,
    index: int,
    dice: list[int],
    kinds: dict[int, str],
    poses: tuple[DiePose, ...],
    world: PhysicsWorld,
) -> DieContacts:
    """Classify what die `index` touches, and with which of its faces."""
    did = dice[index]
    pose = poses[index]
    rot = pose.rotation
    centre = np.asarray(pose.position_mm)
    lay = world.layout
    touches: set[str] = set()
    side_faces: set[int] = set()
    side_kinds: set[str] = set()
    below: set[int] = set()
    for c in pb.getContactPoints(bodyA=did, physicsClientId=cid):  # type: ignore[attr-defined]
        other = int(c[2])
        if float(c[8]) > 0.0005:  # separated by more than half a millimetre: not touching
            continue
        kind = kinds.get(other, "felt")
        pos_mm = np.asarray(c[5], dtype=np.float64) * 1000.0
        if kind == "felt" and not lay.box.contains(float(pos_mm[0]), float(pos_mm[1])):
            kind = "outside"
        touches.add(kind)
        # The push of the other body on this die (pybullet: the normal on B, pointing toward A).
        pressed_down = float(c[7][2]) < -PRESSED_DOWN_COS
        if kind in ("chips", "wall", "die") and not pressed_down:
            # The side resting on the object (`resting_side`: for an edge or corner contact, the lowest of
            # the faces next to it). A body that lies on this die (a die leaning on it from above) is not
            # something this die rests on, and gives it no resting side.
            side_faces.add(resting_side(rot, pos_mm - centre))
            side_kinds.add(kind)
        if kind == "die":
            j = dice.index(other)
            if centre[2] - poses[j].position_mm[2] > world.die_edge_mm / 2.0:
                below.add(j)
    return DieContacts(frozenset(touches), frozenset(side_faces), frozenset(side_kinds), tuple(sorted(below)))
