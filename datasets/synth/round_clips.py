"""A whole High Roll Dice round as rendered clips: the first roll, the dealer's move, the Extra Roll.

One round (58 Pa. Code 593.4(e), (g), (h); 675a.4) seen by one top-down camera, as short clips that follow
one another without a cut (the same camera, felt, light and dice; each clip starts where the last one left
the dice):

    first.mp4            the empty box; the shaker comes in over the dealer's edge; the throw; rest
    move_<kind>.mp4      from the settled first roll: the dealer's hand comes in over the edge, picks up
                         dice, carries them to a layout box, sets them down and leaves; the dice still.
                         One clip per kind of move (`MOVES`): the right move, the wrong box, a winning die
                         left behind, a die of another face moved in too (the errors of the
                         `layout_wrong_box/missing/extra` scenarios of datasets.synth.scenarios)
    extra.mp4            from the right move: the hand, holding the shaker, collects the dice left in the
                         throw area; they are thrown again and roll to rest; the kept dice stay in their box
    round.json           the truth (format `throwbox-round/1`, below)

The physics is pybullet's (datasets.synth.physics); the dealer's hand and the shaker are kinematic solids
(`Slab`) drawn over the rendered frame by projecting them with the clip's camera (the renderer draws only
dice, felt and walls: a flat-shaded solid is all a settle detector or a reader needs to see of a hand),
and a die being carried moves with the hand (its pose interpolated, hidden under the palm). The dice of a
move are put down in their box (`dice_in_box`) and left to settle in the physics before the clip is drawn,
so every final state is one the physics accepts.

`round.json`::

    {"format": "throwbox-round/1", "round_id", "seed", "index", "fps", "expected_dice",
     "first_roll": {"clip", "frames", "release_frame", "at_rest_frame", "faces", "winner", "match_count",
                    "final": <scene document of the last frame (datasets.format)>},
     "moves": {"<kind>": {"clip", "frames", "hand_frames": [first, last], "layout_move": {...},
                          "final": <scene document>}},
     "extra_roll": {"clip", "after": "correct", "frames", "release_frame", "at_rest_frame", "kept",
                    "thrown", "thrown_faces", "new_matches", "final_count", "final": <scene document>}}

`at_rest_frame` is the first frame from which no die moves (as in datasets.synth.video); `hand_frames` are
the first and last frames with the hand in the picture; die ids are the same in every clip.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera
from calibration.layout import LAYOUT_ORDER, ThrowBoxLayout
from datasets.format import LayoutMoveError, LayoutMoveTruth, layout_move_to_dict, scene_to_dict
from datasets.synth.generator import GeneratorConfig, SceneLookDraw, build_truth, draw_look, scene_rng
from datasets.synth.physics import (
    REST_ANG_RAD_S,
    REST_LIN_MM_S,
    DiePose,
    DieStart,
    PhysicsWorld,
    SimResult,
    simulate,
)
from datasets.synth.randomise import degrade
from datasets.synth.render import RenderOutput, SceneRenderer
from datasets.synth.scenarios import ScenarioOutcome, at_rest, dice_in_box, throw_starts, winning_face
from datasets.synth.truth import PhysicalTruth, physical_truth
from datasets.synth.video import motion

ROUND_FORMAT = "throwbox-round/1"
ROUND_INDEX_OFFSET = 2_000_000  # rounds draw from their own streams, never those of scenes or videos
MoveKind = Literal["correct", "wrong_box", "missing", "extra"]
MOVES: tuple[MoveKind, ...] = ("correct", "wrong_box", "missing", "extra")
ATTEMPTS = 12  # first throws (and rethrows) drawn before a round is given up
MAX_IN_BOX = 9  # a layout box holds three rows of three dice (scenarios.layout_slots)

SKIN_BGR = (120, 150, 205)
SLEEVE_BGR = (70, 45, 35)
SHAKER_BGR = (40, 38, 45)
HAND_SPEED_MM_S = 900.0
PALM_Z_MM = 45.0  # palm centre above the felt while working in the box
OUTSIDE_Y_MM = -260.0  # where the hand comes from and goes back to (beyond the dealer's wall)
OUTSIDE_Z_MM = 140.0  # over the wall (60 mm) on the way in and out
WITHDRAW_FRAMES = 3  # frames the shaker takes to leave the box after the release


class RoundStagingError(RuntimeError):
    """No first throw (or rethrow) of this round could be staged as a clean round in `ATTEMPTS` tries."""


# ------------------------------------------------------------------------------------------- the hand
@dataclass(frozen=True)
class Slab:
    """A solid box drawn over a frame: axis from `a_mm` to `b_mm`, `half_width_mm` across it in the felt
    plane, `half_height_mm` up and down."""

    a_mm: tuple[float, float, float]
    b_mm: tuple[float, float, float]
    half_width_mm: float
    half_height_mm: float
    bgr: tuple[int, int, int]

    def corners_mm(self) -> NDArray[np.float64]:
        """The 8 corners (mm)."""
        a, b = np.asarray(self.a_mm, np.float64), np.asarray(self.b_mm, np.float64)
        axis = b[:2] - a[:2]
        length = float(np.hypot(*axis))
        across = np.array([1.0, 0.0]) if length < 1e-6 else np.array([-axis[1], axis[0]]) / length
        side = np.array([across[0], across[1], 0.0]) * self.half_width_mm
        up = np.array([0.0, 0.0, self.half_height_mm])
        return np.array([p + s * side + u * up for p in (a, b) for s in (-1, 1) for u in (-1, 1)])


Hand = tuple[Slab, ...]


def hand_at(x_mm: float, y_mm: float, z_mm: float, *, shaker: bool = False) -> Hand:
    """The dealer's arm reaching from beyond the dealer's wall to a palm (or the shaker) at (x, y, z)."""
    shoulder = (300.0 + 0.4 * (x_mm - 300.0), -480.0, 320.0)
    wrist = (x_mm, y_mm - 70.0, z_mm + 15.0)
    sleeve = Slab(shoulder, wrist, 45.0, 40.0, SLEEVE_BGR)
    if shaker:
        cup = Slab((x_mm, y_mm - 65.0, z_mm), (x_mm, y_mm + 65.0, z_mm), 62.0, 50.0, SHAKER_BGR)
        return (sleeve, cup)
    palm = Slab(wrist, (x_mm, y_mm + 60.0, z_mm), 52.0, 15.0, SKIN_BGR)
    return (sleeve, palm)


def draw_hand(image: NDArray[np.uint8], camera: Camera, hand: Hand) -> NDArray[np.uint8]:
    """Paint the hand's solids over a rendered frame (projected with `camera`, later solids on top)."""
    out = image.copy()
    for slab in hand:
        px = camera.project(slab.corners_mm())
        hull = cv2.convexHull(np.round(px).astype(np.int32))
        cv2.fillConvexPoly(out, hull, slab.bgr, lineType=cv2.LINE_AA)
        edge = tuple(int(c * 0.7) for c in slab.bgr)
        cv2.polylines(out, [hull], True, edge, 2, lineType=cv2.LINE_AA)
    return out


