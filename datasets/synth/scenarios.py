"""Scenarios: how the dice get where they are (a throw, then possibly what happened next), in physics.

Each scenario returns a `ScenarioOutcome`: the static world, the simulation result of the final state, which
dice were kept in a layout box, and how many expected dice are missing from the picture. Whether the roll is
valid, void or invalid is NOT decided here: `datasets.synth.truth` reads it from the final physics state,
so a throw that went wrong by chance (a die bouncing out of a "normal" throw) is labelled as what it is, and
a die placed to lean on chips that slid down flat is labelled flat.

Scenarios that stage something after the throw (a die leaning on chips, a die on a die, a die off the
table, dice moved to a layout box) place the die and simulate again until everything is at rest, so the
final state is always one the physics accepts. Where a staging can fail by chance (the die slides off),
it is retried a few times with fresh draws; if every try fails the scene is the plain throw (with its chips),
and the note says "staging failed".

The dealer's move after the first roll (593.4(e)) comes right (`layout`) and wrong (`layout_wrong_box`,
`layout_missing`, `layout_extra`); each records the first roll and the move in `layout_move` (see
datasets.format), so a test knows what the right move was and what is wrong with this one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from calibration.layout import LAYOUT_ORDER, ThrowBoxLayout
from datasets.format import LayoutMoveError, LayoutMoveTruth
from datasets.synth.dice import FACE_NORMALS, FACES, flat_rotation, frame_rotation, matrix_to_quat
from datasets.synth.physics import (
    CHIP_HEIGHT_MM,
    CHIP_RADIUS_MM,
    WALL_THICKNESS_MM,
    ChipStack,
    DiePose,
    DieStart,
    PhysicsWorld,
    SimResult,
    simulate,
)
from datasets.synth.truth import PhysicalTruth, physical_truth

Rng = np.random.Generator
RANK: dict[int, int] = {1: 6, 6: 5, 5: 4, 4: 3, 3: 2, 2: 1}  # ace high, then 6 down to 2 (593.1)
RETRIES = 4


@dataclass(frozen=True)
class ScenarioOutcome:
    """The final physical state of a scene and the bookkeeping the ground truth needs."""

    scenario: str
    world: PhysicsWorld
    result: SimResult
    expected_dice: int
    kept: tuple[bool, ...]  # per simulated die: kept in its layout box from an earlier roll
    missing: int = 0  # expected dice that are not in the picture at all
    note: str = ""
    layout_move: LayoutMoveTruth | None = None  # the dealer's move after the first roll (layout scenarios)


def random_quat(rng: Rng) -> tuple[float, float, float, float]:
    """A uniformly random orientation (xyzw)."""
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def throw_starts(rng: Rng, layout: ThrowBoxLayout, n: int, *, speed: float = 1.0) -> tuple[DieStart, ...]:
    """The dice leaving the shaker together: a loose cluster above the dealer's side of the throw area."""
    area = layout.throw_area
    cx = rng.uniform(area.x0 + 150.0, area.x1 - 150.0) / 1000.0
    cy = (area.y0 + rng.uniform(30.0, 90.0)) / 1000.0
    cz = rng.uniform(0.08, 0.15)
    v = np.array([rng.uniform(-0.35, 0.35), rng.uniform(0.35, 1.1), rng.uniform(-0.6, 0.0)]) * speed
    cols = 4
    starts = []
    for i in range(n):
        r, c = divmod(i, cols)
        pos = (
            cx + (c - (cols - 1) / 2) * 0.023 + rng.uniform(-0.002, 0.002),
            cy + (r - 1) * 0.023 + rng.uniform(-0.002, 0.002),
            cz + rng.uniform(0.0, 0.01),
        )
        vel = v + rng.normal(0.0, 0.08, size=3)
        spin = rng.normal(0.0, 25.0, size=3) * speed
        lin = (float(vel[0]), float(vel[1]), float(vel[2]))
        ang = (float(spin[0]), float(spin[1]), float(spin[2]))
        starts.append(DieStart(pos, random_quat(rng), lin, ang))
    return tuple(starts)


