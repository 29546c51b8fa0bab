"""Faces right, given wrong and left to a person, with a 95 % Wilson interval on the wrong-face rate, from
`throwbox lab eval DIR --json` documents: the table of docs/history/faces-wrong-rate.md and of a tuning's
choice (docs/history/faces-pretrained-4.md).

    python -m lab.face_rates reports/reader/faces-wrong-rate/clearbig-old.json ...
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

from lab.judge import JudgeError, faces_left, faces_wrong, figure_of, load_json


def wilson(*, k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion k / n (95 % at z = 1.96); (0, 1) when n is 0."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate_row(path: Path) -> str:
    """One eval JSON's line of the table."""
    doc = load_json(path)
    gt = int(doc["gt_dice"])
    wrong, left = int(faces_wrong(doc)), int(faces_left(doc))
    right = gt - wrong - left
    given = right + wrong
    lo, hi = wilson(k=wrong, n=given)
    rate = 1000 * wrong / given if given else 0.0
    pct = figure_of(doc, "face_accuracy_pct.final_of_gt_dice")
    return (
        f"| {path.stem} | {gt} | {right} ({pct:g} %) | {left} | {wrong} "
        f"| {rate:.2f} ({1000 * lo:.2f}-{1000 * hi:.2f}) |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table for the JSONs named; 2 with a message if one cannot be read."""
    names = list(sys.argv[1:] if argv is None else argv)
    if not names:
        print("usage: python -m lab.face_rates EVAL.json ...", file=sys.stderr)
        return 2
    lines = [
        "| read | labelled dice | right (end to end) | left to a person | faces given wrong "
        "| wrong per 1,000 given (95 %) |",
        "|---|---|---|---|---|---|",
    ]
    try:
        lines += [rate_row(Path(name)) for name in names]
    except (JudgeError, KeyError, TypeError, IndexError) as exc:
        print(f"face_rates: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