def hand_path(
    waypoints: list[tuple[float, float, float]], fps: float, speed_mm_s: float = HAND_SPEED_MM_S
) -> list[tuple[float, float, float]]:
    """Positions at each frame moving at constant speed through `waypoints` (the last one included)."""
    step = speed_mm_s / fps
    out: list[tuple[float, float, float]] = [waypoints[0]]
    for a, b in itertools.pairwise(waypoints):
        pa, pb = np.asarray(a), np.asarray(b)
        n = max(1, int(np.ceil(float(np.linalg.norm(pb - pa)) / step)))
        out.extend(tuple(float(v) for v in pa + (pb - pa) * k / n) for k in range(1, n + 1))  # type: ignore[misc]
    return out


# ------------------------------------------------------------------------------------------ the physics
@dataclass(frozen=True)
class Shot:
    """One frame to draw: the dice in the picture (ids and poses) and the hand (empty: none)."""

    dice: tuple[int, ...]
    poses: tuple[DiePose, ...]
    hand: Hand = ()


@dataclass(frozen=True)
class Move:
    """One dealer's move: where the dice went and the physics after it."""

    kind: MoveKind
    box: int
    moved: tuple[int, ...]
    result: SimResult
    truth: LayoutMoveTruth


@dataclass(frozen=True)
class RoundPlan:
    """The physics of a whole round, before anything is drawn."""

    world: PhysicsWorld
    first: SimResult  # with its trajectory
    first_truths: tuple[PhysicalTruth, ...]
    winner: int
    moves: dict[MoveKind, Move]
    extra: SimResult  # the rethrow after the right move, with its trajectory
    kept: tuple[int, ...]
    thrown: tuple[int, ...]


