"""Measure the look at the top face (issue 48) on rendered tuning scenes, never a held-out or test set.

    python -m lab.plane_look data/judge/planetune-s14100 [MORE_DIRS] [--spans 1.0,1.2,1.4] [--weights 0.5,1]
        [--limit N]

A die the face stage is still unsure of after its second look (the turned crops, `lab/second_look.py`) can be
read once more from a tighter crop of its top face alone, cut from the die-top plane that the table's
calibration gives (`FaceReader.plane_look`, `plane_look_span` die edges across, its reading merged in at
`plane_look_weight`). This reads every flat, visible die of each scene from its true box, with the scene's
own camera as the calibration, once with the look off (the shipped face stage) and once per `--spans` and
`--weights` value, each frame first smoothed where it is grainy
as the reader does, and prints a markdown table in the columns of `lab/second_look.py` (`score`: accuracy,
sure dice, accuracy when sure, sure but wrong with its 95 % interval per 1,000, the pip count's vetoes),
plus how many dice the look turned from unsure to sure, and how many of those it read right.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.progress import track

from calibration.layout import ThrowBoxLayout
from datasets.format import read_scene
from lab.judge_eval.evaluate import MIN_VISIBLE
from lab.second_look import score
from vision.judge.config import JudgeConfig
from vision.judge.exposure import measure_exposure, smoothed
from vision.judge.validity import ValidityConfig
from vision.onnx_session import load_model
from vision.pips.classifier import FaceReader
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate

Look = tuple[float, float] | None  # (span, weight); None: the look off


def read_set(
    folder: Path, looks: list[Look], limit: int | None
) -> tuple[NDArray[np.int64], dict[Look, tuple[NDArray[np.float32], list[int | None]]]]:
    """The true faces of every flat visible die of the set, and per look its probabilities and pip counts."""
    model = load_model("pips")
    readers = {
        look: FaceReader(model)
        if look is None
        else FaceReader(model, plane_look_span=look[0], plane_look_weight=look[1])
        for look in looks
    }
    labels = sorted((folder / "labels").glob("*.json"))[:limit]
    if not labels:
        raise SystemExit(f"no scenes in {folder / 'labels'}")
    truth: list[int] = []
    out: dict[Look, tuple[list[NDArray[np.float32]], list[int | None]]] = {k: ([], []) for k in looks}
    judge = JudgeConfig()
    for path in track(labels, description=folder.name, transient=True, console=Console(stderr=True)):
        scene = read_scene(path)
        read = cv2.imread(str(folder / scene.image), cv2.IMREAD_COLOR)
        if read is None:
            raise SystemExit(f"unreadable image {folder / scene.image}")
        frame = np.asarray(read, np.uint8)
        image = smoothed(frame, measure_exposure(frame), judge)
        dice = [
            d
            for d in scene.dice
            if d.in_image
            and d.visible_fraction >= MIN_VISIBLE
            and d.face is not None
            and not (d.cocked or d.stacked or d.off_table)
        ]
        if not dice:
            continue
        geometry = TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())
        candidates = tuple(DieCandidate(box_xyxy=d.box_xyxy, top_quad=d.top_quad, score=1.0) for d in dice)
        truth += [int(d.face) for d in dice if d.face is not None]
        for span, reader in readers.items():
            readings = reader(image, candidates, geometry)
            out[span][0].append(np.asarray([r.face_probs for r in readings], np.float32))
            out[span][1].extend(r.pip_count for r in readings)
    return np.asarray(truth, np.int64), {s: (np.concatenate(p), c) for s, (p, c) in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "sets", type=Path, nargs="+", help="rendered tuning sets (throwbox lab synth folders)"
    )
    parser.add_argument("--spans", default="1.0,1.2,1.4", help="top-face crop sides to try, in die edges")
    parser.add_argument("--weights", default="0.5,1", help="the top-face reading's weights to try (0-1]")
    parser.add_argument("--limit", type=int, default=None, help="only the first N scenes of each set")
    args = parser.parse_args()
    looks: list[Look] = [None] + [
        (float(s), float(w)) for s in args.spans.split(",") for w in args.weights.split(",")
    ]
    bar = ValidityConfig().min_confidence
    print(f"sure = top probability >= {bar:g} and no classical pip count against it; flat visible dice only")
    print(
        "| set | dice | top-face look: span (die edges), weight | accuracy % | sure % (dice) "
        "| accuracy when sure % "
        "| sure but wrong | per 1,000 sure, 95 % interval | vetoes: face right / face wrong "
        "| made sure by the look (right) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for folder in args.sets:
        truth, by_look = read_set(folder, looks, args.limit)
        base_probs, base_counts = by_look[None]
        base_sure = _sure(base_probs, base_counts, bar)
        for look in looks:
            probs, counts = by_look[look]
            s = score(probs, counts, truth, bar=bar)
            sure = _sure(probs, counts, bar)
            gained = sure & ~base_sure
            right = (probs.argmax(axis=1) + 1) == truth
            label = "off" if look is None else f"{look[0]:g}, {look[1]:g}"
            made = "-" if look is None else f"{int(gained.sum())} ({int((gained & right).sum())})"
            print(
                f"| {folder.name} | {len(truth)} | {label} | {s['accuracy_pct']} | {s['sure_pct']} "
                f"({s['sure_dice']}) | {s['accuracy_when_sure_pct']} | {s['sure_wrong']} "
                f"| {s['sure_wrong_per_1000_low']:g}-{s['sure_wrong_per_1000_high']:g} "
                f"| {s['vetoes_learned_right']} / {s['vetoes_learned_wrong']} | {made} |"
            )


def _sure(probs: NDArray[np.float32], counts: list[int | None], bar: float) -> NDArray[np.bool_]:
    """As `lab.second_look.score` calls a die sure: top probability at the bar, no pip count against it."""
    pred = probs.argmax(axis=1) + 1
    c = np.array([-1 if v is None else v for v in counts])
    return np.asarray((probs.max(axis=1) >= bar) & ((c < 0) | (c == pred)), np.bool_)


if __name__ == "__main__":
    main()
