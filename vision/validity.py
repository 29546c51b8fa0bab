"""Judge a read frame: dice count and per-die certainty -> `Verdict` with reasons.

This stage does only two checks for now (a later task adds stacked, cocked and off-table dice here):

- count: with an expected number of dice (`--expect`, or the table's game), any other count is
  `no_decision` (a die may be hidden, off the table or on another die: a person must look);
- certainty: a die whose learned face probability is below `min_confidence`, or whose classical pip
  count is a definite number that differs from the learned face, is "uncertain" (face None) and the
  roll is `no_decision`: never a guess dressed as a reading.
"""

from __future__ import annotations

from dataclasses import dataclass

from vision.types import DieCandidate, DieReading, FaceReading, Verdict


@dataclass(frozen=True)
class ValidityConfig:
    """Thresholds of the judge."""

    min_confidence: float = 0.90  # below: the learned classifier is not sure enough
    classical_veto: bool = True  # a definite classical pip count that differs makes the die uncertain
    # The veto applies only while the learned confidence is below this; 1.0 (the default) = always.
    # Lower it only with evidence that the classical count is the weaker opinion on your camera.
    veto_below_confidence: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")
        if not 0.0 <= self.veto_below_confidence <= 1.0:
            raise ValueError(f"veto_below_confidence must be in [0, 1], got {self.veto_below_confidence}")


@dataclass(frozen=True)
class Judgement:
    """The judge's output: the dice with their final faces, the verdict and why."""

    dice: tuple[DieReading, ...]
    verdict: Verdict
    reasons: tuple[str, ...]


def judge_die(candidate: DieCandidate, reading: FaceReading, *, config: ValidityConfig) -> DieReading:
    """Decide one die's face, or mark it uncertain with the reasons."""
    learned = reading.learned_face
    reasons: list[str] = []
    if reading.confidence < config.min_confidence:
        reasons.append(
            f"low confidence {reading.confidence:.2f} < {config.min_confidence:.2f} (reads {learned})"
        )
    if (
        config.classical_veto
        and reading.pip_count is not None
        and reading.pip_count != learned
        and reading.confidence < config.veto_below_confidence
    ):
        reasons.append(f"classifier reads {learned} but the pip count is {reading.pip_count}")
    return DieReading(
        candidate=candidate,
        face=None if reasons else learned,
        face_probs=reading.face_probs,
        pip_count=reading.pip_count,
        uncertain=bool(reasons),
        reasons=tuple(reasons),
    )


def judge(
    candidates: tuple[DieCandidate, ...],
    readings: tuple[FaceReading, ...],
    *,
    expected_dice: int | None,
    config: ValidityConfig,
) -> Judgement:
    """Judge a whole frame (candidates and readings in the same order)."""
    if len(candidates) != len(readings):
        raise ValueError(f"{len(candidates)} candidates but {len(readings)} face readings")
    if expected_dice is not None and expected_dice < 1:
        raise ValueError(f"expected_dice must be >= 1, got {expected_dice}")
    dice = tuple(judge_die(c, r, config=config) for c, r in zip(candidates, readings, strict=True))
    reasons: list[str] = []
    if not dice:
        reasons.append("no dice found")
    if expected_dice is not None and len(dice) != expected_dice:
        reasons.append(f"expected {expected_dice} dice, found {len(dice)}")
    for i, die in enumerate(dice):
        for why in die.reasons:
            x0, y0, x1, y1 = die.candidate.box_xyxy
            reasons.append(f"die {i + 1} at ({(x0 + x1) / 2:.0f}, {(y0 + y1) / 2:.0f}) uncertain: {why}")
    return Judgement(
        dice=dice, verdict=Verdict.NO_DECISION if reasons else Verdict.VALID, reasons=tuple(reasons)
    )
