"""Cocked dice (675a.4(c)): read by the side opposite the one resting on the chips, void if more rest.

A die leaning with one side on chips (or another object) and an edge on the felt, at less than 45 degrees,
has the face opposite the resting side uppermost: the top face the classifier reads IS the reading by the
rule, so the die keeps its read face and is marked cocked with its tilt. With more than one side resting
(wedged between stacks), the roll is void (rethrow). When the classifier cannot tell one side from two
(`cocked_wedged_margin`) or the tilt is so near 45 degrees that two faces look up equally
(`max_readable_tilt_deg`), or its face is read less surely than `min_cocked_face_confidence` (unless it is
at least `cocked_face_corroborated` and the classical pip count is that same face: two opinions that agree),
or a table calibration says the camera looks at the box obliquely (`max_cocked_camera_tilt_deg`: the face it
reads is the one toward the camera), the roll is `no_decision` for a person, never a guess. The face these
bars are set against is, with `cocked_turned_looks` (off), the closer look's: the die's crop read in four
turns (vision/state/probe.py::reread_cocked). With a calibration and `max_cocked_tilt_plus_view_deg` (off), a
die whose tilt plus the angle of the camera's ray to it from the vertical passes that goes to a person:
leaning toward the camera, a side face would face it more squarely than the top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vision.judge.config import JudgeConfig
from vision.judge.weak import weak_rethrow_call
from vision.state.model import COCKED, WEDGED, DieState
from vision.types import DieReading, Finding, FindingReason, Verdict


@dataclass(frozen=True)
class CockedCall:
    """What the judge concluded for one cocked die."""

    index: int  # 0-based
    tilt_deg: float
    void: bool  # more than one side resting: no reading, the roll is void
    unclear: bool  # too close to call: no_decision


# Said of a die found by the second look within a box first called no die (vision/state/probe.py).
PROBED = ", found by a second look within a box the die-state model called no die (a chip stack beside it)"


def _corroborated(die: DieReading, config: JudgeConfig) -> bool:
    """Is this die's face, read under the cocked bar, still at least `cocked_face_corroborated` sure and
    counted the same by the classical pip count?"""
    bar = config.cocked_face_corroborated
    return (
        bar is not None
        and die.face is not None
        and max(die.face_probs) >= bar
        and die.pip_count is not None
        and die.pip_count == die.face
    )


def cocked_dice(
    dice: Sequence[DieReading],
    states: Sequence[DieState],
    *,
    config: JudgeConfig,
    camera_tilt_deg: float | None = None,
    view_angles_deg: Sequence[float] | None = None,
) -> tuple[list[Finding], list[CockedCall]]:
    """Findings about cocked and wedged dice, and a call per such die.

    `camera_tilt_deg`: the calibrated camera's angle from straight down (None without a calibration).
    `view_angles_deg`: per die, the angle between the vertical and the calibrated camera's ray to it
    (`TableGeometry.view_angles_deg`; None without a calibration).
    """
    oblique = camera_tilt_deg is not None and camera_tilt_deg > config.max_cocked_camera_tilt_deg
    findings: list[Finding] = []
    calls: list[CockedCall] = []
    for i, st in enumerate(states):
        if st.kind != "cocked" or st.kind_confidence() < config.min_state_confidence:
            continue
        p_one, p_more = st.probs[COCKED], st.probs[WEDGED]
        if p_more > p_one and abs(p_one - p_more) >= config.cocked_wedged_margin:
            if st.kind_confidence() < config.min_rethrow_confidence:
                findings.append(weak_rethrow_call(i, "is wedged on more than one side", st, config))
                calls.append(CockedCall(i, st.tilt_deg, void=False, unclear=True))
                continue
            findings.append(
                Finding(
                    verdict=Verdict.VOID,
                    reason=FindingReason.COCKED_MULTI_SIDE,
                    die_ids=(i + 1,),
                    detail=f"die {i + 1} is cocked with more than one side resting (p={p_more:.2f}, "
                    f"tilt {st.tilt_deg:.0f} deg){PROBED if st.probed else ''}: void, rethrow (675a.4(c))",
                )
            )
            calls.append(CockedCall(i, st.tilt_deg, void=True, unclear=False))
            continue
        # One side resting (or too close to call): read by rule, unless something leaves it to a person.
        unclear: str | None = None
        if abs(p_one - p_more) < config.cocked_wedged_margin:
            unclear = (
                f"die {i + 1} is cocked, but whether one side or more rests is too close to call "
                f"(one {p_one:.2f}, more {p_more:.2f})"
            )
        elif st.tilt_deg > config.max_readable_tilt_deg:
            unclear = (
                f"die {i + 1} is tilted {st.tilt_deg:.0f} deg: too close to 45 to say which face is uppermost"
            )
        elif oblique:
            unclear = (
                f"die {i + 1} is cocked {st.tilt_deg:.0f} deg on one side, seen by a camera "
                f"{camera_tilt_deg:.0f} deg from straight down: the face toward the camera need not be "
                "the uppermost one the rule reads, a person reads it"
            )
        elif (
            config.max_cocked_tilt_plus_view_deg is not None
            and view_angles_deg is not None
            and st.tilt_deg + view_angles_deg[i] > config.max_cocked_tilt_plus_view_deg
        ):
            unclear = (
                f"die {i + 1} is cocked {st.tilt_deg:.0f} deg on one side, {view_angles_deg[i]:.0f} deg off "
                f"the camera's axis: leaning toward the camera, a side face would face it more squarely than "
                f"the top (over {config.max_cocked_tilt_plus_view_deg:.0f} deg together), a person reads it"
            )
        elif (
            dice[i].face is not None
            and max(dice[i].face_probs) < config.min_cocked_face_confidence
            and not _corroborated(dice[i], config)
        ):
            # The face classifier reads tilted dice less surely than flat ones, and a wrong face read by
            # rule settles a wrong roll: below this bar a person reads it.
            unclear = (
                f"die {i + 1} is cocked {st.tilt_deg:.0f} deg on one side and reads "
                f"{dice[i].face} at only p={max(dice[i].face_probs):.2f} < "
                f"{config.min_cocked_face_confidence:.2f} (the bar for a cocked die): a person reads it"
            )
        if unclear is not None:
            findings.append(
                Finding(
                    verdict=Verdict.NO_DECISION,
                    reason=FindingReason.COCKED_UNCLEAR,
                    die_ids=(i + 1,),
                    detail=unclear,
                )
            )
            calls.append(CockedCall(i, st.tilt_deg, void=False, unclear=True))
            continue
        calls.append(CockedCall(i, st.tilt_deg, void=False, unclear=False))
        face = dice[i].face
        read = (
            f"read {face} (the face opposite the side resting, 675a.4(c))"
            if face is not None
            else "its face is uncertain"
        )
        p_face, bar = max(dice[i].face_probs), config.min_cocked_face_confidence
        if face is not None and p_face < bar:
            read += (
                f"; read at p={p_face:.2f}, under the {bar:.2f} bar for a cocked die, and the pip count is "
            )
            read += f"{face} too"
        findings.append(
            Finding(
                verdict=Verdict.VALID,
                reason=FindingReason.COCKED_READ_BY_RULE,
                die_ids=(i + 1,),
                detail=f"die {i + 1} is cocked {st.tilt_deg:.0f} deg on one side (p={p_one:.2f}): {read}",
            )
        )
    return findings, calls
