"""The merge setting of docs/history/faces-pretrained-4.md chosen by its rule from tune.sh's JSONs.

python reports/reader/faces-lite-4/choose.py reports/reader/faces-lite-4/tune
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

SETS = ("clearval-s47600", "planetune-wide-s14200")
ORDER = ("C1", "C2", "C3")

_spec = importlib.util.spec_from_file_location(
    "verdict", Path(__file__).parents[1] / "faces-lite-2" / "verdict.py"
)
assert _spec is not None and _spec.loader is not None
verdict = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verdict)


def main() -> None:
    here = Path(sys.argv[1])
    fig = {
        (s, m): verdict.figures(json.loads((here / f"{s}-{m}.json").read_text(encoding="utf-8")))
        for s in SETS
        for m in ("old", *ORDER)
    }
    print("| setting | " + " | ".join(f"{s}: right / wrong / left" for s in SETS) + " | qualifies |")
    print("|---|" + "---|" * len(SETS) + "---|")
    best: tuple[int, int, int, str] | None = None
    for m in ("old", *ORDER):
        cells = [f"{fig[s, m]['right']} / {fig[s, m]['wrong']} / {fig[s, m]['left']}" for s in SETS]
        ok = all(fig[s, m]["wrong"] <= fig[s, "old"]["wrong"] for s in SETS)
        print(f"| {m} | " + " | ".join(cells) + f" | {'-' if m == 'old' else ok} |")
        if m != "old" and ok:
            key = (
                -sum(int(fig[s, m]["right"]) for s in SETS),
                sum(int(fig[s, m]["wrong"]) for s in SETS),
                ORDER.index(m),
                m,
            )
            best = key if best is None or key < best else best
    print(f"\nChosen: {best[3] if best else 'none qualifies: no candidate'}")


if __name__ == "__main__":
    main()
