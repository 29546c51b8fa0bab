"""docs/history/detector-pretrained.md's rule (D1-D3) applied to judge.sh's JSONs, as written before any read.

python reports/reader/detector-lite/verdict.py reports/reader/detector-lite
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def load(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def good_read_exactly(ev: dict[str, Any]) -> int:
    """Good rolls called valid and read exactly: the truly valid rolls read valid, less those of them that
    settle wrong (every roll read valid that was not valid settles wrong, and is not among the first)."""
    conf = ev["confusion_truth_rows_read_cols"]
    not_valid_read_valid = sum(row["valid"] for truth, row in conf.items() if truth != "valid")
    valid_settled_wrong = int(ev["rolls_read_valid_settled_wrong"]) - not_valid_read_valid
    return int(conf["valid"]["valid"]) - valid_settled_wrong


def main() -> None:
    folder = Path(sys.argv[1])
    checks: list[tuple[str, float, float, bool]] = []  # (figure, shipped, candidate, higher is better)
    for stem in ("wide", "usual"):
        a, b = load(folder, f"{stem}-shipped.json"), load(folder, f"{stem}-cand.json")
        label = f"D1 {stem}-s14000-first100"
        checks.append((f"{label}: good rolls called valid and read exactly, of {a['valid_rolls']}",
                       good_read_exactly(a), good_read_exactly(b), True))  # fmt: skip
        key = "rolls_read_valid_settled_wrong"
        checks.append((f"{label}: rolls read valid that settle wrong", a[key], b[key], False))
    for stem, name in (("nellbyler", "nellbyler test"), ("matteop65", "matteop65 valid")):
        a, b = load(folder, f"{stem}-shipped.json"), load(folder, f"{stem}-cand.json")
        for key in ("recall_pct", "precision_pct"):
            checks.append((f"D2 {name}: detection {key}", a["detection"][key], b["detection"][key], True))
    print("| check | shipped | candidate | verdict |")
    print("|---|---|---|---|")
    ok_all = True
    for name, x, y, up in checks:
        ok = (y >= x) if up else (y <= x)
        ok_all &= ok
        print(f"| {name} | {x} | {y} | {'pass' if ok else '**FAIL**'} |")
    pa = load(folder, "bench-shipped.json")["one_thread"]["p50_ms"]
    pb = load(folder, "bench-cand.json")["one_thread"]["p50_ms"]
    ok = pb <= 1.2 * pa
    ok_all &= ok
    print(f"| D3 bench one_thread p50 ms | {pa} | {pb} ({pb / pa:.2f}x) | {'pass' if ok else '**FAIL**'} |")
    print(f"\nverdict: {'SHIPS' if ok_all else 'REFUSED: nothing registered'}")
    print("\nFigures beside the rule (not deciding):\n")
    print("| set | reader | good rolls left to a person % | good rolls invalid or void % | read valid |")
    print("|---|---|---|---|---|")
    for stem in ("wide", "usual"):
        for who in ("shipped", "cand"):
            ev = load(folder, f"{stem}-{who}.json")
            left, back = ev["valid_no_decision_pct"], ev["valid_called_invalid_or_void_pct"]
            print(f"| {stem} | {who} | {left} | {back} | {ev['rolls_read_valid']} |")
    for who in ("shipped", "cand"):
        one = load(folder, f"bench-{who}.json")["one_thread"]
        print(f"\nbench {who}: detector p50 {one['model_p50_ms']['detector']} ms, "
              f"detect stage p50 {one['stage_p50_ms']['detect']} ms")  # fmt: skip


if __name__ == "__main__":
    main()