def at_rest(pose: DiePose) -> DieStart:
    """A die that stays where it is (the start of a re-settling simulation)."""
    x, y, z = pose.position_mm
    return DieStart((x / 1000.0, y / 1000.0, z / 1000.0), pose.quat_xyzw)


def placed(centre_mm: tuple[float, float, float], rot: np.ndarray) -> DieStart:
    """A die put down by hand at `centre_mm` with orientation `rot`."""
    return DieStart(tuple(c / 1000.0 for c in centre_mm), matrix_to_quat(rot))  # type: ignore[arg-type]


def flat_die(
    rng: Rng,
    x_mm: float,
    y_mm: float,
    edge_mm: float,
    *,
    face: int | None = None,
    yaw_sd: float | None = None,
) -> DieStart:
    """A die put down flat (a random face up unless given), just above the felt."""
    f = int(rng.choice(FACES)) if face is None else face
    yaw = float(rng.uniform(0, 2 * np.pi)) if yaw_sd is None else float(rng.normal(0.0, yaw_sd))
    return placed((x_mm, y_mm, edge_mm / 2.0 + 0.3), flat_rotation(f, yaw))


def resettle(world: PhysicsWorld, poses: tuple[DiePose, ...], changes: dict[int, DieStart]) -> SimResult:
    """Start from resting `poses`, replace the dice in `changes`, and simulate until at rest again."""
    starts = tuple(changes.get(i, at_rest(p)) for i, p in enumerate(poses))
    return simulate(world, starts)


def _clear_of(poses: tuple[DiePose, ...], xy: tuple[float, float], radius: float, skip: set[int]) -> bool:
    return all(
        np.hypot(p.position_mm[0] - xy[0], p.position_mm[1] - xy[1]) >= radius
        for i, p in enumerate(poses)
        if i not in skip
    )


def _on_felt(world: PhysicsWorld, result: SimResult) -> list[int]:
    """Dice lying flat on the felt inside the throw area (candidates to stage something with)."""
    out = []
    for i, (p, c) in enumerate(zip(result.poses, result.contacts, strict=True)):
        t = physical_truth(p, c, world.layout)
        if not (t.off_table or t.cocked or t.stacked) and world.layout.throw_area.contains(
            *p.position_mm[:2]
        ):
            out.append(i)
    return out


def _stacks(rng: Rng, layout: ThrowBoxLayout, count: int, *, heights: tuple[int, int]) -> list[ChipStack]:
    """Chip stacks at random places in the throw area, not overlapping each other."""
    area = layout.throw_area
    stacks: list[ChipStack] = []
    while len(stacks) < count:
        x = float(rng.uniform(area.x0 + 60, area.x1 - 60))
        y = float(rng.uniform(area.y0 + 60, area.y1 - 60))
        if all(np.hypot(x - s.x_mm, y - s.y_mm) > 4 * CHIP_RADIUS_MM for s in stacks):
            stacks.append(ChipStack(x, y, int(rng.integers(heights[0], heights[1] + 1))))
    return stacks


Attempt = Callable[[list[int]], tuple[SimResult, str] | str | None]


def _staged(
    world: PhysicsWorld, first: SimResult, attempt: Attempt, *, min_candidates: int, failed: str
) -> tuple[SimResult, str]:
    """Stage something on a thrown roll: up to `RETRIES` tries, each given the dice lying flat on the felt.

    `attempt` returns the re-settled result and its note when the staging held, a note when it was tried and
    did not hold, or None when its draw did not fit (no room: draw again). With fewer than `min_candidates`
    flat dice, or when no try held, the scene is the plain throw with the last note (`failed` if none).
    """
    note = failed
    for _ in range(RETRIES):
        candidates = _on_felt(world, first)
        if len(candidates) < min_candidates:
            break
        outcome = attempt(candidates)
        if outcome is None:
            continue
        if isinstance(outcome, str):
            note = outcome
            continue
        return outcome
    return first, note


