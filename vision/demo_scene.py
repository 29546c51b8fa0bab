"""A small, deterministic 2-D throw-box scene for the demo frame source and for settle tests.

It draws a felt box seen from above with a printed layout strip, ten dice (squares with pips) thrown from a
shaker that bounce off the walls and stop, and the dealer's hand or stick entering from the box edge to
visit, move or collect dice. Every frame carries sensor noise, as a real camera's would, so two frames are
never bit-identical (a frozen stream is).

Why hand-written: this is not the physics generator (`datasets/synth`, physics and 3-D rendering); it is a
few hundred lines of OpenCV drawing so that the live pipeline runs and is tested with no camera, no model
and no generated data set, and it knows the ground truth exactly (the frame on which the last die stops).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

import cv2
import numpy as np
from numpy.typing import NDArray

ImageArray = NDArray[np.uint8]

# Pip centres on a unit die face ([-1, 1]^2) for faces 1..6.
_PIPS: dict[int, tuple[tuple[float, float], ...]] = {
    1: ((0.0, 0.0),),
    2: ((-0.5, -0.5), (0.5, 0.5)),
    3: ((-0.5, -0.5), (0.0, 0.0), (0.5, 0.5)),
    4: ((-0.5, -0.5), (0.5, -0.5), (-0.5, 0.5), (0.5, 0.5)),
    5: ((-0.5, -0.5), (0.5, -0.5), (0.0, 0.0), (-0.5, 0.5), (0.5, 0.5)),
    6: ((-0.5, -0.55), (0.5, -0.55), (-0.5, 0.0), (0.5, 0.0), (-0.5, 0.55), (0.5, 0.55)),
}
_LAYOUT_LABELS = ("ACE", "SIX", "FIVE", "FOUR", "THREE", "TWO")


class Intruder(StrEnum):
    """What reaches into the box."""

    HAND = "hand"
    STICK = "stick"


class Action(StrEnum):
    """What the intruder does there."""

    VISIT = "visit"  # reaches in and leaves, touching nothing
    MOVE = "move"  # drags the dice under it to another place and leaves them there
    COLLECT = "collect"  # takes the dice under it out of the box
    CLEAR = "clear"  # gathers every die in the box and takes them all out


@dataclass(frozen=True)
class Throw:
    """The dealer throws `n_dice` dice from the shaker; they roll, stop, and lie still for `hold_s`."""

    hold_s: float = 1.0
    n_dice: int = 10
    show_shaker: bool = True


@dataclass(frozen=True)
class Empty:
    """Nothing happens for `seconds` (whatever lies in the box stays there)."""

    seconds: float = 0.5


@dataclass(frozen=True)
class Handling:
    """A hand or the stick enters from the dealer's edge, acts on the dice for `seconds`, and leaves."""

    intruder: Intruder = Intruder.HAND
    action: Action = Action.COLLECT
    seconds: float = 1.5


@dataclass(frozen=True)
class Jiggle:
    """Motion that never settles: the dice keep shuffling in place for `seconds` (a table being bumped)."""

    seconds: float = 2.0


Step = Throw | Empty | Handling | Jiggle


@dataclass(frozen=True)
class SceneConfig:
    """Image size, frame rate and look of the synthetic box."""

    width_px: int = 640
    height_px: int = 480
    fps: float = 30.0
    die_edge_px: int = 24
    noise_sigma: float = 2.5  # sensor noise (grey levels); 0 makes static frames bit-identical
    decel_px_s2: float = 520.0  # rolling friction
    seed: int = 0

    def __post_init__(self) -> None:
        if self.width_px < 96 or self.height_px < 96:
            raise ValueError(f"scene must be at least 96x96 px, got {self.width_px}x{self.height_px}")
        if self.fps <= 0:
            raise ValueError(f"fps must be positive, got {self.fps}")
        if not 6 <= self.die_edge_px <= min(self.width_px, self.height_px) // 6:
            raise ValueError(
                f"die_edge_px {self.die_edge_px} does not fit a {self.width_px}x{self.height_px} box"
            )


