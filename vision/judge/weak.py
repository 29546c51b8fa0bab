"""`no_decision` for a die-state call that would send the dice back, made with too little confidence."""

from __future__ import annotations

from vision.judge.config import JudgeConfig
from vision.state.model import DieState
from vision.types import Finding, FindingReason, Verdict


def weak_rethrow_call(i: int, what: str, st: DieState, config: JudgeConfig) -> Finding:
    """`state_uncertain` for die `i` (0-based) that may be one that `what`, below `min_rethrow_confidence`."""
    return Finding(
        verdict=Verdict.NO_DECISION,
        reason=FindingReason.STATE_UNCERTAIN,
        die_ids=(i + 1,),
        detail=f"die {i + 1} may be one that {what} (p={st.kind_confidence():.2f}), below the "
        f"{config.min_rethrow_confidence:.2f} needed to call a rethrow: a person must look",
    )
