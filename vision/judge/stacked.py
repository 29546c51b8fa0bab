"""A die resting on another die makes the roll invalid (675a.4(b)).

Two kinds of evidence, and the judge asks each to be backed before it sends the dice back:

- the die-state classifier sees a die on a die (or a die with one on it: the occluded die beneath, larger
  apparent size of the top die, a top face off the felt plane in its context crop). A die on a die has a
  die beneath it, which from above is either seen (its box overlaps the top die's) or wholly hidden (the
  count is short); a call with neither, every die of the game found and no box overlapping this one by
  `JudgeConfig.stack_partner_overlap`, is ruled out (finding `stacked_ruled_out`, valid); one whose
  nearest box overlaps it by less than `overlap_stacked` is `stacked_unclear` (touching dice or a die
  perched on another's edge: a person looks);
- two detected boxes overlap far more than flat dice side by side can (`JudgeConfig.overlap_stacked`).
  Touching dice in a cluster, seen obliquely or boxed loosely by the detector, overlap that much too, so
  overlap alone is `no_decision` (`stacked_unclear`, a person looks) unless it is backed: the classifier
  gives either die at least `min_state_confidence` of a die on a die, or, with a table calibration, the two
  dice's felt positions lie closer than `stacked_max_centre_mm` (flat dice side by side are an edge apart)
  and the camera leans no more than `felt_backing_max_camera_tilt_deg` (an oblique camera's loose boxes
  place dice too roughly for that).
  With more dice found than the game has, two overlapping boxes may be one die found twice: also
  `stacked_unclear`, and so is a classifier call of a die on a die then (its partner may be itself).
  Under a calibrated camera that looks from above (`JudgeConfig.unbacked_overlap_max_camera_tilt_deg`),
  overlap with nothing to back it, the count full, is two dice side by side boxed loosely:
  `stacked_ruled_out` (valid).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vision.judge.config import JudgeConfig
from vision.judge.weak import weak_rethrow_call
from vision.state.model import STACKED, UNDER, DieState
from vision.table.geometry import TableGeometry
from vision.types import DieReading, Finding, FindingReason, Verdict


def overlap_of_smaller(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection area of two xyxy boxes over the smaller box's area."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return float(ix * iy / smaller) if smaller > 0 else 0.0


def _felt_distance_mm(geometry: TableGeometry, a: DieReading, b: DieReading) -> float:
    xa, ya = geometry.centre_mm(a.candidate.box_xyxy)
    xb, yb = geometry.centre_mm(b.candidate.box_xyxy)
    return float(np.hypot(xa - xb, ya - yb))


def _tilt_from_above(geometry: TableGeometry | None, config: JudgeConfig) -> float | None:
    """The calibrated camera's tilt when it is within `unbacked_overlap_max_camera_tilt_deg`, else None."""
    bar = config.unbacked_overlap_max_camera_tilt_deg
    if geometry is None or bar is None or geometry.camera.pose.tilt_deg > bar:
        return None
    return float(geometry.camera.pose.tilt_deg)


def _felt_too_rough(geometry: TableGeometry | None, config: JudgeConfig) -> float | None:
    """The calibrated camera's tilt when it leans past `felt_backing_max_camera_tilt_deg`, else None."""
    bar = config.felt_backing_max_camera_tilt_deg
    if geometry is None or bar is None or geometry.camera.pose.tilt_deg <= bar:
        return None
    return float(geometry.camera.pose.tilt_deg)


def _looks_stacked_but(i: int, st: DieState, *, verdict: Verdict, reason: FindingReason, but: str) -> Finding:
    """A finding on die `i` (0-based), which the classifier sees on a die, and why that is not the call."""
    return Finding(
        verdict=verdict,
        reason=reason,
        die_ids=(i + 1,),
        detail=f"die {i + 1} looks like a die on a die (p={st.kind_confidence():.2f}), but {but}",
    )


