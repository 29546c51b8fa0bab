"""Frames of the same rest (issue 55's fourth second opinion): a face is sure only where every frame of the
rest reads it the same.

While the dice rest, the camera sees them more than once (the settle detector waits for them to stay still,
vision/settle.py). The small net's errors move with light, noise and a pixel's shift; a die's face does not.
`agree_over_frames` keeps each die's face of the first frame's roll only where each later frame of the same
rest has a die at the same place (IoU >= `min_iou`) read the same; the rest become uncertain, and the roll,
with an uncertain die, `no_decision`. Not wired into the live loop yet (it reads one frame per rest): the
building block, tested on rolls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from vision.detect.centernet import box_iou
from vision.types import DieReading, Roll, Verdict

MIN_IOU = 0.5


def _same_die(die: DieReading, others: Sequence[DieReading], *, min_iou: float) -> DieReading | None:
    """The die of another frame at the same place (the best overlap over `min_iou`), if any."""
    box = np.asarray(die.candidate.box_xyxy, np.float32)
    best, best_iou = None, min_iou
    for other in others:
        iou = box_iou(box, np.asarray(other.candidate.box_xyxy, np.float32))
        if iou >= best_iou:
            best, best_iou = other, iou
    return best


def agree_over_frames(rolls: Sequence[Roll], *, min_iou: float = MIN_IOU) -> Roll:
    """The first roll, each of its faces kept only where every later roll of the same rest reads that die
    the same; a die that loses its face is uncertain, and a valid roll with one is `no_decision`."""
    if not rolls:
        raise ValueError("no roll to agree over")
    first, later = rolls[0], rolls[1:]
    dice = []
    for die in first.dice:
        if die.face is None:
            dice.append(die)
            continue
        seen = [_same_die(die, r.dice, min_iou=min_iou) for r in later]
        differ = [k + 2 for k, s in enumerate(seen) if s is None or s.face != die.face]
        if not differ:
            dice.append(die)
            continue
        why = f"frame(s) {', '.join(map(str, differ))} of the same rest do not read {die.face} here"
        dice.append(replace(die, face=None, uncertain=True, reasons=(*die.reasons, why)))
    uncertain = any(d.face is None for d in dice) and not any(d.face is None for d in first.dice)
    verdict = Verdict.NO_DECISION if uncertain and first.verdict is Verdict.VALID else first.verdict
    reasons = first.reasons + (("the frames of the rest disagree on a face",) if uncertain else ())
    return replace(
        first,
        dice=tuple(dice),
        verdict=verdict,
        reasons=reasons,
        faces=tuple(d.face for d in dice if d.face is not None),
    )