def normal(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """A plain throw of all the dice into the box."""
    world = PhysicsWorld(layout)
    result = simulate(world, throw_starts(rng, layout, n_dice))
    return ScenarioOutcome("normal", world, result, n_dice, (False,) * n_dice)


def leaning_start(
    stack: ChipStack, *, direction: np.ndarray, lean_deg: float, face: int, second: int, edge_mm: float
) -> tuple[DieStart, tuple[float, float]]:
    """A die with one bottom edge on the felt and its `face` resting on the stack's top rim.

    In the vertical plane through the stack centre along `direction` (from the stack toward the die), the
    resting face rises from the felt toward the stack at `lean_deg`; it meets the rim at height h when the
    die's bottom edge is h / tan(lean) beyond the rim. Leaning less than 45 degrees keeps the die's centre
    of mass over the stack side of that edge, so it stays leaning (the issue's note on falling back flat).
    """
    u = direction / np.linalg.norm(direction)
    z = np.array([0.0, 0.0, 1.0])
    th = np.radians(lean_deg)
    h = stack.height_mm
    d = h / np.tan(th)
    pivot = np.array([stack.x_mm, stack.y_mm, 0.0]) + (CHIP_RADIUS_MM + d) * u
    t3 = -np.cos(th) * u + np.sin(th) * z  # along the resting face, up toward the stack
    n3 = -np.sin(th) * u - np.cos(th) * z  # outward normal of the resting face (down, toward the stack)
    rot = frame_rotation(
        (
            np.asarray(FACE_NORMALS[face], dtype=np.float64),
            np.asarray(FACE_NORMALS[second], dtype=np.float64),
        ),
        (n3, t3),
    )
    centre = pivot + (edge_mm / 2.0) * (t3 - n3) + 0.2 * z
    return placed((float(centre[0]), float(centre[1]), float(centre[2])), rot), (
        float(centre[0]),
        float(centre[1]),
    )


def _random_face_pair(rng: Rng) -> tuple[int, int]:
    face = int(rng.choice(FACES))
    second = int(rng.choice([f for f in FACES if f not in (face, 7 - face)]))
    return face, second


def cocked(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """A die cocked on a stack of chips: one side resting on the chips (read by rule, 675a.4(c))."""
    lean_stack = _stacks(rng, layout, 1, heights=(1, 3))[0]
    others = [
        s
        for s in _stacks(rng, layout, int(rng.integers(1, 3)), heights=(1, 8))
        if np.hypot(s.x_mm - lean_stack.x_mm, s.y_mm - lean_stack.y_mm) > 4 * CHIP_RADIUS_MM
    ]
    world = PhysicsWorld(layout, chips=(lean_stack, *others))
    first = simulate(world, throw_starts(rng, layout, n_dice))
    edge = world.die_edge_mm

    def attempt(candidates: list[int]) -> tuple[SimResult, str] | str | None:
        die = int(rng.choice(candidates))
        h = lean_stack.height_mm
        lo = np.degrees(np.arcsin(min(0.95, (h + 2.0) / edge)))
        lean = float(rng.uniform(max(15.0, lo), 42.0))
        face, second = _random_face_pair(rng)
        ang = float(rng.uniform(0, 2 * np.pi))
        start, xy = leaning_start(
            lean_stack,
            direction=np.array([np.cos(ang), np.sin(ang), 0.0]),
            lean_deg=lean,
            face=face,
            second=second,
            edge_mm=edge,
        )
        if not _clear_of(first.poses, xy, 1.6 * edge, {die}) or not layout.box.contains(*xy):
            return None
        trial = resettle(world, first.poses, {die: start})
        t = physical_truth(trial.poses[die], trial.contacts[die], layout)
        if t.cocked and t.rests_on == "chips" and t.sides_resting == 1:
            return trial, f"die {die} leaning {lean:.0f} deg on {lean_stack.n_chips} chips"
        return "staging failed: the leaning die did not stay cocked"

    result, note = _staged(world, first, attempt, min_candidates=1, failed="staging failed: no die leaning")
    return ScenarioOutcome("cocked", world, result, n_dice, (False,) * n_dice, note=note)


def wedged(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """A die wedged edge-down between two chip stacks: two sides resting (void, 675a.4(c))."""
    area = layout.throw_area
    edge = layout.die_edge_mm
    n_chips = int(rng.integers(3, 6))
    h = n_chips * CHIP_HEIGHT_MM
    gap = float(rng.uniform(8.0, min(2 * h - 4.0, 18.0)))
    ang = float(rng.uniform(0, np.pi))
    u = np.array([np.cos(ang), np.sin(ang), 0.0])
    mid = np.array([rng.uniform(area.x0 + 90, area.x1 - 90), rng.uniform(area.y0 + 90, area.y1 - 90), 0.0])
    off = (CHIP_RADIUS_MM + gap / 2.0) * u
    a, b = mid + off, mid - off
    world = PhysicsWorld(
        layout,
        chips=(ChipStack(float(a[0]), float(a[1]), n_chips), ChipStack(float(b[0]), float(b[1]), n_chips)),
    )
    first = simulate(world, throw_starts(rng, layout, n_dice))

    def attempt(candidates: list[int]) -> tuple[SimResult, str] | str | None:
        die = int(rng.choice(candidates))
        if not _clear_of(first.poses, (float(mid[0]), float(mid[1])), 1.6 * edge, {die}):
            return None
        # Edge down: the two faces adjacent to the bottom edge look down-and-out at +-45 degrees.
        tilt = np.radians(45.0 + rng.normal(0.0, 4.0))
        z = np.array([0.0, 0.0, 1.0])
        n1 = np.cos(tilt) * u - np.sin(tilt) * z
        n2 = -np.sin(tilt) * u - np.cos(tilt) * z  # the other face of the V, in the same vertical plane
        face, second = _random_face_pair(rng)
        rot = frame_rotation(
            (
                np.asarray(FACE_NORMALS[face], dtype=np.float64),
                np.asarray(FACE_NORMALS[second], dtype=np.float64),
            ),
            (n1, n2),
        )
        bottom = h - gap / 2.0 + 1.0  # the bottom edge just above where the faces meet the rims
        centre = mid + np.array([0.0, 0.0, bottom + edge / np.sqrt(2.0)])
        trial = resettle(
            world, first.poses, {die: placed((float(centre[0]), float(centre[1]), float(centre[2])), rot)}
        )
        t = physical_truth(trial.poses[die], trial.contacts[die], layout)
        if t.cocked and t.sides_resting > 1:
            return trial, f"die {die} wedged between two stacks of {n_chips} chips, gap {gap:.1f} mm"
        return "staging failed: the die did not stay wedged"

    result, note = _staged(world, first, attempt, min_candidates=1, failed="staging failed: no die wedged")
    return ScenarioOutcome("wedged", world, result, n_dice, (False,) * n_dice, note=note)


def stacked(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """One die resting on top of another (invalid, 675a.4(b))."""
    world = PhysicsWorld(layout)
    first = simulate(world, throw_starts(rng, layout, n_dice))
    edge = world.die_edge_mm

    def attempt(candidates: list[int]) -> tuple[SimResult, str] | str | None:
        base, top = (int(v) for v in rng.choice(candidates, size=2, replace=False))
        bx, by, bz = first.poses[base].position_mm
        off = rng.uniform(-3.5, 3.5, size=2)
        start = flat_die(rng, bx + float(off[0]), by + float(off[1]), edge)
        start = replace(
            start, position_m=(start.position_m[0], start.position_m[1], (bz + edge + 0.5) / 1000.0)
        )
        trial = resettle(world, first.poses, {top: start})
        if physical_truth(trial.poses[top], trial.contacts[top], layout).stacked:
            return trial, f"die {top} on die {base}"
        return "staging failed: the top die slid off"

    result, note = _staged(world, first, attempt, min_candidates=2, failed="staging failed: no die on a die")
    return ScenarioOutcome("stacked", world, result, n_dice, (False,) * n_dice, note=note)


def propped_start(
    support: DiePose,
    *,
    side: int,
    lean_deg: float,
    face: int,
    second: int,
    edge_mm: float,
    gap_mm: float = 0.3,
) -> tuple[DieStart, tuple[float, float]]:
    """A die propped against the flat die `support`, facing its `side` (0-3: one of its four side faces).

    The propped die's bottom face rises toward the support at `lean_deg`, from a bottom edge on the felt to
    an upper edge that touches the support's side face (at height edge * sin(lean), under the support's
    top). `face` is the bottom face and `second` the face above that edge, looking at the support. Set at 30
    degrees a die slides down flat on this felt, at 40 it stays (`tests/datasets/test_truth_physics.py`).
    """
    rot_s = support.rotation
    # The support's side faces: its face normals that lie in the felt plane; `side` picks one of them.
    horizontal = [
        n
        for n in (rot_s @ np.asarray(v, dtype=np.float64) for v in FACE_NORMALS.values())
        if abs(float(n[2])) < 0.5
    ]
    u = horizontal[side % len(horizontal)].copy()
    u[2] = 0.0
    u /= np.linalg.norm(u)  # from the support toward the propped die
    th = np.radians(lean_deg)
    z = np.array([0.0, 0.0, 1.0])
    toward = -u
    bottom = (
        np.sin(th) * toward - np.cos(th) * z
    )  # outward normal of the bottom face: down, toward the support
    upper = np.cos(th) * toward + np.sin(th) * z  # the face above the touching edge
    rot = frame_rotation(
        (
            np.asarray(FACE_NORMALS[face], dtype=np.float64),
            np.asarray(FACE_NORMALS[second], dtype=np.float64),
        ),
        (bottom, upper),
    )
    sx, sy, _ = support.position_mm
    pivot = np.array([sx, sy, 0.0]) + u * (edge_mm / 2.0 + gap_mm + edge_mm * np.cos(th))
    centre = pivot + (edge_mm / 2.0) * (np.cos(th) * toward + np.sin(th) * z) - (edge_mm / 2.0) * bottom
    centre[2] += 0.1
    return placed((float(centre[0]), float(centre[1]), float(centre[2])), rot), (
        float(centre[0]),
        float(centre[1]),
    )


def propped(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """A die propped against another die after the throw (cocked on one side: read by rule, 675a.4(c)).

    Ordinary throws leave one now and then (`throwbox lab eval --verdicts` counts 2 cocked dice in
    tune-s1200's 1,000 normal throws, both read by a face the relabelled truth shows propped on a die), and
    the die-state model, trained on dice leaning on chips, called them flat; this stages them. The truth reads
    such a die by its uppermost face (`datasets.synth.dice.resting_side`).
    """
    world = PhysicsWorld(layout)
    first = simulate(world, throw_starts(rng, layout, n_dice))
    edge = world.die_edge_mm

    def attempt(candidates: list[int]) -> tuple[SimResult, str] | str | None:
        base, die = (int(v) for v in rng.choice(candidates, size=2, replace=False))
        lean = float(rng.uniform(36.0, 44.0))
        face, second = _random_face_pair(rng)
        start, xy = propped_start(
            first.poses[base],
            side=int(rng.integers(4)),
            lean_deg=lean,
            face=face,
            second=second,
            edge_mm=edge,
        )
        if not _clear_of(first.poses, xy, 1.6 * edge, {die, base}) or not layout.throw_area.contains(*xy):
            return None
        trial = resettle(world, first.poses, {die: start})
        t = physical_truth(trial.poses[die], trial.contacts[die], layout)
        if t.cocked and t.rests_on == "die" and t.sides_resting == 1:
            return trial, f"die {die} propped {t.tilt_deg:.0f} deg against die {base}"
        return "staging failed: the propped die did not stay cocked"

    result, note = _staged(world, first, attempt, min_candidates=2, failed="staging failed: no die propped")
    return ScenarioOutcome("propped", world, result, n_dice, (False,) * n_dice, note=note)


def off_table(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """A die off the table (beyond the walls, in view) or missing from the picture (invalid, 675a.4(b))."""
    world = PhysicsWorld(layout)
    first = simulate(world, throw_starts(rng, layout, n_dice))
    edge = world.die_edge_mm
    die = int(rng.integers(n_dice))
    if rng.random() < 0.3:
        poses = tuple(p for i, p in enumerate(first.poses) if i != die)
        contacts = tuple(c for i, c in enumerate(first.contacts) if i != die)
        result = replace(first, poses=poses, contacts=contacts)
        return ScenarioOutcome(
            "off_table", world, result, n_dice, (False,) * (n_dice - 1), missing=1, note="a die is missing"
        )
    # Beyond one of the walls, on the table around the box, close enough to be in the picture.
    beyond = WALL_THICKNESS_MM + edge / 2.0 + float(rng.uniform(3.0, 18.0))
    side = int(rng.integers(4))
    w, d = layout.width_mm, layout.depth_mm
    along = float(rng.uniform(0.1, 0.9))
    x, y = [(along * w, -beyond), (along * w, d + beyond), (-beyond, along * d), (w + beyond, along * d)][
        side
    ]
    result = resettle(world, first.poses, {die: flat_die(rng, x, y, edge)})
    return ScenarioOutcome(
        "off_table", world, result, n_dice, (False,) * n_dice, note=f"die {die} beyond wall {side}"
    )


def cluster(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """Several dice touching one another in a tight group (flat, readable: the detector must split them)."""
    world = PhysicsWorld(layout)
    first = simulate(world, throw_starts(rng, layout, n_dice))
    edge = world.die_edge_mm
    k = int(rng.integers(3, min(6, n_dice) + 1))
    members = [int(v) for v in rng.choice(n_dice, size=k, replace=False)]
    area = layout.throw_area
    cx = float(rng.uniform(area.x0 + 80, area.x1 - 80))
    cy = float(rng.uniform(area.y0 + 80, area.y1 - 80))
    yaw = float(rng.uniform(0, np.pi / 2))
    cols = 2 if k <= 4 else 3
    pitch = edge + float(rng.uniform(0.05, 0.6))
    c, s = np.cos(yaw), np.sin(yaw)
    changes = {}
    for j, die in enumerate(members):
        r, q = divmod(j, cols)
        lx, ly = (q - (cols - 1) / 2) * pitch, (r - 0.5) * pitch
        x, y = cx + c * lx - s * ly, cy + s * lx + c * ly
        rot = flat_rotation(int(rng.choice(FACES)), yaw + float(rng.normal(0, 0.02)))
        changes[die] = placed((x, y, edge / 2.0 + 0.3), rot)
    # Dice of the throw that lie where the group goes are moved aside first.
    poses = list(first.poses)
    for i, p in enumerate(poses):
        if i not in changes and np.hypot(p.position_mm[0] - cx, p.position_mm[1] - cy) < 3.5 * edge:
            nx = float(rng.uniform(area.x0 + 30, area.x1 - 30))
            ny = area.y1 - 30.0 if cy < (area.y0 + area.y1) / 2 else area.y0 + 30.0
            changes[i] = flat_die(rng, nx, ny, edge)
    result = resettle(world, tuple(poses), changes)
    return ScenarioOutcome("cluster", world, result, n_dice, (False,) * n_dice, note=f"{k} dice touching")


def winning_face(faces: list[int]) -> int:
    """Pip Street winner: the most frequent face, ties to the higher rank (ace > 6 > ... > 2)."""
    if not faces:
        raise ValueError("no faces")
    return max(set(faces), key=lambda f: (faces.count(f), RANK[f]))


def layout_slots(layout: ThrowBoxLayout, face: int, count: int, pitch: float) -> list[tuple[float, float]]:
    """Grid positions for `count` dice inside the layout box of `face` (three to a row)."""
    rect = layout.layout_boxes()[face]
    cx, cy = rect.centre
    cols = min(3, count)
    rows = (count + cols - 1) // cols
    return [
        (cx + ((j % cols) - (cols - 1) / 2) * pitch, cy + ((j // cols) - (rows - 1) / 2) * pitch)
        for j in range(count)
    ]


def dice_in_box(
    rng: Rng, layout: ThrowBoxLayout, box: int, faces: dict[int, int], edge: float
) -> dict[int, DieStart]:
    """Flat dice in the layout box of face `box`, three to a row (`faces`: die index -> face shown)."""
    slots = layout_slots(layout, box, len(faces), edge + 2.5)
    return {
        die: flat_die(
            rng,
            x + float(rng.uniform(-0.5, 0.5)),
            y + float(rng.uniform(-0.5, 0.5)),
            edge,
            face=face,
            yaw_sd=0.06,
        )
        for (die, face), (x, y) in zip(faces.items(), slots, strict=True)
    }


def layout_moved(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """After the first roll the dealer moves the winning dice into their labelled layout box (675a.4(e))."""
    world = PhysicsWorld(layout)
    first = simulate(world, throw_starts(rng, layout, n_dice))
    truths = [physical_truth(p, c, layout) for p, c in zip(first.poses, first.contacts, strict=True)]
    faces = [t.face for t in truths if t.face is not None and not t.cocked]
    edge = world.die_edge_mm
    if not faces:
        return ScenarioOutcome("layout", world, first, n_dice, (False,) * n_dice, note="no readable die")
    win = winning_face(faces)
    movers = [i for i, t in enumerate(truths) if t.face == win and not t.cocked and not t.off_table][:9]
    changes = dice_in_box(rng, layout, win, dict.fromkeys(movers, win), edge)
    result = resettle(world, first.poses, changes)
    record = None
    if _clean_first_roll(truths) and len(movers) == faces.count(win):
        record = LayoutMoveTruth(
            first_faces=tuple(t.face for t in truths),
            winner=win,
            match_count=len(movers),
            moved_to=win,
            moved=tuple(movers),
            error="none",
        )
    return ScenarioOutcome(
        "layout",
        world,
        result,
        n_dice,
        (False,) * n_dice,
        note=f"{len(movers)} x {win} moved to its box",
        layout_move=record,
    )


def _clean_first_roll(truths: list[PhysicalTruth]) -> bool:
    """A valid first roll with every die flat in the throw area: the only kind a dealer moves dice after."""
    return all(
        t.face is not None and not (t.cocked or t.stacked or t.off_table) and t.layout_box is None
        for t in truths
    )


MAX_IN_BOX = 9  # a layout box holds three rows of three dice (`layout_slots`)


def _wrong_move(rng: Rng, layout: ThrowBoxLayout, n_dice: int, error: LayoutMoveError) -> ScenarioOutcome:
    """The dealer's move done wrong after a valid first roll; `layout_move` records both moves.

    - "wrong_box": every winning die goes into the box of another face;
    - "missing": one winning die is left in the throw area;
    - "extra": a die of another face goes into the winner's box with the winning dice.
    The first throw is redrawn (up to RETRIES times) until it is a valid roll with 2..8 winning dice, so
    each error can be staged and the box has room; the move is redone until every moved die rests flat in
    the box it was put in, showing the face it showed. If either fails the scene is the plain throw.
    """
    name = {"wrong_box": "layout_wrong_box", "missing": "layout_missing", "extra": "layout_extra"}[error]
    world = PhysicsWorld(layout)
    edge = world.die_edge_mm
    for _ in range(RETRIES):
        first = simulate(world, throw_starts(rng, layout, n_dice))
        truths = [physical_truth(p, c, layout) for p, c in zip(first.poses, first.contacts, strict=True)]
        faces = [int(t.face) for t in truths if t.face is not None]
        if _clean_first_roll(truths) and 2 <= faces.count(winning_face(faces)) < MAX_IN_BOX:
            break
    else:
        return ScenarioOutcome(
            name, world, first, n_dice, (False,) * n_dice, note="staging failed: no valid first roll"
        )
    win = winning_face(faces)
    winners = [i for i, t in enumerate(truths) if t.face == win]
    box, moved = win, list(winners)
    if error == "wrong_box":
        box = int(rng.choice([f for f in LAYOUT_ORDER if f != win]))
    elif error == "missing":
        moved.remove(int(rng.choice(winners)))
    else:
        others = [i for i, t in enumerate(truths) if t.face != win]
        moved.insert(int(rng.integers(len(moved) + 1)), int(rng.choice(others)))
    shown = {i: int(truths[i].face or 0) for i in moved}
    result, note, record = first, "staging failed: a moved die did not rest flat in the box", None
    for _ in range(RETRIES):
        changes = dice_in_box(rng, layout, box, {die: shown[die] for die in moved}, edge)
        trial = resettle(world, first.poses, changes)
        after = [physical_truth(p, c, layout) for p, c in zip(trial.poses, trial.contacts, strict=True)]
        if all(
            (t.layout_box, t.face) == ((box, shown[i]) if i in shown else (None, truths[i].face))
            and not (t.cocked or t.stacked)
            for i, t in enumerate(after)
        ):
            record = LayoutMoveTruth(
                first_faces=tuple(t.face for t in truths),
                winner=win,
                match_count=len(winners),
                moved_to=box,
                moved=tuple(sorted(moved)),
                error=error,
            )
            result, note = (
                trial,
                f"{len(winners)} x {win}: {len(moved)} dice moved to the box of {box} ({error})",
            )
            break
    return ScenarioOutcome(name, world, result, n_dice, (False,) * n_dice, note=note, layout_move=record)


def layout_wrong_box(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """The dealer moves the winning dice into another face's layout box (a dealer error, 593.4(e))."""
    return _wrong_move(rng, layout, n_dice, "wrong_box")


def layout_missing(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """The dealer leaves one winning die in the throw area (a dealer error, 593.4(e))."""
    return _wrong_move(rng, layout, n_dice, "missing")


def layout_extra(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """The dealer moves a die of another face into the winner's box too (a dealer error, 593.4(e))."""
    return _wrong_move(rng, layout, n_dice, "extra")


def extra_roll(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """The Extra Roll: the kept dice sit in their layout box, the others are thrown again (675a.4(g))."""
    edge = layout.die_edge_mm
    face = int(rng.choice(FACES))
    k = int(rng.integers(2, min(6, n_dice - 1) + 1))
    world = PhysicsWorld(layout)
    kept = tuple(dice_in_box(rng, layout, face, dict.fromkeys(range(k), face), edge).values())
    thrown = throw_starts(rng, layout, n_dice - k)
    result = simulate(world, kept + thrown)
    flags = (True,) * k + (False,) * (n_dice - k)
    return ScenarioOutcome("extra_roll", world, result, n_dice, flags, note=f"kept {k} x {face}")


SCENARIO_FUNCS: dict[str, Callable[[Rng, ThrowBoxLayout, int], ScenarioOutcome]] = {
    "normal": normal,
    "cocked": cocked,
    "propped": propped,
    "wedged": wedged,
    "stacked": stacked,
    "off_table": off_table,
    "cluster": cluster,
    "layout": layout_moved,
    "extra_roll": extra_roll,
    "layout_wrong_box": layout_wrong_box,
    "layout_missing": layout_missing,
    "layout_extra": layout_extra,
}
