"""A call that sends the dice back needs a die: far larger than the frame's dice, it may be something else.

The detector takes chip stacks for dice now and then (in the seed-900 tuning scenes, 215 of 336 detections
that matched no die were over 1.4 times the frame's median box, against 18 of 7,397 flat dice); the
die-state classifier then sees a "die" wedged or cocked among chips, or off the table, and a good roll
would be voided or sent back. Such a call on a detection larger than `JudgeConfig.max_die_size_ratio` times
the frame's typical die is `no_decision` (`object_unclear`) with the evidence, for a person to decide.

The other way round, with a table calibration, a lone pip of a die whose body hardly shows (a black die on
black felt) is boxed as a small die and read as a 1: a die read as 1 that is under
`JudgeConfig.min_ace_size_ratio` of the frame's typical die, each die's size first set against the size
the calibration expects at its felt position, is `no_decision` too (`small_aces`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vision.judge.config import JudgeConfig
from vision.state.model import reference_die_px
from vision.table.geometry import TableGeometry
from vision.types import DieReading, Finding, FindingReason, Verdict

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
                reason=FindingReason.OBJECT_UNCLEAR,
                die_ids=f.die_ids,
                detail=f"{f.detail}; but {which} times the frame's typical die (over "
                f"{config.max_die_size_ratio:.1f}): maybe a chip stack or another object, not a die, "
                "a person must look",
            )
        )
    return out


def edge_ratios(dice: Sequence[DieReading], geometry: TableGeometry) -> np.ndarray:
    """Each box's long side over the top-face edge a flat die shows at its felt position (the calibration's
    expected size: perspective taken out); NaN for a die whose felt position gives no size (a box above the
    camera's horizon: no finite, positive edge)."""
    boxes = [d.candidate.box_xyxy for d in dice]
    if not boxes:
        return np.zeros(0, np.float64)
    with np.errstate(all="ignore"):
        expected = geometry.die_edges_px(boxes)
        known = np.isfinite(expected) & (expected > 0)
        sides = np.array([max(b[2] - b[0], b[3] - b[1]) for b in boxes], np.float64)
        return np.where(known, sides / np.where(known, expected, 1.0), np.nan)


def calibrated_size_ratios(sizes: np.ndarray) -> list[float]:
    """Each die's `edge_ratios` (`sizes`) over the median of those of the frame's dice. 1.0 for a die whose
    felt position gives no size, and for all when fewer than 3 dice have one.
    """
    if len(sizes) < MIN_DICE_FOR_MEDIAN:
        return [1.0] * len(sizes)
    known = np.isfinite(sizes)
    if int(known.sum()) < MIN_DICE_FOR_MEDIAN:
        return [1.0] * len(sizes)
    ratios = np.where(known, sizes / float(np.median(sizes[known])), 1.0)
    return [float(r) for r in ratios]


def small_aces(
    dice: Sequence[DieReading], *, geometry: TableGeometry | None, config: JudgeConfig
) -> list[Finding]:
    """`object_unclear` for each die read as 1 under `min_ace_size_ratio` of the frame's calibrated die
    size (`calibrated_size_ratios`), or whose box is under `min_ace_edge_ratio` of the top face a flat die
    shows where it lies (`edge_ratios`); nothing without a calibration."""
    off = config.min_ace_size_ratio <= 0.0 and config.min_ace_edge_ratio <= 0.0
    if geometry is None or off or not any(d.face == 1 for d in dice):
        return []
    out: list[Finding] = []
    edges = edge_ratios(dice, geometry)
    for i, (die, ratio) in enumerate(zip(dice, calibrated_size_ratios(edges), strict=True)):
        if die.face != 1:
            continue
        x0, y0, x1, y1 = die.candidate.box_xyxy
        where = f"die {i + 1} at ({(x0 + x1) / 2:.0f}, {(y0 + y1) / 2:.0f}) reads 1 but"
        if ratio < config.min_ace_size_ratio:
            why = (
                f"{where} is {ratio:.2f} times the frame's typical die where it lies (under "
                f"{config.min_ace_size_ratio:.2f})"
            )
        elif np.isfinite(edges[i]) and edges[i] < config.min_ace_edge_ratio:
            why = (
                f"{where} its box is {edges[i]:.2f} times the top face a flat die shows where it lies (under "
                f"{config.min_ace_edge_ratio:.2f})"
            )
        else:
            continue
        out.append(
            Finding(
                verdict=Verdict.NO_DECISION,
                reason=FindingReason.OBJECT_UNCLEAR,
                die_ids=(i + 1,),
                detail=f"{why}: maybe one pip of a die whose body does not show, a person must look",
            )
        )
    return out
