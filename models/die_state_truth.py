"""The die states a labelled synthetic scene implies (training and evaluation only: reads ground truth).

A stacked die rests on a die (`stacked`); the die it rests on is `under` (the nearest die below it, less
than an edge away across the felt); a cocked die with a reading is `cocked` (one side resting), without
one it is `wedged` (more than one side resting: the roll is void); a die outside the box is `outside`.
"""

from __future__ import annotations

import numpy as np

from datasets.format import SceneTruth
from vision.state.model import COCKED, FLAT, OUTSIDE, STACKED, UNDER, WEDGED


def die_states_of(scene: SceneTruth) -> list[int]:
    """One `STATE_LABELS` index per die of the scene, in die order."""
    states = [FLAT] * len(scene.dice)
    pos = np.array([d.position_mm for d in scene.dice], np.float64).reshape(-1, 3)
    edge = 19.0
    if len(scene.dice) >= 1:
        # The die edge is not stored per scene; a flat die's centre height is half of it.
        flat_z = [
            d.position_mm[2] for d in scene.dice if d.tilt_deg < 2 and not d.stacked and not d.off_table
        ]
        if flat_z:
            edge = 2.0 * float(np.median(flat_z))
    for i, d in enumerate(scene.dice):
        if d.off_table:
            states[i] = OUTSIDE
        elif d.stacked:
            states[i] = STACKED
        elif d.cocked:
            states[i] = COCKED if d.face is not None else WEDGED
    for i, d in enumerate(scene.dice):
        if not d.stacked:
            continue
        dist = np.hypot(pos[:, 0] - pos[i, 0], pos[:, 1] - pos[i, 1])
        below = [
            j
            for j in range(len(scene.dice))
            if j != i and pos[j, 2] < pos[i, 2] - edge / 2 and dist[j] < edge
        ]
        if below:
            j = min(below, key=lambda k: float(dist[k]))
            if states[j] == FLAT:
                states[j] = UNDER
    return states
