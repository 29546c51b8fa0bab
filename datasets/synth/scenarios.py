"""Scenarios: how the dice get where they are (a throw, then possibly what happened next), in physics.

Each scenario returns a `ScenarioOutcome`: the static world, the simulation result of the final state, which
dice were kept in a layout box, and how many expected dice are missing from the picture. Whether the roll is
valid, void or invalid is NOT decided here: `datasets.synth.truth` reads it from the final physics state,
so a throw that went wrong by chance (a die bouncing out of a "normal" throw) is labelled as what it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from calibration.layout import ThrowBoxLayout
from datasets.synth.physics import DieStart, PhysicsWorld, SimResult, simulate

Rng = np.random.Generator


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


def normal(rng: Rng, layout: ThrowBoxLayout, n_dice: int) -> ScenarioOutcome:
    """A plain throw of all the dice into the box."""
    world = PhysicsWorld(layout)
    result = simulate(world, throw_starts(rng, layout, n_dice))
    return ScenarioOutcome("normal", world, result, n_dice, (False,) * n_dice)


SCENARIO_FUNCS: dict[str, Callable[[Rng, ThrowBoxLayout, int], ScenarioOutcome]] = {
    "normal": normal,
}