def _truths(result: SimResult, layout: ThrowBoxLayout) -> list[PhysicalTruth]:
    return [physical_truth(p, c, layout) for p, c in zip(result.poses, result.contacts, strict=True)]


def _clean(t: PhysicalTruth) -> bool:
    return t.face is not None and not (t.cocked or t.stacked or t.off_table)


def _stage_move(
    rng: np.random.Generator,
    world: PhysicsWorld,
    first: SimResult,
    truths: list[PhysicalTruth],
    kind: MoveKind,
) -> Move | None:
    """The move of `kind` (the same choices as scenarios._wrong_move), settled; None if a die did not
    rest flat in the box it was put in showing the face it showed."""
    faces = [int(t.face or 0) for t in truths]
    win = winning_face(faces)
    winners = [i for i, f in enumerate(faces) if f == win]
    box, moved = win, list(winners)
    if kind == "wrong_box":
        box = int(rng.choice([f for f in LAYOUT_ORDER if f != win]))
    elif kind == "missing":
        moved.remove(int(rng.choice(winners)))
    elif kind == "extra":
        others = [i for i, f in enumerate(faces) if f != win]
        moved.insert(int(rng.integers(len(moved) + 1)), int(rng.choice(others)))
    layout = world.layout
    for _ in range(4):
        changes = dice_in_box(rng, layout, box, {d: faces[d] for d in moved}, world.die_edge_mm)
        result = simulate(world, tuple(changes.get(i, at_rest(p)) for i, p in enumerate(first.poses)))
        after = _truths(result, layout)
        if result.settled and all(
            (t.layout_box, t.face) == ((box, faces[i]) if i in moved else (None, faces[i]))
            and not (t.cocked or t.stacked)
            for i, t in enumerate(after)
        ):
            error: LayoutMoveError = "none" if kind == "correct" else kind
            truth = LayoutMoveTruth(
                first_faces=tuple(faces),
                winner=win,
                match_count=len(winners),
                moved_to=box,
                moved=tuple(sorted(moved)),
                error=error,
            )
            return Move(kind, box, tuple(moved), result, truth)
    return None


def plan_round(cfg: GeneratorConfig, index: int, fps: float = 30.0) -> RoundPlan:
    """Simulate round `index` of `cfg`: a clean first roll, every move of `MOVES`, and the Extra Roll.

    The first throw is redrawn until it is valid with every die flat in the throw area and 2..8 dice of
    the winning face (so each wrong move can be staged and the box has room) and every move settles as
    staged; the rethrow is redrawn until the kept dice stay in their box and every rethrown die rests flat
    in the throw area (a die rolling into a layout box is another test). Raises `RoundStagingError`.
    """
    rng = scene_rng(cfg.seed, ROUND_INDEX_OFFSET + index, 0)
    layout, n = cfg.layout, cfg.n_dice
    world = PhysicsWorld(layout)
    for _ in range(ATTEMPTS):
        first = simulate(world, throw_starts(rng, layout, n), sample_fps=fps)
        truths = _truths(first, layout)
        if not (first.settled and all(_clean(t) and t.layout_box is None for t in truths)):
            continue
        faces = [int(t.face or 0) for t in truths]
        win = winning_face(faces)
        if not 2 <= faces.count(win) < MAX_IN_BOX:
            continue
        moves = {kind: _stage_move(rng, world, first, truths, kind) for kind in MOVES}
        staged = {k: m for k, m in moves.items() if m is not None}
        if len(staged) == len(MOVES):
            break
    else:
        raise RoundStagingError(f"round {index} (seed {cfg.seed}): no clean first roll in {ATTEMPTS} throws")
    right = staged["correct"]
    kept = tuple(sorted(right.moved))
    thrown = tuple(i for i in range(n) if i not in kept)
    for _ in range(ATTEMPTS):
        throws = iter(throw_starts(rng, layout, len(thrown)))
        starts: tuple[DieStart, ...] = tuple(
            at_rest(p) if i in kept else next(throws) for i, p in enumerate(right.result.poses)
        )
        extra = simulate(world, starts, sample_fps=fps)
        after = _truths(extra, layout)
        if extra.settled and all(
            _clean(t) and (t.layout_box, t.face) == (win, win)
            if i in kept
            else _clean(t) and t.layout_box is None
            for i, t in enumerate(after)
        ):
            return RoundPlan(world, first, tuple(truths), win, staged, extra, kept, thrown)
    raise RoundStagingError(f"round {index} (seed {cfg.seed}): no clean Extra Roll in {ATTEMPTS} rethrows")


