"""Count and place: fewer dice than the game needs, more, and dice outside the throw box (675a.4(b)).

- Fewer dice than expected: a die left the table (`invalid`, die_off_table), as long as nothing else can
  explain it: with no die-state model the judge cannot exclude a die hidden under another, and with a
  calibration whose throw box is not wholly in view the die may lie out of the picture, so both give
  `no_decision` instead. A die found on top of another explains a missing one (die_on_die covers it).
  So does a die the detector was unsure of: a peak of its heatmap under its score threshold but at least
  `JudgeConfig.weak_peak_score`, on no die found and (with a calibration) inside the throw box, is where
  the missing die may lie, and the roll is `no_decision` (count_mismatch) with the place, not invalid. On
  the seed-900 tuning scenes (whole reader) 18 of 34 such short counts on valid rolls had one, against 3
  of 92 on rolls with a die truly off the table, on a die or missing.
- More dice than expected, or foreign objects taken for dice: `no_decision` (a person must look).
- A die seen outside the box: by the die-state classifier (it sees the wall or the table beyond it) or, with
  a calibration, by its felt position beyond the walls: `invalid`, die_off_table, naming the die; unless
  the dice on the table already number the game's, when the thing off the table is an object (or a die
  found twice): `no_decision`, extra_dice.
"""

from __future__ import annotations

from collections.abc import Sequence

from vision.judge.config import JudgeConfig
from vision.judge.stacked import overlap_of_smaller
from vision.judge.weak import weak_rethrow_call
from vision.state.model import OUTSIDE, DieState
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Finding, FindingReason, SetAside, Verdict

EXPLAINED_OVERLAP = 0.3  # a weak peak whose box overlaps a found die this much is that die, seen again


def outside_dice(
    dice: Sequence[DieReading],
    states: Sequence[DieState] | None,
    *,
    geometry: TableGeometry | None,
    config: JudgeConfig,
    expected_dice: int | None = None,
    maybe_more: int = 0,
) -> tuple[list[Finding], set[int]]:
    """Findings for dice seen off the table, and their 0-based indices.

    With the game's count known, a "die" off the table while the dice on it already number the game's is
    an object off the table (or a die found twice), not a die that left: `no_decision` (extra_dice).
    `maybe_more`: detections set aside as part of the table that may be dice (`unsure_set_aside`); counted
    as dice on the table for that question, so a die hidden in them never makes an object a die that left.
    """
    out: set[int] = set()
    why: dict[int, str] = {}
    for i, die in enumerate(dice):
        if states is not None:
            st = states[i]
            if st.kind == "outside" and st.kind_confidence() >= config.min_rethrow_confidence:
                out.add(i)
                why[i] = f"the die-state classifier sees it off the table (p={st.probs[OUTSIDE]:.2f})"
        if geometry is not None:
            x, y = geometry.centre_mm(die.candidate.box_xyxy)
            beyond = geometry.beyond_walls_mm(x, y)
            if beyond > config.off_table_margin_mm:
                out.add(i)
                why[i] = (
                    f"its centre lies {beyond:.0f} mm beyond the throw box walls at ({x:.0f}, {y:.0f}) mm"
                )
    weak = [
        weak_rethrow_call(i, "lies off the table", st, config)
        for i, st in enumerate(states or ())
        if i not in out
        and st.kind == "outside"
        and config.min_state_confidence <= st.kind_confidence() < config.min_rethrow_confidence
    ]
    on_table = len(dice) - len(out)
    if out and expected_dice is not None and on_table + maybe_more >= expected_dice:
        return weak + [
            Finding(
                verdict=Verdict.NO_DECISION,
                reason=FindingReason.EXTRA_DICE,
                die_ids=(i + 1,),
                detail=f"die {i + 1} looks off the table ({why[i]}), but the {on_table} dice on the table "
                f"are already the game's {expected_dice}: an object off the table or a die found twice, "
                "a person must look",
            )
            for i in sorted(out)
        ], out
    findings = weak + [
        Finding(
            verdict=Verdict.INVALID,
            reason=FindingReason.DIE_OFF_TABLE,
            die_ids=(i + 1,),
            detail=f"die {i + 1} is off the table: {why[i]}",
        )
        for i in sorted(out)
    ]
    return findings, out


def unexplained_peaks(
    weak_peaks: Sequence[DieCandidate],
    dice: Sequence[DieReading],
    *,
    geometry: TableGeometry | None,
    config: JudgeConfig,
) -> list[DieCandidate]:
    """The detector's weak peaks that may be a die not found: strong enough, on no found die, in the box."""
    out = []
    for peak in weak_peaks:
        if peak.score < config.weak_peak_score:
            continue
        if any(overlap_of_smaller(peak.box_xyxy, d.candidate.box_xyxy) > EXPLAINED_OVERLAP for d in dice):
            continue
        if geometry is not None and geometry.beyond_walls_mm(*geometry.centre_mm(peak.box_xyxy)) > 0:
            continue
        out.append(peak)
    return out