def stacked_dice(
    dice: Sequence[DieReading],
    states: Sequence[DieState] | None,
    *,
    config: JudgeConfig,
    count_short: bool = False,
    count_over: bool = False,
    count_unsure: bool = False,
    geometry: TableGeometry | None = None,
) -> tuple[list[Finding], set[int]]:
    """Findings of dice on dice, and the 0-based indices of the dice on top.

    `count_short`: fewer dice were found than the game has (a die beneath may be wholly hidden);
    `count_over`: more (two overlapping boxes may be one die found twice). `count_unsure`: fewer, but
    something set aside as part of the table may be the die missing (vision/table/markers.py): neither a die
    hidden beneath nor every die found can be leaned on.
    """
    findings: list[Finding] = []
    on_top: set[int] = set()
    boxes = [d.candidate.box_xyxy for d in dice]
    overlaps = np.zeros((len(dice), len(dice)))
    for i, a in enumerate(boxes):
        for j, b in enumerate(boxes):
            if i != j:
                overlaps[i, j] = overlap_of_smaller(a, b)
    centres = np.array([[(b[0] + b[2]) / 2, (b[1] + b[3]) / 2] for b in boxes]).reshape(-1, 2)
    stacked_p = [0.0] * len(dice) if states is None else [st.kind_confidence("stacked") for st in states]
    if states is not None:
        by_state, on_top = _stacks_by_state(
            dice,
            states,
            overlaps=overlaps,
            centres=centres,
            config=config,
            count_short=count_short,
            count_over=count_over,
            count_unsure=count_unsure,
        )
        findings += by_state
    by_boxes, on_top_boxes = _stacks_by_boxes(
        dice,
        overlaps=overlaps,
        stacked_p=stacked_p,
        config=config,
        count_short=count_short,
        count_over=count_over,
        count_unsure=count_unsure,
        geometry=geometry,
    )
    return findings + by_boxes, on_top | on_top_boxes


def _stacks_by_state(
    dice: Sequence[DieReading],
    states: Sequence[DieState],
    *,
    overlaps: np.ndarray,
    centres: np.ndarray,
    config: JudgeConfig,
    count_short: bool,
    count_over: bool,
    count_unsure: bool,
) -> tuple[list[Finding], set[int]]:
    """Each die the die-state classifier sees on a die or under one: ruled out, unclear, or a die on a die
    with its partner (the nearest die within two box sizes)."""
    findings: list[Finding] = []
    on_top: set[int] = set()
    for i, st in enumerate(states):
        if st.kind != "stacked" or st.kind_confidence() < config.min_state_confidence:
            continue
        most = float(overlaps[i].max()) if len(dice) > 1 else 0.0
        if most < config.overlap_stacked and count_unsure:
            findings.append(
                _looks_stacked_but(
                    i,
                    st,
                    verdict=Verdict.NO_DECISION,
                    reason=FindingReason.STACKED_UNCLEAR,
                    but="no box overlaps it and the count is short beside something set aside as part "
                    "of the table: a die beneath or a die there, a person must look",
                )
            )
            continue
        if most < config.stack_partner_overlap and not count_short:
            findings.append(
                _looks_stacked_but(
                    i,
                    st,
                    verdict=Verdict.VALID,
                    reason=FindingReason.STACKED_RULED_OUT,
                    but="no die lies under or over it: no box overlaps it and every die of the game is found",
                )
            )
            continue
        if st.kind_confidence() < config.min_rethrow_confidence:
            findings.append(weak_rethrow_call(i, "rests on a die or has one on it", st, config))
            continue
        if most < config.overlap_stacked and not count_short:
            findings.append(
                _looks_stacked_but(
                    i,
                    st,
                    verdict=Verdict.NO_DECISION,
                    reason=FindingReason.STACKED_UNCLEAR,
                    but=f"the box nearest over it covers only {most:.0%} of the smaller and every die of "
                    "the game is found: a die beneath or touching dice, a person must look",
                )
            )
            continue
        if count_over:
            findings.append(
                _looks_stacked_but(
                    i,
                    st,
                    verdict=Verdict.NO_DECISION,
                    reason=FindingReason.STACKED_UNCLEAR,
                    but="more dice are found than the game has: the die under or over it may be itself "
                    "found twice, a person must look",
                )
            )
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
        findings.append(
            Finding(verdict=Verdict.INVALID, reason=FindingReason.DIE_ON_DIE, die_ids=ids, detail=detail)
        )
    return findings, on_top