# --------------------------------------------------------------------------------------- choreography
def _still(n_frames: int, poses: tuple[DiePose, ...]) -> list[Shot]:
    ids = tuple(range(len(poses)))
    return [Shot(ids, poses) for _ in range(n_frames)]


def _greedy_order(start: tuple[float, float], points: dict[int, tuple[float, float]]) -> list[int]:
    """Visit order: always the nearest die not yet visited."""
    left, here, order = dict(points), np.asarray(start), []
    while left:
        nxt = min(left, key=lambda k: float(np.hypot(*(np.asarray(left[k]) - here))))
        order.append(nxt)
        here = np.asarray(left.pop(nxt))
    return order


def _release(
    trajectory: tuple[tuple[float, tuple[DiePose, ...]], ...], cup: tuple[float, float, float]
) -> list[Shot]:
    """The throw from release to rest (every die, as simulated), the shaker pulled back out over the
    dealer's wall in the first `WITHDRAW_FRAMES` frames."""
    exit_to = (cup[0], OUTSIDE_Y_MM - 150.0, OUTSIDE_Z_MM + 120.0)
    shots = []
    for k, (_, poses) in enumerate(trajectory):
        hand: Hand = ()
        if k < WITHDRAW_FRAMES:
            f = (k + 1) / WITHDRAW_FRAMES
            x, y, z = (c + (e - c) * f for c, e in zip(cup, exit_to, strict=True))
            hand = hand_at(x, y, z, shaker=True)
        shots.append(Shot(tuple(range(len(poses))), poses, hand))
    return shots


def first_roll_shots(plan: RoundPlan, fps: float) -> tuple[list[Shot], int]:
    """The empty box, the shaker coming in, the throw, rest; and the release frame."""
    t0 = plan.first.trajectory[0][1]
    cx = float(np.mean([p.position_mm[0] for p in t0]))
    cy = float(np.mean([p.position_mm[1] for p in t0]))
    cup = (cx, cy, 120.0)
    shots = [Shot((), ()) for _ in range(round(0.5 * fps))]  # the empty box (the detector learns it)
    for pos in hand_path([(cx, OUTSIDE_Y_MM, OUTSIDE_Z_MM + 60.0), cup, cup, cup], fps):
        shots.append(Shot((), (), hand_at(*pos, shaker=True)))
    release = len(shots)
    shots += _release(plan.first.trajectory, cup)
    shots += _still(round(0.6 * fps), plan.first.poses)
    return shots, release


