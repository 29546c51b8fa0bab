"""Judge a read frame: dice count and per-die certainty -> `Verdict` with reasons.

- certainty: a die whose learned face probability is below `min_confidence`, or whose classical pip
  count is a definite number that differs from the learned face, is "uncertain" (face None) and the
  roll is `no_decision`: never a guess dressed as a reading;
- the judgement stage (`vision.judge`, thresholds in `ValidityConfig.judge`): count (fewer dice than the
  game needs: a die left the table, `invalid`; more: `no_decision`), dice off the table, dice on dice,
  cocked dice read by 675a.4(c) or voided, each finding with the dice it concerns.

- no die: with more detections than the game's dice, those the die-state classifier calls `no_die` with at
  least `JudgeConfig.min_no_die` are left out of the roll before anything else, the surest first and never
  more than the surplus (`Judgement.set_aside`): chip stacks taken for dice.

- second opinions (issue 55; `require_whole_die`, `require_peer_agree` and `require_apart` on since
  docs/history/never-sure-2.md, the others off): `require_turns_agree` (no turn of the crop
  reads another face, `FaceReader.turns_check`; a die not looked at is not held back), `require_pip_agree`
  (the classical pip count is the learned face, not merely not against it), `require_whole_die` (the box
  looks like a whole die, vision/judge/phantom.py), `require_peer_agree` (a second face model trained
  apart, `pips_peer` in the manifest, reads the same face at least `peer_min_confidence` surely; a die it
  did not read is not held back), `require_apart` (no other box covers more than `PhantomConfig.max_overlap`
  of the box: not a box across two touching dice); a die that fails one is uncertain like a die under the
  bar.

Without die states (no die-state model loaded) the judge cannot rule out a die hidden under another or
check for cocked dice: a count below the game's is then `no_decision`, not `invalid`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vision.judge.config import JudgeConfig
from vision.judge.decide import judge_roll
from vision.judge.phantom import PhantomConfig, overlaps, whole_dice
from vision.state.model import DieState
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, FaceReading, Finding, SetAside, Verdict


@dataclass(frozen=True)
class ValidityConfig:
    """Thresholds of the judge."""

    min_confidence: float = 0.90  # below: the learned classifier is not sure enough
    classical_veto: bool = True  # a definite classical pip count that differs makes the die uncertain
    # The veto applies only while the learned confidence is below this; 1.0 (the default) = always.
    # Lower it only with evidence that the classical count is the weaker opinion on your camera.
    veto_below_confidence: float = 1.0
    judge: JudgeConfig = field(default_factory=JudgeConfig)  # off-table, stacked, cocked (vision.judge)
    # Second opinions before a face is given (the module's docstring). The second face model, the phantom
    # check and boxes that stand apart are heeded since issue 55's second candidate shipped by its rule
    # (docs/history/never-sure-2.md); the eight turns and the pip count are off (their time; too few dice).
    require_turns_agree: bool = False
    require_pip_agree: bool = False
    require_whole_die: bool = True
    require_peer_agree: bool = True
    require_apart: bool = True
    # The second face model's own bar (its calibration's `sure_bar`, else this); None: `min_confidence`.
    peer_min_confidence: float | None = None
    phantom: PhantomConfig = field(default_factory=PhantomConfig)

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")
        if not 0.0 <= self.veto_below_confidence <= 1.0:
            raise ValueError(f"veto_below_confidence must be in [0, 1], got {self.veto_below_confidence}")
        if self.peer_min_confidence is not None and not 0.0 <= self.peer_min_confidence <= 1.0:
            raise ValueError(f"peer_min_confidence must be in [0, 1], got {self.peer_min_confidence}")


@dataclass(frozen=True)
class Judgement:
    """The judge's output: the dice with their final faces, the verdict and why."""

    dice: tuple[DieReading, ...]
    verdict: Verdict
    reasons: tuple[str, ...]
    findings: tuple[Finding, ...] = ()
    set_aside: tuple[SetAside, ...] = ()


