"""The rule of docs/history/never-sure-1.md (and -2.md) applied to the pooled risk reports and the paired
bench.

python reports/reader/risk/judge_rule.py reports/reader/risk   (after `throwbox lab risk-pool` and
`throwbox lab bench --candidate ... --json > DIR/bench-pair.json`)
python reports/reader/risk/judge_rule.py DIR VARIANT BASELINE_DIR   (never-sure-2.md: the candidate's reports
in DIR read by its VARIANT, 18c's in BASELINE_DIR)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CANDIDATE_VARIANT = "bar+turns_unsure+whole_die"


def _load(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return out


def judge(folder: Path, variant: str = CANDIDATE_VARIANT, baseline: Path | None = None) -> dict[str, Any]:
    """Each clause's figures and whether it holds."""
    base = baseline or folder
    old_home = _load(base / "18c-home.json")["variants"]["bar"]["shipped_bar"]
    old_away_rep = _load(base / "18c-away.json")
    old_away = old_away_rep["variants"]["bar"]["shipped_bar"]
    new_home = _load(folder / "candidate-home.json")["variants"][variant]["shipped_bar"]
    new_away = _load(folder / "candidate-away.json")["variants"][variant]["shipped_bar"]
    r1 = new_away["wrong"]["per_1000"] < old_away["wrong"]["per_1000"]
    r2 = new_home["wrong"]["per_1000"] <= old_home["wrong"]["ci95_per_1000"][1]
    # Clause 3: 18c's own curve (bar alone), the lowest bar whose away risk is no more than the candidate's.
    matched = next(
        (
            p
            for p in old_away_rep["variants"]["bar"]["curve"]
            if p["wrong"]["per_1000"] is not None and p["wrong"]["per_1000"] <= new_away["wrong"]["per_1000"]
        ),
        None,
    )
    r3 = matched is None or new_away["share_given_pct"] >= matched["share_given_pct"]
    bench_path = folder / "bench-pair.json"
    bench = _load(bench_path) if bench_path.is_file() else None
    r4 = None if bench is None else bench["candidate_over_shipped_p50"] <= 1.3
    return {
        "variant": variant,
        "1_away_fewer_wrong": {"candidate": new_away["wrong"], "18c": old_away["wrong"], "holds": r1},
        "2_home_within_18c_interval": {"candidate": new_home["wrong"], "18c": old_home["wrong"], "holds": r2},
        "3_most_dice_at_that_risk": {
            "candidate_share_given_pct": new_away["share_given_pct"],
            "18c_at_bar": None if matched is None else matched["bar"],
            "18c_share_given_pct": None if matched is None else matched["share_given_pct"],
            "18c_wrong_there": None if matched is None else matched["wrong"],
            "holds": r3,
        },
        "4_speed": {"bench": bench, "holds": r4},
        "ships": bool(r1 and r2 and r3 and r4),
    }


if __name__ == "__main__":
    args = sys.argv[1:]
    folder = Path(args[0] if args else "reports/reader/risk")
    variant = args[1] if len(args) > 1 else CANDIDATE_VARIANT
    baseline = Path(args[2]) if len(args) > 2 else None
    print(json.dumps(judge(folder, variant, baseline), indent=1))