def _stacks_by_boxes(
    dice: Sequence[DieReading],
    *,
    overlaps: np.ndarray,
    stacked_p: list[float],
    config: JudgeConfig,
    count_short: bool,
    count_over: bool,
    count_unsure: bool,
    geometry: TableGeometry | None,
) -> tuple[list[Finding], set[int]]:
    """Each pair of boxes overlapping by `overlap_stacked` of the smaller: a die on a die where the
    classifier or the felt positions back it, else ruled out or left to a person."""
    findings: list[Finding] = []
    on_top: set[int] = set()
    for i in range(len(dice)):
        for j in range(i + 1, len(dice)):
            ov = float(overlaps[i, j])
            if ov < config.overlap_stacked:
                continue
            boxes_text = f"the boxes of dice {i + 1} and {j + 1} overlap by {ov:.0%} of the smaller"
            backing = []
            p = max(stacked_p[i], stacked_p[j])
            if p >= config.min_state_confidence:
                backing.append(f"the die-state classifier sees a die on a die (p={p:.2f})")
            gap_mm = None if geometry is None else _felt_distance_mm(geometry, dice[i], dice[j])
            rough = ""
            if gap_mm is not None and gap_mm < config.stacked_max_centre_mm:
                leaning = _felt_too_rough(geometry, config)
                if leaning is None:
                    backing.append(f"their felt positions are {gap_mm:.0f} mm apart")
                else:
                    rough = f", too rough to place dice under a camera leaning {leaning:.0f} deg"
            if count_over:
                findings.append(
                    Finding(
                        verdict=Verdict.NO_DECISION,
                        reason=FindingReason.STACKED_UNCLEAR,
                        die_ids=(i + 1, j + 1),
                        detail=f"{boxes_text}, but more dice are found than the game has: one die found "
                        "twice or a die on a die, a person must look",
                    )
                )
                continue
            if not backing:
                # Nothing backs a stack: from above (a calibrated camera leaning little, the count full) two
                # dice side by side boxed loosely; otherwise touching dice or a die on a die, for a person.
                tilt = _tilt_from_above(geometry, config)
                if tilt is not None and gap_mm is not None and not count_short and not count_unsure:
                    verdict, reason = Verdict.VALID, FindingReason.STACKED_RULED_OUT
                    why = (
                        f"the die-state classifier sees no die on a die (p={p:.2f}), their felt positions "
                        f"are {gap_mm:.0f} mm apart and the camera looks from above ({tilt:.0f} deg): two "
                        "dice side by side, boxed loosely"
                    )
                else:
                    apart = "" if gap_mm is None else f", their felt positions {gap_mm:.0f} mm apart{rough}"
                    verdict, reason = Verdict.NO_DECISION, FindingReason.STACKED_UNCLEAR
                    why = (
                        f"nothing else says one lies on the other (die-state p={p:.2f}{apart}): touching "
                        "dice or a die on a die, a person must look"
                    )
                detail = f"{boxes_text}, but {why}"
                findings.append(
                    Finding(verdict=verdict, reason=reason, die_ids=(i + 1, j + 1), detail=detail)
                )
                continue
            top = i if dice[i].candidate.edge_px >= dice[j].candidate.edge_px else j
            on_top.add(top)
            findings.append(
                Finding(
                    verdict=Verdict.INVALID,
                    reason=FindingReason.DIE_ON_DIE,
                    die_ids=(i + 1, j + 1),
                    detail=f"{boxes_text} and {' and '.join(backing)}: one lies on the other",
                )
            )
    return findings, on_top
