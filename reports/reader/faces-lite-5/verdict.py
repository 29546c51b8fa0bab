"""The rule of docs/history/faces-pretrained-5.md (R1-R4 of faces-pretrained-2.md, R5 of
faces-pretrained-4.md) applied to judge.sh's JSONs, as written before any read.

python reports/reader/faces-lite-5/verdict.py reports/reader/faces-lite-5
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location(
    "verdict2", Path(__file__).parents[1] / "faces-lite-2" / "verdict.py"
)
assert _spec is not None and _spec.loader is not None
verdict2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verdict2)
SETS = (
    ("R1 nellbyler test (2 labels corrected)", "nellbyler", "final_of_gt_dice"),
    ("R2 matteop65 valid", "matteop65", "final_of_matched"),
    ("R4 clearfresh-s47471", "clearfresh", "final_of_gt_dice"),
    ("R5 clearfresh2-s47900", "clearfresh2", "final_of_gt_dice"),
)


def main() -> None:
    here = Path(sys.argv[1])

    def load(name: str) -> dict[str, Any]:
        return dict(json.loads((here / name).read_text(encoding="utf-8")))

    rows: list[tuple[str, str, str, bool]] = []
    for rule, stem, key in SETS:
        old, cand = verdict2.figures(load(f"{stem}-old.json")), verdict2.figures(load(f"{stem}-cand.json"))
        what = "right of all labelled dice" if key == "final_of_gt_dice" else "right of the dice found"
        rows.append((f"{rule}: {what} (%)", str(old[key]), str(cand[key]), cand[key] >= old[key]))
        rows.append(
            (f"{rule}: faces given against the label", str(old["wrong"]), str(cand["wrong"]),
             cand["wrong"] <= old["wrong"])
        )  # fmt: skip
    b_old, b_cand = load("bench-old.json")["one_thread"], load("bench-cand.json")["one_thread"]
    ratio = b_cand["p50_ms"] / b_old["p50_ms"]
    rows.append(("R3 bench p50, one thread (ms)", str(b_old["p50_ms"]), f"{b_cand['p50_ms']} ({ratio:.2f}x)",
                 ratio <= 1.2))  # fmt: skip
    print("| check | shipped (18c) | candidate | verdict |")
    print("|---|---|---|---|")
    for name, a, b, ok in rows:
        print(f"| {name} | {a} | {b} | {'pass' if ok else '**fail**'} |")
    passed = all(ok for *_, ok in rows)
    print(f"\nRule: {'PASSED: register the candidate' if passed else 'FAILED: register nothing'}")
    print("\nThe issue's bars (reported, not deciding):\n")
    print("| set | reader | right / labelled dice | given wrong | left to a person | classifier on boxes |")
    print("|---|---|---|---|---|---|")
    for _, stem, _ in SETS:
        for who in ("old", "cand"):
            f = verdict2.figures(load(f"{stem}-{who}.json"))
            print(
                f"| {stem} | {who} | {f['right']} / {f['gt']} ({f['final_of_gt_dice']} %) | {f['wrong']} | "
                f"{f['left']} | {f['on_labelled_boxes']} % |"
            )
    print(
        f"\nbench thread CPU p50 (ms): shipped {b_old['thread_cpu_p50_ms']}, "
        f"candidate {b_cand['thread_cpu_p50_ms']}"
    )


if __name__ == "__main__":
    main()