def move_shots(plan: RoundPlan, move: Move, fps: float) -> list[Shot]:
    """From the settled first roll: the hand picks up `move.moved`, carries them to the box, leaves."""
    first = plan.first.poses
    n = len(first)
    final = move.result.poses
    bx, by = plan.world.layout.layout_boxes()[move.box].centre
    entry = (bx, OUTSIDE_Y_MM)
    order = _greedy_order(entry, {i: (first[i].position_mm[0], first[i].position_mm[1]) for i in move.moved})
    shots = _still(round(0.2 * fps), first)
    carried: list[int] = []
    pose = dict(enumerate(first))

    def shot(pos: tuple[float, float, float]) -> Shot:
        for j, die in enumerate(carried):  # under the palm, three to a row
            ox, oy = ((j % 3) - 1) * 21.0, ((j // 3) - 1) * 21.0
            pose[die] = DiePose((pos[0] + ox, pos[1] + oy, 28.0), first[die].quat_xyzw)
        return Shot(tuple(range(n)), tuple(pose[i] for i in range(n)), hand_at(*pos))

    here = (entry[0], entry[1], OUTSIDE_Z_MM)
    for die in order:
        x, y, _ = first[die].position_mm
        target = (x, y, PALM_Z_MM)
        shots += [shot(p) for p in hand_path([here, target], fps)[1:]]
        carried.append(die)
        here = target
    over_box = (bx, by, PALM_Z_MM)
    shots += [shot(p) for p in hand_path([here, over_box], fps)[1:]]
    carried.clear()
    pose = dict(enumerate(final))  # set down: the settled poses in the box
    shots += [shot(over_box) for _ in range(3)]
    shots += [shot(p) for p in hand_path([over_box, (bx, OUTSIDE_Y_MM, OUTSIDE_Z_MM)], fps)[1:]]
    shots += _still(round(0.7 * fps), final)
    return shots


def extra_roll_shots(plan: RoundPlan, fps: float) -> tuple[list[Shot], int]:
    """From the right move: the hand with the shaker collects the other dice, throws them; rest."""
    start = plan.moves["correct"].result.poses
    t0 = dict(zip(plan.thrown, (plan.extra.trajectory[0][1][i] for i in plan.thrown), strict=True))
    cx = float(np.mean([p.position_mm[0] for p in t0.values()]))
    cy = float(np.mean([p.position_mm[1] for p in t0.values()]))
    cup = (cx, cy, 120.0)
    order = _greedy_order(
        (cx, OUTSIDE_Y_MM), {i: (start[i].position_mm[0], start[i].position_mm[1]) for i in plan.thrown}
    )
    shots = _still(round(0.2 * fps), start)
    on_felt = dict(enumerate(start))
    here = (cx, OUTSIDE_Y_MM, OUTSIDE_Z_MM + 60.0)
    for die in order:
        x, y, _ = start[die].position_mm
        target = (x, y, 80.0)
        for pos in hand_path([here, target], fps)[1:]:
            ids = tuple(sorted(on_felt))
            shots.append(Shot(ids, tuple(on_felt[i] for i in ids), hand_at(*pos, shaker=True)))
        on_felt.pop(die)  # scooped into the shaker
        here = target
    for pos in [*hand_path([here, cup], fps)[1:], cup, cup]:
        ids = tuple(sorted(on_felt))
        shots.append(Shot(ids, tuple(on_felt[i] for i in ids), hand_at(*pos, shaker=True)))
    release = len(shots)
    # The rethrow's trajectory holds every die (the kept ones simulated at rest): all are shown from it.
    shots += _release(plan.extra.trajectory, cup)
    shots += _still(round(0.6 * fps), plan.extra.poses)
    return shots, release


def at_rest_frame(shots: list[Shot], release: int, fps: float) -> int:
    """The first frame from which no die moves to the end (issue 3's thresholds, as in video.py)."""
    speeds = motion([s.poses for s in shots[release:]], fps)
    frame = len(shots)
    while (
        frame > release
        and speeds[frame - release - 1][0] <= REST_LIN_MM_S
        and (speeds[frame - release - 1][1] <= REST_ANG_RAD_S)
    ):
        frame -= 1
    return frame


# --------------------------------------------------------------------------------------------- drawing
ProgressFn = Callable[[int], None]


def render_clip(
    shots: list[Shot],
    path: Path,
    *,
    draw: SceneLookDraw,
    renderer: SceneRenderer,
    rng: np.random.Generator,
    fps: float,
    progress: ProgressFn | None = None,
) -> RenderOutput:
    """Draw `shots` into an MP4 (OpenCV's mp4v codec); the render of the last frame (for the truth)."""
    k = draw.camera.intrinsics
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"mp4v"), fps, (k.width_px, k.height_px))
    if not writer.isOpened():
        raise OSError(f"OpenCV cannot write {path} (mp4v)")
    out: RenderOutput | None = None
    try:
        for s in shots:
            look = replace(draw.look, die_styles=tuple(draw.look.die_styles[i] for i in s.dice))
            out = renderer.render(draw.camera, dice=s.poses, chips=(), look=look, lighting=draw.lighting)
            image = draw_hand(out.image, draw.camera, s.hand) if s.hand else out.image
            writer.write(degrade(image, draw.degradation, rng))  # fresh sensor noise every frame
            if progress is not None:
                progress(1)
    finally:
        writer.release()
    if out is None:
        raise ValueError(f"{path}: no frames to draw")
    return out


def _scene(
    cfg: GeneratorConfig,
    plan: RoundPlan,
    result: SimResult,
    *,
    draw: SceneLookDraw,
    out: RenderOutput,
    index: int,
    scene_id: str,
    clip: str,
    scenario: str,
    kept: tuple[int, ...] = (),
    layout_move: LayoutMoveTruth | None = None,
) -> dict[str, Any]:
    n = len(result.poses)
    outcome = ScenarioOutcome(
        scenario,
        plan.world,
        replace(result, trajectory=()),
        n,
        tuple(i in kept for i in range(n)),
        note="round clip",
        layout_move=layout_move,
    )
    return scene_to_dict(build_truth(cfg, outcome, draw, out, index=index, scene_id=scene_id, image=clip))