def judge_die(
    candidate: DieCandidate,
    reading: FaceReading,
    *,
    config: ValidityConfig,
    whole_die: bool | None = None,
    overlap: float | None = None,
) -> DieReading:
    """Decide one die's face, or mark it uncertain with the reasons (`whole_die`: the phantom check;
    `overlap`: the largest share of its box another box covers)."""
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
    if config.require_turns_agree and reading.turns_agree is False:
        reasons.append(f"the turns of the crop do not all read {learned}")
    if config.require_pip_agree and reading.pip_count != learned and not reasons:
        reasons.append(f"the pip count ({reading.pip_count}) does not confirm {learned}")
    if config.require_whole_die and whole_die is False:
        reasons.append("the box does not look like a whole die (its size, or inside another die)")
    if config.require_apart and overlap is not None and overlap > config.phantom.max_overlap:
        reasons.append(
            f"another box covers {overlap:.0%} of this one (a box across two dice, or a die boxed twice)"
        )
    if config.require_peer_agree and reading.peer_face is not None:
        peer_bar = config.min_confidence if config.peer_min_confidence is None else config.peer_min_confidence
        if reading.peer_face != learned:
            reasons.append(f"the second face model reads {reading.peer_face}, not {learned}")
        elif (sure := reading.peer_confidence or 0.0) < peer_bar:
            reasons.append(f"the second face model is unsure of {learned} ({sure:.2f} < {peer_bar:.2f})")
    return DieReading(
        candidate=candidate,
        face=None if reasons else learned,
        face_probs=reading.face_probs,
        pip_count=reading.pip_count,
        uncertain=bool(reasons),
        reasons=tuple(reasons),
        turns_agree=reading.turns_agree,
        whole_die=whole_die,
        peer_face=reading.peer_face,
        peer_confidence=reading.peer_confidence,
        overlap=overlap,
    )


def judge(
    candidates: tuple[DieCandidate, ...],
    readings: tuple[FaceReading, ...],
    *,
    expected_dice: int | None,
    config: ValidityConfig,
    states: Sequence[DieState] | None = None,
    geometry: TableGeometry | None = None,
    weak_peaks: Sequence[DieCandidate] = (),
    unsure_set_aside: Sequence[SetAside] = (),
    frame_findings: Sequence[Finding] = (),
) -> Judgement:
    """Judge a whole frame (candidates, readings and die states in the same order).

    `unsure_set_aside`: detections set aside as a marker or a table mark before the judge where the frame
    is not surely the empty box (vision/table/markers.py); a short count beside one is left to a person.
    `frame_findings`: what the reader found of the frame itself (a camera that moved since calibration).

    `weak_peaks`: the detector's peaks under its score threshold (`DieDetector.detect_with_weak`); a short
    count with one of them on no found die is `no_decision`, not a die off the table (vision/judge/count).
    """
    if len(candidates) != len(readings):
        raise ValueError(f"{len(candidates)} candidates but {len(readings)} face readings")
    if expected_dice is not None and expected_dice < 1:
        raise ValueError(f"expected_dice must be >= 1, got {expected_dice}")
    if states is not None and len(states) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(states)} die states")
    set_aside: tuple[SetAside, ...] = ()
    set_aside_on = config.judge.min_no_die < 1.0  # 1.0 sets nothing aside (a softmax may round to 1.0)
    if set_aside_on and states is not None and expected_dice is not None and len(candidates) > expected_dice:
        # More detections than the game's dice: those the die-state classifier is surest are no die (chip
        # stacks, chip edges) are set aside, never more than the surplus, so the count is never made short.
        p_no_die = [st.p("no_die") for st in states]
        ranked = sorted(range(len(candidates)), key=lambda i: -p_no_die[i])
        surplus = ranked[: len(candidates) - expected_dice]
        out = {i for i in surplus if p_no_die[i] >= config.judge.min_no_die}
        set_aside = tuple(
            SetAside(box_xyxy=c.box_xyxy, score=c.score, p_no_die=p_no_die[i])
            for i, c in enumerate(candidates)
            if i in out
        )
        candidates = tuple(c for i, c in enumerate(candidates) if i not in out)
        readings = tuple(r for i, r in enumerate(readings) if i not in out)
        states = [st for i, st in enumerate(states) if i not in out]
    whole = whole_dice(candidates, geometry=geometry, config=config.phantom)
    dice = tuple(
        judge_die(c, r, config=config, whole_die=w, overlap=o)
        for c, r, w, o in zip(candidates, readings, whole, overlaps(candidates), strict=True)
    )
    dice, verdict, findings = judge_roll(
        dice,
        states,
        expected_dice=expected_dice,
        geometry=geometry,
        config=config.judge,
        weak_peaks=weak_peaks,
        unsure_set_aside=unsure_set_aside,
        frame_findings=frame_findings,
    )
    return Judgement(
        dice=dice,
        verdict=verdict,
        reasons=tuple(f.detail for f in findings),
        findings=findings,
        set_aside=set_aside,
    )
