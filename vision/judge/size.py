"""A call that sends the dice back needs a die: far larger than the frame's dice, it may be something else.

The detector takes chip stacks for dice now and then (in the seed-900 tuning scenes, 215 of 336 detections
that matched no die were over 1.4 times the frame's median box, against 18 of 7,397 flat dice); the
die-state classifier then sees a "die" wedged or cocked among chips, or off the table, and a good roll
would be voided or sent back. Such a call on a detection larger than `JudgeConfig.max_die_size_ratio` times
the frame's typical die is `no_decision` (`object_unclear`) with the evidence, for a person to decide.
"""

from __future__ import annotations

from collections.abc import Sequence

from vision.judge.config import JudgeConfig
from vision.judge.state import reference_die_px
from vision.types import DieReading, Finding, Verdict

RETHROW = (Verdict.INVALID, Verdict.VOID)
MIN_DICE_FOR_MEDIAN = 3  # with fewer, "the frame's typical die" means nothing


def size_ratios(dice: Sequence[DieReading]) -> list[float]:
    """Each box's long side over the frame's median long side (1.0 each when fewer than 3 dice)."""
    if len(dice) < MIN_DICE_FOR_MEDIAN:
        return [1.0] * len(dice)
    boxes = [d.candidate.box_xyxy for d in dice]
    ref = reference_die_px(boxes)
    return [max(b[2] - b[0], b[3] - b[1]) / ref for b in boxes]


def object_unclear(
    findings: Sequence[Finding], dice: Sequence[DieReading], *, config: JudgeConfig
) -> list[Finding]:
    """The findings, with each rethrow call that names an oversized detection turned into `no_decision`."""
    ratios = size_ratios(dice)
    out: list[Finding] = []
    for f in findings:
        big = [i for i in f.die_ids if ratios[i - 1] > config.max_die_size_ratio]
        if f.verdict not in RETHROW or not big:
            out.append(f)
            continue
        which = ", ".join(f"die {i} is {ratios[i - 1]:.1f}" for i in big)
        out.append(
            Finding(
                verdict=Verdict.NO_DECISION,
                reason="object_unclear",
                die_ids=f.die_ids,
                detail=f"{f.detail}; but {which} times the frame's typical die (over "
                f"{config.max_die_size_ratio:.1f}): maybe a chip stack or another object, not a die, "
                "a person must look",
            )
        )
    return out
