"""Count and place: fewer dice than the game needs, more, and dice outside the throw box (675a.4(b)).

- Fewer dice than expected: a die left the table (`invalid`, die_off_table), as long as nothing else can
  explain it: with no die-state model the judge cannot exclude a die hidden under another, and with a
  calibration whose throw box is not wholly in view the die may lie out of the picture, so both give
  `no_decision` instead. A die found on top of another explains a missing one (die_on_die covers it).
- More dice than expected, or foreign objects taken for dice: `no_decision` (a person must look).
- A die seen outside the box: by the die-state classifier (it sees the wall or the table beyond it) or, with
  a calibration, by its felt position beyond the walls: `invalid`, die_off_table, naming the die.
"""

from __future__ import annotations

from collections.abc import Sequence

from vision.judge.config import JudgeConfig
from vision.judge.geometry import TableGeometry
from vision.judge.state import OUTSIDE, DieState
from vision.judge.weak import weak_rethrow_call
from vision.types import DieReading, Finding, Verdict


def outside_dice(
    dice: Sequence[DieReading],
    states: Sequence[DieState] | None,
    *,
    geometry: TableGeometry | None,
    config: JudgeConfig,
) -> tuple[list[Finding], set[int]]:
    """Findings for dice seen off the table, and their 0-based indices."""
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
    findings = weak + [
        Finding(
            verdict=Verdict.INVALID,
            reason="die_off_table",
            die_ids=(i + 1,),
            detail=f"die {i + 1} is off the table: {why[i]}",
        )
        for i in sorted(out)
    ]
    return findings, out


def count_findings(
    n_found: int,
    *,
    expected_dice: int | None,
    states_known: bool,
    stacked_found: bool,
    geometry: TableGeometry | None,
) -> list[Finding]:
    """Findings of the dice count against the game's (none when no count is expected or it matches)."""
    if n_found == 0:
        return [Finding(verdict=Verdict.NO_DECISION, reason="no_dice", die_ids=(), detail="no dice found")]
    if expected_dice is None or n_found == expected_dice:
        return []
    text = f"expected {expected_dice} dice, found {n_found}"
    if n_found > expected_dice:
        return [
            Finding(
                verdict=Verdict.NO_DECISION,
                reason="extra_dice",
                die_ids=(),
                detail=f"{text}: extra dice or foreign objects",
            )
        ]
    if stacked_found:
        return []  # the die on a die is the finding; the hidden die under it is not missing from the table
    if not states_known:
        # Without die states a die hidden under another cannot be ruled out (module docstring).
        return [Finding(verdict=Verdict.NO_DECISION, reason="count_mismatch", die_ids=(), detail=text)]
    if geometry is not None and not geometry.box_in_view():
        return [
            Finding(
                verdict=Verdict.NO_DECISION,
                reason="count_mismatch",
                die_ids=(),
                detail=f"{text} and the throw box is not wholly in view",
            )
        ]
    missing = expected_dice - n_found
    return [
        Finding(
            verdict=Verdict.INVALID,
            reason="die_off_table",
            die_ids=(),
            detail=f"{text}: {missing} {'dice' if missing > 1 else 'die'} left the table "
            "(or lie wholly hidden under other dice: invalid either way, 675a.4(b))",
        )
    ]