def make_round(
    cfg: GeneratorConfig,
    index: int,
    renderer: SceneRenderer,
    out_dir: Path,
    *,
    fps: float = 30.0,
    progress: ProgressFn | None = None,
    on_total: Callable[[int], None] | None = None,
) -> Path:
    """Simulate and draw round `index` of `cfg` into `out_dir/<round_id>/`; returns that folder.

    `on_total` is told how many frames will be drawn (for a progress bar), `progress` each frame drawn.
    """
    plan = plan_round(cfg, index, fps)
    look_cfg = replace(cfg, oblique_fraction=0.0)  # top-down: the dealer's hand must not hide the boxes
    outcome = ScenarioOutcome("normal", plan.world, plan.first, len(plan.first.poses), ())
    draw = draw_look(look_cfg, outcome, scene_rng(cfg.seed, ROUND_INDEX_OFFSET + index, 1))
    noise = scene_rng(cfg.seed, ROUND_INDEX_OFFSET + index, 2)
    round_id = f"r{cfg.seed:04d}-{index:06d}"
    folder = out_dir / round_id
    folder.mkdir(parents=True, exist_ok=True)
    first, first_release = first_roll_shots(plan, fps)
    moves = {kind: move_shots(plan, plan.moves[kind], fps) for kind in MOVES}
    extra, extra_release = extra_roll_shots(plan, fps)
    if on_total is not None:
        on_total(len(first) + sum(len(s) for s in moves.values()) + len(extra))

    def clip(shots: list[Shot], name: str) -> RenderOutput:
        return render_clip(
            shots, folder / name, draw=draw, renderer=renderer, rng=noise, fps=fps, progress=progress
        )

    faces = [int(t.face or 0) for t in plan.first_truths]
    out = clip(first, "first.mp4")
    doc: dict[str, Any] = {
        "format": ROUND_FORMAT,
        "round_id": round_id,
        "seed": cfg.seed,
        "index": index,
        "fps": fps,
        "expected_dice": cfg.n_dice,
        "first_roll": {
            "clip": "first.mp4",
            "frames": len(first),
            "release_frame": first_release,
            "at_rest_frame": at_rest_frame(first, first_release, fps),
            "faces": faces,
            "winner": plan.winner,
            "match_count": faces.count(plan.winner),
            "final": _scene(
                cfg,
                plan,
                plan.first,
                draw=draw,
                out=out,
                index=index,
                scene_id=f"{round_id}-first",
                clip="first.mp4",
                scenario="normal",
            ),
        },
        "moves": {},
    }
    for kind, shots in moves.items():
        move = plan.moves[kind]
        name = f"move_{kind}.mp4"
        out = clip(shots, name)
        hand = [k for k, s in enumerate(shots) if s.hand]
        scenario = "layout" if kind == "correct" else f"layout_{kind}"
        doc["moves"][kind] = {
            "clip": name,
            "frames": len(shots),
            "hand_frames": [hand[0], hand[-1]],
            "layout_move": layout_move_to_dict(move.truth),
            "final": _scene(
                cfg,
                plan,
                move.result,
                draw=draw,
                out=out,
                index=index,
                scene_id=f"{round_id}-move-{kind}",
                clip=name,
                scenario=scenario,
                layout_move=move.truth,
            ),
        }
    out = clip(extra, "extra.mp4")
    thrown_faces = [
        int(physical_truth(plan.extra.poses[i], plan.extra.contacts[i], cfg.layout).face or 0)
        for i in plan.thrown
    ]
    new = thrown_faces.count(plan.winner)
    doc["extra_roll"] = {
        "clip": "extra.mp4",
        "after": "correct",
        "frames": len(extra),
        "release_frame": extra_release,
        "at_rest_frame": at_rest_frame(extra, extra_release, fps),
        "kept": list(plan.kept),
        "thrown": list(plan.thrown),
        "thrown_faces": thrown_faces,
        "new_matches": new,
        "final_count": len(plan.kept) + new,
        "final": _scene(
            cfg,
            plan,
            plan.extra,
            draw=draw,
            out=out,
            index=index,
            scene_id=f"{round_id}-extra",
            clip="extra.mp4",
            scenario="extra_roll",
            kept=plan.kept,
        ),
    }
    (folder / "round.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return folder
