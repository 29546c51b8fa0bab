"""Faces given wrong, right and left to a person, with a 95 % Wilson interval on the wrong-face rate, from
`throwbox lab eval DIR --json` documents (docs/history/faces-wrong-rate.md).

python reports/reader/faces-wrong-rate/rates.py reports/reader/faces-wrong-rate/clearbig-old.json ...
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "verdict2", Path(__file__).parents[1] / "faces-lite-2" / "verdict.py"
)
assert _spec is not None and _spec.loader is not None
verdict2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verdict2)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k / n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def main() -> None:
    print(
        "| read | labelled dice | right (end to end) | left to a person | faces given wrong "
        "| wrong per 1,000 given (95 %) |"
    )
    print("|---|---|---|---|---|---|")
    for name in sys.argv[1:]:
        f = verdict2.figures(json.loads(Path(name).read_text(encoding="utf-8")))
        given = int(f["right"]) + int(f["wrong"])
        lo, hi = wilson(int(f["wrong"]), given)
        rate = 1000 * int(f["wrong"]) / given if given else 0.0
        print(
            f"| {Path(name).stem} | {f['gt']} | {f['right']} ({f['final_of_gt_dice']} %) | {f['left']} "
            f"| {f['wrong']} "
            f"| {rate:.2f} ({1000 * lo:.2f}-{1000 * hi:.2f}) |"
        )


if __name__ == "__main__":
    main()
