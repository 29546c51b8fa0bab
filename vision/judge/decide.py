"""All findings into one verdict: invalid > void > no_decision > valid, every finding kept as a reason.

Invalid (a die off the table, a die on a die) wins over void (both mean the dice are thrown again, and
invalid is what the regulation names first, 675a.4(b)); either wins over `no_decision`, because a roll that
must be rethrown for a reason seen with confidence does not need a person to decide an unclear die in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from vision.judge.cocked import CockedCall, cocked_dice
from vision.judge.config import JudgeConfig
from vision.judge.count import count_findings, outside_dice, oversized_boxes, places, unexplained_peaks
from vision.judge.exposure import exposure_failure
from vision.judge.size import object_unclear, size_ratios, small_aces
from vision.judge.stacked import stacked_dice
from vision.state.model import DieState
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Finding, FindingReason, SetAside, Verdict

PRECEDENCE: tuple[Verdict, ...] = (Verdict.INVALID, Verdict.VOID, Verdict.NO_DECISION)


def verdict_of(findings: Sequence[Finding]) -> Verdict:
    """The strongest verdict among the findings; valid when none degrades the roll."""
    for v in PRECEDENCE:
        if any(f.verdict is v for f in findings):
            return v
    return Verdict.VALID


def judge_roll(
    dice: Sequence[DieReading],
    states: Sequence[DieState] | None,
    *,
    expected_dice: int | None,
    geometry: TableGeometry | None,
    config: JudgeConfig,
    weak_peaks: Sequence[DieCandidate] = (),
    unsure_set_aside: Sequence[SetAside] = (),
    frame_findings: Sequence[Finding] = (),
) -> tuple[tuple[DieReading, ...], Verdict, tuple[Finding, ...]]:
    """Judge a roll whose dice have their faces read: updated dice, the verdict and its findings.

    `weak_peaks`: the detector's peaks under its threshold (`DieDetector.detect_with_weak`), if known.
    `unsure_set_aside`: markers and table marks set aside where a die may lie (`count_findings`).
    `frame_findings`: what was found of the frame before the dice (a camera that moved), kept first.
    """
    if states is not None and len(states) != len(dice):
        raise ValueError(f"{len(dice)} dice but {len(states)} die states")
    findings = _die_findings(dice, states, config=config)
    # A short count beside something set aside as part of the table where a see-through die may lie is
    # neither short nor full for sure: no rule may lean on it either way (vision/table/markers.py).
    short = expected_dice is not None and len(dice) < expected_dice
    # The same where the camera moved since calibration: part of the box may now be out of view.
    moved = any(f.reason == FindingReason.CAMERA_MOVED for f in frame_findings)
    count_unsure = short and (bool(unsure_set_aside) or moved)
    off_findings, off = outside_dice(
        dice,
        states,
        geometry=geometry,
        config=config,
        expected_dice=expected_dice,
        maybe_more=places([a.box_xyxy for a in unsure_set_aside]),
    )
    stack_findings, on_top = stacked_dice(
        dice,
        states,
        config=config,
        count_short=short and not count_unsure,
        count_over=expected_dice is not None and len(dice) > expected_dice,
        count_unsure=count_unsure,
        geometry=geometry,
    )
    findings = (
        list(frame_findings)
        + count_findings(
            len(dice),
            expected_dice=expected_dice,
            states_known=states is not None,
            stacked_found=any(f.reason == FindingReason.DIE_ON_DIE for f in stack_findings),
            geometry=geometry,
            unsure=unexplained_peaks(weak_peaks, dice, geometry=geometry, config=config),
            oversized=oversized_boxes(size_ratios(dice), config=config),
            unsure_set_aside=unsure_set_aside,
            camera_moved=moved,
        )
        + off_findings
        + stack_findings
        + findings
    )
    calls: list[CockedCall] = []
    if states is not None:
        tilt = geometry.camera.pose.tilt_deg if geometry is not None else None
        views = (
            [float(v) for v in geometry.view_angles_deg([d.candidate.box_xyxy for d in dice])]
            if geometry is not None and config.max_cocked_tilt_plus_view_deg is not None
            else None
        )
        cocked_findings, calls = cocked_dice(
            dice, states, config=config, camera_tilt_deg=tilt, view_angles_deg=views
        )
        findings += cocked_findings
    findings = object_unclear(findings, dice, config=config)
    findings += small_aces(dice, geometry=geometry, config=config)
    by_die = {c.index: c for c in calls}
    out = []
    for i, die in enumerate(dice):
        changes: dict[str, object] = {"stacked": i in on_top, "off_table": i in off}
        if states is not None:
            st = states[i]
            changes.update(state=st.label, state_confidence=st.confidence, tilt_deg=st.tilt_deg)
        call = by_die.get(i)
        if call is not None:
            changes["cocked"] = True
            if call.void:
                changes.update(
                    face=None, uncertain=True, reasons=(*die.reasons, "more than one side resting")
                )
        if geometry is not None:
            changes["layout_box"] = geometry.layout_label(*geometry.centre_mm(die.candidate.box_xyxy))
        out.append(replace(die, **changes))  # type: ignore[arg-type]
    # A frame washed out or too dark (vision/judge/exposure.py) is judged by no rule: whatever else was found
    # there, from texture taken for dice or faces misread, a person decides.
    verdict = Verdict.NO_DECISION if exposure_failure(frame_findings) else verdict_of(findings)
    return tuple(out), verdict, tuple(findings)


def _die_findings(
    dice: Sequence[DieReading], states: Sequence[DieState] | None, *, config: JudgeConfig
) -> list[Finding]:
    """What each die alone leaves to a person: a face read unsure, a detection the die-state classifier
    takes for no die, or a state it cannot tell."""
    findings: list[Finding] = []
    for i, die in enumerate(dice):
        for why in die.reasons:
            x0, y0, x1, y1 = die.candidate.box_xyxy
            findings.append(
                Finding(
                    verdict=Verdict.NO_DECISION,
                    reason=FindingReason.FACE_UNCERTAIN,
                    die_ids=(i + 1,),
                    detail=f"die {i + 1} at ({(x0 + x1) / 2:.0f}, {(y0 + y1) / 2:.0f}) uncertain: {why}",
                )
            )
    if states is not None:
        for i, st in enumerate(states):
            if st.kind == "no_die" or st.p("no_die") >= config.min_no_die:
                # Kept (the count needs it, vision.judge.validity, or not sure enough to set aside) though the
                # classifier sees most likely no die there: a chip stack read as a die would settle a wrong
                # roll, and a real die may be missing under it.
                x0, y0, x1, y1 = dice[i].candidate.box_xyxy
                findings.append(
                    Finding(
                        verdict=Verdict.NO_DECISION,
                        reason=FindingReason.OBJECT_UNCLEAR,
                        die_ids=(i + 1,),
                        detail=f"die {i + 1} at ({(x0 + x1) / 2:.0f}, {(y0 + y1) / 2:.0f}) looks like no die "
                        f"to the die-state classifier (p={st.p('no_die'):.2f}): a chip stack or another "
                        "object, or a die it does not know; a person must look",
                    )
                )
            elif st.kind_confidence() < config.min_state_confidence:
                findings.append(
                    Finding(
                        verdict=Verdict.NO_DECISION,
                        reason=FindingReason.STATE_UNCERTAIN,
                        die_ids=(i + 1,),
                        detail=f"cannot tell whether die {i + 1} lies flat: most likely {st.kind} "
                        f"at only p={st.kind_confidence():.2f} < {config.min_state_confidence:.2f}",
                    )
                )
    return findings
