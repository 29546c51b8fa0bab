"""docs/history/state-pretrained.md's rule applied to judge.sh's JSONs: each check, both figures, pass/fail.

python reports/reader/state-lite/rule.py reports/reader/state-lite
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def load(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def faces_wrong(ev: dict[str, Any]) -> int:
    """Faces given against the label: the confusion matrix off its diagonal, the uncertain column left out."""
    m = ev["confusion_gt_rows_read_cols_1_to_6_and_uncertain"]
    return sum(v for i, row in enumerate(m) for j, v in enumerate(row[:6]) if i != j)


def main() -> None:
    folder = Path(sys.argv[1])
    checks: list[tuple[str, float, float, bool]] = []  # (figure, shipped, candidate, higher is better)
    a, b = load(folder, "held-shipped.json"), load(folder, "held-cand.json")
    for key in ("cocked_flagged", "cocked_read_by_rule", "die_on_die_invalid_any_reason"):
        checks.append((f"S1 held-out: {key} %", a["recall_pct"][key], b["recall_pct"][key], True))
    for name, key in (
        ("good rolls left to a person %", "valid_no_decision_pct"),
        ("good rolls sent back (invalid or void) %", "valid_called_invalid_or_void_pct"),
        ("rolls read valid that settle wrong", "rolls_read_valid_settled_wrong"),
    ):
        checks.append((f"S1 held-out: {name}", a[key], b[key], False))
    for real in ("nellbyler", "matteop65"):
        a, b = load(folder, f"{real}-shipped.json"), load(folder, f"{real}-cand.json")
        for key in ("recall_pct", "precision_pct"):
            checks.append((f"S2 {real}: detection {key}", a["detection"][key], b["detection"][key], True))
        for key, up in (
            ("final_of_gt_dice", True),
            ("final_of_matched", True),
            ("uncertain_of_matched", False),
        ):
            checks.append(
                (f"S2 {real}: face {key} %", a["face_accuracy_pct"][key], b["face_accuracy_pct"][key], up)
            )
        checks.append((f"S2 {real}: faces against the label", faces_wrong(a), faces_wrong(b), False))
        for key, up in (("exact_valid_pct", True), ("read_valid_settled_wrong", False)):
            checks.append((f"S2 {real}: rolls {key}", a["rolls"][key], b["rolls"][key], up))
    print("| check | shipped | candidate | verdict |")
    print("|---|---|---|---|")
    ok_all = True
    for name, x, y, up in checks:
        ok = (y >= x) if up else (y <= x)
        ok_all &= ok
        print(f"| {name} | {x} | {y} | {'pass' if ok else 'FAIL'} |")
    pa = load(folder, "bench-shipped.json")["one_thread"]["p50_ms"]
    pb = load(folder, "bench-cand.json")["one_thread"]["p50_ms"]
    ok = pb <= 1.2 * pa
    ok_all &= ok
    print(f"| S3 bench p50 ms (one thread) | {pa} | {pb} ({pb / pa:.2f}x) | {'pass' if ok else 'FAIL'} |")
    print(f"\nverdict: {'SHIPS' if ok_all else 'REFUSED'}")


if __name__ == "__main__":
    main()
