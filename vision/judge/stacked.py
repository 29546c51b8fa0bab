"""A die resting on another die makes the roll invalid (675a.4(b)).

Two kinds of evidence, either suffices: the die-state classifier sees a die on a die (or a die with one on
it: the occluded die beneath, larger apparent size of the top die, a top face off the felt plane in its
context crop), or two detected boxes overlap far more than flat dice side by side can
(`JudgeConfig.overlap_stacked`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vision.judge.config import JudgeConfig
from vision.judge.state import STACKED, UNDER, DieState
from vision.judge.weak import weak_rethrow_call
from vision.types import DieReading, Finding, Verdict


def overlap_of_smaller(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection area of two xyxy boxes over the smaller box's area."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return float(ix * iy / smaller) if smaller > 0 else 0.0


def stacked_dice(
    dice: Sequence[DieReading], states: Sequence[DieState] | None, *, config: JudgeConfig
) -> tuple[list[Finding], set[int]]:
    """Findings of dice on dice, and the 0-based indices of the dice on top."""
    findings: list[Finding] = []
    on_top: set[int] = set()
    centres = np.array(
        [
            [
                (d.candidate.box_xyxy[0] + d.candidate.box_xyxy[2]) / 2,
                (d.candidate.box_xyxy[1] + d.candidate.box_xyxy[3]) / 2,
            ]
            for d in dice
        ]
    ).reshape(-1, 2)
    if states is not None:
        for i, st in enumerate(states):
            if st.kind != "stacked" or st.kind_confidence() < config.min_state_confidence:
                continue
            if st.kind_confidence() < config.min_rethrow_confidence:
                findings.append(weak_rethrow_call(i, "rests on a die or has one on it", st, config))
                continue
            # The partner: the nearest other die, if it is within two box sizes.
            dist = np.hypot(*(centres - centres[i]).T)
            dist[i] = np.inf
            j = int(np.argmin(dist)) if len(dice) > 1 else -1
            near = j >= 0 and dist[j] < 2.0 * dice[i].candidate.edge_px
            if st.probs[STACKED] >= st.probs[UNDER]:
                on_top.add(i)
                ids = (i + 1, j + 1) if near else (i + 1,)
                partner = f"die {j + 1}" if near else "a die hidden under it"
                detail = f"die {i + 1} rests on {partner} (p={st.probs[STACKED]:.2f})"
            else:
                if near:
                    on_top.add(j)
                ids = (j + 1, i + 1) if near else (i + 1,)
                partner = f"die {j + 1}" if near else "a die"
                detail = f"{partner} rests on die {i + 1} (p={st.probs[UNDER]:.2f} that it has a die on it)"
            findings.append(Finding(verdict=Verdict.INVALID, reason="die_on_die", die_ids=ids, detail=detail))
    for i in range(len(dice)):
        for j in range(i + 1, len(dice)):
            ov = overlap_of_smaller(dice[i].candidate.box_xyxy, dice[j].candidate.box_xyxy)
            if ov >= config.overlap_stacked:
                top = i if dice[i].candidate.edge_px >= dice[j].candidate.edge_px else j
                on_top.add(top)
                findings.append(
                    Finding(
                        verdict=Verdict.INVALID,
                        reason="die_on_die",
                        die_ids=(i + 1, j + 1),
                        detail=f"the boxes of dice {i + 1} and {j + 1} overlap by {ov:.0%} of the smaller: "
                        "one lies on the other",
                    )
                )
    return findings, on_top