def places(boxes: Sequence[Sequence[float]]) -> int:
    """How many separate places the boxes make (boxes that overlap are one place)."""
    groups: list[list[Sequence[float]]] = []
    for b in boxes:
        touching = [
            g for g in groups if any(b[0] < o[2] and b[2] > o[0] and b[1] < o[3] and b[3] > o[1] for o in g)
        ]
        merged = [b] + [o for g in touching for o in g]
        groups = [g for g in groups if g not in touching] + [merged]
    return len(groups)


def oversized_boxes(ratios: Sequence[float], *, config: JudgeConfig) -> list[tuple[int, float]]:
    """(1-based die id, ratio) of each box over `JudgeConfig.short_count_max_box_ratio` (none when off)."""
    bar = config.short_count_max_box_ratio
    if bar is None:
        return []
    return [(i + 1, r) for i, r in enumerate(ratios) if r > bar]


def _count_unclear(detail: str, die_ids: tuple[int, ...] = ()) -> Finding:
    """A short count that cannot be judged: `no_decision`, count_mismatch, saying why."""
    return Finding(
        verdict=Verdict.NO_DECISION, reason=FindingReason.COUNT_MISMATCH, die_ids=die_ids, detail=detail
    )


def _at(box_xyxy: Sequence[float]) -> str:
    """A box's centre as the reasons write it: "(x, y)" in whole pixels."""
    return f"({(box_xyxy[0] + box_xyxy[2]) / 2:.0f}, {(box_xyxy[1] + box_xyxy[3]) / 2:.0f})"


def count_findings(
    n_found: int,
    *,
    expected_dice: int | None,
    states_known: bool,
    stacked_found: bool,
    geometry: TableGeometry | None,
    unsure: Sequence[DieCandidate] = (),
    oversized: Sequence[tuple[int, float]] = (),
    unsure_set_aside: Sequence[SetAside] = (),
    camera_moved: bool = False,
) -> list[Finding]:
    """Findings of the dice count against the game's (none when no count is expected or it matches).

    `unsure`: the detector's weak peaks on no found die (`unexplained_peaks`). `oversized`: (die id,
    size ratio) of each box that may hold more than one die (`oversized_boxes`). `unsure_set_aside`:
    detections set aside as a marker or a table mark where the frame is not surely the empty box
    (`JudgeConfig.sure_mark_likeness`): a see-through die may lie there. `camera_moved`: the table's camera
    moved since calibration, so whether the throw box is wholly in view is not known.
    """
    if n_found == 0:
        return [
            Finding(
                verdict=Verdict.NO_DECISION, reason=FindingReason.NO_DICE, die_ids=(), detail="no dice found"
            )
        ]
    if expected_dice is None or n_found == expected_dice:
        return []
    text = f"expected {expected_dice} dice, found {n_found}"
    if n_found > expected_dice:
        return [
            Finding(
                verdict=Verdict.NO_DECISION,
                reason=FindingReason.EXTRA_DICE,
                die_ids=(),
                detail=f"{text}: extra dice or foreign objects",
            )
        ]
    if stacked_found:
        return []  # the die on a die is the finding; the hidden die under it is not missing from the table
    if not states_known:
        # Without die states a die hidden under another cannot be ruled out (module docstring).
        return [_count_unclear(text)]
    if geometry is not None and not geometry.box_in_view():
        hidden = " (a die lying against a wall could be hidden behind it from this camera)"
        return [
            _count_unclear(
                f"{text} and the throw box is not wholly in view"
                + (hidden if geometry.walls_hide_a_die() else "")
            )
        ]
    if camera_moved:
        return [
            _count_unclear(
                f"{text} and the camera moved since calibration: the throw box may not be wholly in view, a "
                "person must look"
            )
        ]
    if unsure:
        where = ", ".join(f"{_at(p.box_xyxy)} score {p.score:.2f}" for p in unsure[:3])
        return [
            _count_unclear(
                f"{text}, but the detector saw what may be a die it was unsure of at {where}: "
                "a person must look"
            )
        ]
    if unsure_set_aside:
        where = ", ".join(
            f"{a.what} at {_at(a.box_xyxy)} "
            + (
                "(its look was not kept at calibration)"
                if a.likeness is None
                else f"(it looks {a.likeness:.3f} like the empty box)"
            )
            for a in unsure_set_aside[:3]
        )
        return [
            _count_unclear(
                f"{text}, but a die may lie over the table's markers or print, which do not look as they did "
                f"on the empty box: {where}; a person must look"
            )
        ]
    if oversized:
        which = ", ".join(f"die {i} is {r:.1f}" for i, r in oversized)
        return [
            _count_unclear(
                f"{text}, but {which} times the frame's typical die: touching dice may be boxed as one, "
                "a person must look",
                die_ids=tuple(i for i, _ in oversized),
            )
        ]
    missing = expected_dice - n_found
    return [
        Finding(
            verdict=Verdict.INVALID,
            reason=FindingReason.DIE_OFF_TABLE,
            die_ids=(),
            detail=f"{text}: {missing} {'dice' if missing > 1 else 'die'} left the table "
            "(or lie wholly hidden under other dice: invalid either way, 675a.4(b))",
        )
    ]