@dataclass(frozen=True)
class ThrowTruth:
    """Ground truth of one throw, in frame indices of the rendered sequence."""

    index: int
    release_frame: int  # first frame with the dice in the box
    rest_frame: int  # first frame on which no die moves any more
    end_frame: int  # last frame of the hold (exclusive end of "at rest")
    faces: tuple[int, ...]


@dataclass(frozen=True)
class FrameTruth:
    """Per-frame ground truth: dice moving, an intruder in the box, and the throw it belongs to."""

    index: int
    dice_moving: bool
    intruder_present: bool
    throw_index: int | None


@dataclass
class _Die:
    x: float
    y: float
    vx: float = 0.0
    vy: float = 0.0
    angle: float = 0.0
    spin: float = 0.0
    face: int = 1
    attached: bool = False  # carried by the hand / stick

    @property
    def moving(self) -> bool:
        return self.vx != 0.0 or self.vy != 0.0 or self.spin != 0.0


@dataclass
class _State:
    dice: list[_Die] = field(default_factory=list)
    frame_index: int = 0


class DemoScene:
    """Renders a plan of steps into frames, recording exact ground truth as it goes."""

    def __init__(self, config: SceneConfig | None = None) -> None:
        self.config = config or SceneConfig()
        self._rng = np.random.default_rng(self.config.seed)
        self._background = self._draw_felt()
        noise_rng = np.random.default_rng(self.config.seed + 1)
        shape = (self.config.height_px, self.config.width_px, 3)
        self._noise = [
            np.round(noise_rng.normal(0.0, self.config.noise_sigma, shape)).astype(np.int16)
            for _ in range(12)
        ]
        self._last_noise = -1
        self._state = _State()
        self.throws: list[ThrowTruth] = []
        self.frames: list[FrameTruth] = []

    # ----------------------------------------------------------------------------------------- geometry
    @property
    def _margin(self) -> float:
        return self.config.die_edge_px * 0.9

    @property
    def _dealer_y(self) -> float:
        """The dealer's edge is the bottom of the image; the layout strip lies along it."""
        return float(self.config.height_px)

    def _draw_felt(self) -> ImageArray:
        c = self.config
        rng = np.random.default_rng(c.seed + 2)
        felt = np.empty((c.height_px, c.width_px, 3), dtype=np.uint8)
        felt[:] = (38, 112, 34)
        coarse = rng.normal(0.0, 3.0, (c.height_px // 4 + 1, c.width_px // 4 + 1)).astype(np.float32)
        texture = np.asarray(cv2.resize(coarse, (c.width_px, c.height_px), interpolation=cv2.INTER_LINEAR))
        felt = np.clip(felt.astype(np.float32) + texture[:, :, None], 0, 255).astype(np.uint8)
        # The printed layout strip along the dealer's side, Ace at the dealer's left (593.1(b)(4)).
        strip_h = int(c.die_edge_px * 2.2)
        y1 = c.height_px - int(self._margin)
        y0 = y1 - strip_h
        n = len(_LAYOUT_LABELS)
        box_w = (c.width_px - 2 * self._margin) / n
        for i, label in enumerate(_LAYOUT_LABELS):
            x0 = int(self._margin + i * box_w + 3)
            x1 = int(self._margin + (i + 1) * box_w - 3)
            cv2.rectangle(felt, (x0, y0), (x1, y1), (200, 220, 215), 1, cv2.LINE_AA)
            scale = max(0.25, c.die_edge_px / 60.0)
            cv2.putText(felt, label, (x0 + 3, y1 - 4), cv2.FONT_HERSHEY_SIMPLEX, scale, (190, 210, 205), 1)
        cv2.rectangle(felt, (1, 1), (c.width_px - 2, c.height_px - 2), (20, 60, 18), 2)
        return np.asarray(felt, dtype=np.uint8)

    def _draw_die(self, img: ImageArray, die: _Die) -> None:
        half = self.config.die_edge_px / 2.0
        ca, sa = math.cos(die.angle), math.sin(die.angle)

        def to_px(u: float, v: float, scale: float = 1.0) -> tuple[float, float]:
            return (die.x + scale * half * (u * ca - v * sa), die.y + scale * half * (u * sa + v * ca))

        corners = np.array([to_px(u, v) for u, v in ((-1, -1), (1, -1), (1, 1), (-1, 1))], dtype=np.float64)
        shadow = np.round(corners + 0.12 * self.config.die_edge_px).astype(np.int32)
        cv2.fillConvexPoly(img, shadow, (22, 60, 20), cv2.LINE_AA)
        cv2.fillConvexPoly(img, np.round(corners).astype(np.int32), (45, 40, 190), cv2.LINE_AA)
        pip_r = max(1, round(self.config.die_edge_px * 0.09))
        for u, v in _PIPS[die.face]:
            px, py = to_px(u, v, scale=0.95)
            cv2.circle(img, (round(px), round(py)), pip_r, (235, 235, 235), -1, cv2.LINE_AA)

    def _draw_intruder(self, img: ImageArray, kind: Intruder, tip: tuple[float, float]) -> None:
        e = self.config.die_edge_px
        base = (tip[0] + 0.15 * self.config.width_px, self._dealer_y + 3 * e)
        if kind is Intruder.HAND:
            arm_w = round(2.2 * e)
            cv2.line(img, _ipt(base), _ipt(tip), (105, 150, 205), arm_w, cv2.LINE_AA)
            cv2.ellipse(img, _ipt(tip), (round(1.9 * e), round(1.5 * e)), 20, 0, 360, (120, 165, 215), -1)
            for k in range(4):  # fingers
                a = math.radians(200 + 35 * k)
                fx, fy = tip[0] + 1.9 * e * math.cos(a), tip[1] + 1.6 * e * math.sin(a)
                cv2.line(
                    img, _ipt(tip), _ipt((fx, fy)), (115, 160, 210), max(2, round(0.45 * e)), cv2.LINE_AA
                )
        else:
            cv2.line(img, _ipt(base), _ipt(tip), (40, 85, 140), max(3, round(0.45 * e)), cv2.LINE_AA)
            cv2.circle(img, _ipt(tip), max(3, round(0.6 * e)), (35, 75, 125), -1, cv2.LINE_AA)

    def _draw_shaker(self, img: ImageArray, centre: tuple[float, float]) -> None:
        e = self.config.die_edge_px
        cv2.circle(img, _ipt(centre), round(2.6 * e), (30, 30, 35), -1, cv2.LINE_AA)
        cv2.circle(img, _ipt(centre), round(2.6 * e), (70, 70, 80), 2, cv2.LINE_AA)
        cv2.line(img, _ipt(centre), (round(centre[0]), -5), (30, 30, 35), round(1.6 * e), cv2.LINE_AA)

    # ------------------------------------------------------------------------------------------ physics
    def _step_physics(self, *, dt: float) -> None:
        c = self.config
        lo_x, hi_x = self._margin, c.width_px - self._margin
        lo_y, hi_y = self._margin, c.height_px - self._margin
        for die in self._state.dice:
            if die.attached or not die.moving:
                continue
            die.x += die.vx * dt
            die.y += die.vy * dt
            die.angle += die.spin * dt
            if die.x < lo_x or die.x > hi_x:
                die.x = min(max(die.x, lo_x), hi_x)
                die.vx = -0.6 * die.vx
            if die.y < lo_y or die.y > hi_y:
                die.y = min(max(die.y, lo_y), hi_y)
                die.vy = -0.6 * die.vy
            speed = math.hypot(die.vx, die.vy)
            new_speed = speed - c.decel_px_s2 * dt
            if new_speed <= 6.0:
                die.vx = die.vy = die.spin = 0.0
            else:
                die.vx *= new_speed / speed
                die.vy *= new_speed / speed
                die.spin *= 0.93
                # Tumbling: the top face changes now and then while the die is fast.
                if speed > 150.0 and self._rng.random() < 0.25:
                    die.face = int(self._rng.integers(1, 7))

    # ------------------------------------------------------------------------------------------ frames
    def _compose(self, *, intruder: tuple[Intruder, tuple[float, float]] | None = None) -> ImageArray:
        img = self._background.copy()
        for die in self._state.dice:
            self._draw_die(img, die)
        if intruder is not None:
            self._draw_intruder(img, intruder[0], intruder[1])
        return img

    def _finish(
        self, img: ImageArray, *, moving: bool, intruder: bool, throw_index: int | None
    ) -> tuple[ImageArray, FrameTruth]:
        if self.config.noise_sigma > 0:
            k = int(self._rng.integers(0, len(self._noise) - 1))
            k = k if k < self._last_noise else k + 1  # never the same noise twice in a row
            self._last_noise = k
            img = np.clip(img.astype(np.int16) + self._noise[k], 0, 255).astype(np.uint8)
        truth = FrameTruth(
            index=self._state.frame_index,
            dice_moving=moving,
            intruder_present=intruder,
            throw_index=throw_index,
        )
        self.frames.append(truth)
        self._state.frame_index += 1
        return img, truth

    def _n_frames(self, seconds: float) -> int:
        return max(1, round(seconds * self.config.fps))

    def _throw(self, step: Throw) -> Iterator[ImageArray]:
        c = self.config
        dt = 1.0 / c.fps
        e = c.die_edge_px
        index = len(self.throws)
        kept = list(self._state.dice)  # e.g. the Extra Roll: the winning dice stay in their layout box
        shaker_at = (c.width_px * float(self._rng.uniform(0.35, 0.65)), 1.2 * e)
        if step.show_shaker:
            for k in range(4):  # the shaker comes over the box edge, then the dice fall out
                y = shaker_at[1] - (3 - k) * 0.8 * e
                img = self._background.copy()
                for die in kept:
                    self._draw_die(img, die)
                self._draw_shaker(img, (shaker_at[0], y))
                yield self._finish(img, moving=False, intruder=True, throw_index=None)[0]
        new = []
        for _ in range(step.n_dice):
            angle = float(self._rng.uniform(0.25 * math.pi, 0.75 * math.pi))  # downward, toward the dealer
            speed = float(self._rng.uniform(330.0, 560.0)) * c.height_px / 480.0
            new.append(
                _Die(
                    x=shaker_at[0] + float(self._rng.uniform(-1.2, 1.2)) * e,
                    y=shaker_at[1] + float(self._rng.uniform(0.5, 1.5)) * e,
                    vx=speed * math.cos(angle),
                    vy=speed * math.sin(angle),
                    angle=float(self._rng.uniform(0, math.pi)),
                    spin=float(self._rng.uniform(-9.0, 9.0)),
                    face=int(self._rng.integers(1, 7)),
                )
            )
        self._state.dice = kept + new
        release = self._state.frame_index
        rest: int | None = None
        shaker_frames = 3 if step.show_shaker else 0
        hold_frames = self._n_frames(step.hold_s)
        held = 0
        while held < hold_frames:
            moving = any(d.moving for d in self._state.dice)
            if not moving and rest is None:
                rest = self._state.frame_index
            if rest is not None:
                held += 1
            img = self._background.copy()
            for die in self._state.dice:
                self._draw_die(img, die)
            leaving = shaker_frames > 0
            if leaving:  # the shaker withdraws over the edge while the dice roll out
                y = shaker_at[1] - (4 - shaker_frames) * 0.9 * e
                self._draw_shaker(img, (shaker_at[0], y))
                shaker_frames -= 1
            yield self._finish(img, moving=moving, intruder=leaving, throw_index=index)[0]
            self._step_physics(dt=dt)
        if rest is None:  # unreachable: the loop only exits after `hold_frames` frames at rest
            raise RuntimeError("throw ended without the dice coming to rest")
        self.throws.append(
            ThrowTruth(
                index=index,
                release_frame=release,
                rest_frame=rest,
                end_frame=self._state.frame_index,
                faces=tuple(d.face for d in new),
            )
        )

    def _handling(self, step: Handling) -> Iterator[ImageArray]:
        c = self.config
        e = c.die_edge_px
        free = [d for d in self._state.dice if not d.attached]
        if free:
            target = free[int(self._rng.integers(0, len(free)))]
            aim = (target.x, target.y)
        else:
            aim = (c.width_px * 0.5, c.height_px * 0.45)
        entry = (aim[0] + 0.1 * c.width_px, c.height_px + 2.5 * e)
        drop = (self._margin + 2.0 * e, c.height_px - self._margin - 1.1 * e)  # the "Ace" layout box
        n = self._n_frames(step.seconds)
        n_in = max(2, n // 3)
        n_act = max(1, n // 3)
        n_out = max(2, n - n_in - n_act)
        grab_r = (1.6 if step.intruder is Intruder.HAND else 0.9) * e
        hold_r = (0.7 if step.intruder is Intruder.HAND else 0.9) * e
        path: list[tuple[float, float]] = []
        path += [_lerp(entry, aim, (k + 1) / n_in) for k in range(n_in)]
        act_end = drop if step.action is Action.MOVE else aim
        path += [_lerp(aim, act_end, (k + 1) / n_act) for k in range(n_act)]
        out_end = (act_end[0] + 0.1 * c.width_px, c.height_px + 3.5 * e)
        path += [_lerp(act_end, out_end, (k + 1) / n_out) for k in range(n_out)]
        carried: list[tuple[_Die, float, float]] = []
        for k, tip in enumerate(path):
            if k == n_in - 1 and step.action is not Action.VISIT:
                for d in self._state.dice:
                    if step.action is Action.CLEAR or math.hypot(d.x - tip[0], d.y - tip[1]) <= grab_r:
                        d.attached = True
                        # Held dice sit under the palm / against the stick's tip, touching it.
                        ox, oy = d.x - tip[0], d.y - tip[1]
                        shrink = min(1.0, hold_r / max(math.hypot(ox, oy), 1e-6))
                        carried.append((d, shrink * ox, shrink * oy))
            if step.action is Action.MOVE and k == n_in + n_act:
                for d, _, _ in carried:
                    d.attached = False
                carried = []
            for d, ox, oy in carried:
                d.x, d.y = tip[0] + ox, tip[1] + oy
            img = self._compose(intruder=(step.intruder, tip))
            yield self._finish(img, moving=bool(carried), intruder=True, throw_index=None)[0]
        if step.action in (Action.COLLECT, Action.CLEAR):
            self._state.dice = [d for d in self._state.dice if not d.attached]
        for d in self._state.dice:
            d.attached = False

    def _jiggle(self, step: Jiggle) -> Iterator[ImageArray]:
        e = self.config.die_edge_px
        for _ in range(self._n_frames(step.seconds)):
            for d in self._state.dice:
                d.x += float(self._rng.uniform(-0.3, 0.3)) * e
                d.y += float(self._rng.uniform(-0.3, 0.3)) * e
            yield self._finish(
                self._compose(), moving=bool(self._state.dice), intruder=False, throw_index=None
            )[0]

    def render(self, plan: tuple[Step, ...]) -> Iterator[ImageArray]:
        """Yield the frames of `plan` in order; `throws` and `frames` fill in as frames are yielded."""
        for step in plan:
            if isinstance(step, Throw):
                yield from self._throw(step)
            elif isinstance(step, Handling):
                yield from self._handling(step)
            elif isinstance(step, Jiggle):
                yield from self._jiggle(step)
            else:
                for _ in range(self._n_frames(step.seconds)):
                    yield self._finish(self._compose(), moving=False, intruder=False, throw_index=None)[0]


def demo_plan(n_throws: int) -> tuple[Step, ...]:
    """A round of play repeated: empty box, throw, the dealer moves winners to the layout, collects."""
    if n_throws < 1:
        raise ValueError(f"n_throws must be at least 1, got {n_throws}")
    one: tuple[Step, ...] = (
        Empty(0.6),
        Throw(hold_s=1.2),
        Handling(Intruder.HAND, Action.MOVE, 1.2),
        Empty(0.5),
        Handling(Intruder.STICK, Action.VISIT, 1.0),
        Handling(Intruder.HAND, Action.CLEAR, 1.2),
    )
    return one * n_throws


def _lerp(a: tuple[float, float], b: tuple[float, float], t: float) -> tuple[float, float]:
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)


def _ipt(p: tuple[float, float]) -> tuple[int, int]:
    return (round(p[0]), round(p[1]))
