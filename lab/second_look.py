"""Measure the face stage's second look (unsure dice read again turned) on tuning images, never a test split.

    .venv/bin/python -m lab.second_look [--synth data/synth/train-v1 --synth-from 1500]

Reads the labelled die boxes of each tuning set with the registered face model (models/manifest.json), once
without the second look and once per `--below` bar, and prints a markdown table: the classifier's accuracy,
the share of dice the reader would be sure of (top probability >= `ValidityConfig.min_confidence`, or each
`--sure` bar, and no classical pip count against it, as `vision.judge.validity.judge_die` decides), the
accuracy
on those sure dice, how many sure dice were wrong and the 95 % interval of that rate (Wilson, per 1,000
sure dice: a small set cannot show a rare error is gone). Tuning sets: the nellbyler **train** photos and the
matteop65 train folder (the face model trained on both: a lower bound on its errors there) and synthetic
train-v1 scenes from `--synth-from` on (the face model trained on the first 800 only).

`--second-onnx` adds a wide second-look model (`models.train_pips --arch wide`) for the unsure dice, at
each `--second-weight` (and each `--second-accept` bar: the wide reading stands only where it is at least
that sure, else the turned looks); `--held-back` then reads only the real photos that model was not trained
on (`train_pips --hold-back`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray
from rich.console import Console
from rich.progress import track

from models.data import (
    SHARED_REAL,
    DatasetError,
    LabelledImage,
    held_back,
    load_nellbyler,
    load_synth,
    load_yolo_folder,
)
from models.train_pips import (  # matteop65 boxes hold the top face only: widened as in training
    MATTEOP65_HELD_BACK,
    NELLBYLER_HELD_BACK,
    TOP_TO_DIE,
)
from vision.judge.validity import ValidityConfig
from vision.onnx_session import ModelSpec, OnnxModel, load_model, sha256_of
from vision.pips.classical import PipCountConfig, count_pips, steady_count
from vision.pips.classifier import FaceReader
from vision.pips.crops import CROP_PX, crop_die, scaled_box
from vision.types import ImageArray


def die_crops(
    items: list[LabelledImage], pip_config: PipCountConfig
) -> tuple[list[ImageArray], NDArray[np.int64], list[int | None], list[dict[float, int | None]]]:
    """The reader's crop of every labelled die, its true face, its pip count, and, where it has one, its
    counts on the crops cut from its box scaled by each of `pip_config.recount_scales` (the face stage's
    recount, `steady_count`, which asks for them only then)."""
    crops: list[ImageArray] = []
    faces: list[int] = []
    counts: list[int | None] = []
    recounts: list[dict[float, int | None]] = []
    # The progress bar goes to stderr, so the table on stdout can be redirected as clean markdown.
    for it in track(items, description="crops", transient=True, console=Console(stderr=True)):
        read = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if read is None:
            raise SystemExit(f"unreadable tuning image {it.path}")
        img = np.asarray(read, np.uint8)
        for box_array, face in zip(it.boxes_xyxy, it.faces, strict=True):
            box = tuple(float(v) for v in box_array)
            if it.box_kind == "top":
                box = scaled_box(box, TOP_TO_DIE)
            crop = crop_die(img, box)
            count = count_pips(crop, config=pip_config)
            crops.append(crop)
            faces.append(int(face))
            counts.append(count)
            scales = () if count is None else pip_config.recount_scales
            recounts.append(
                {k: count_pips(crop_die(img, scaled_box(box, k)), config=pip_config) for k in scales}
            )
    return crops, np.asarray(faces, np.int64), counts, recounts


def unregistered(path: Path, name: str = "pips") -> OnnxModel:
    """A face model file checked against its own SHA-256 (a candidate, before `models.export.register`)."""
    if not path.is_file():
        raise SystemExit(f"no such model file: {path}")
    spec = ModelSpec(
        name=name,
        file=path.name,
        sha256=sha256_of(path),
        version="candidate",
        input_size_hw=(CROP_PX, CROP_PX),
        labels=("1", "2", "3", "4", "5", "6"),
    )
    return OnnxModel(spec, models_dir=path.parent)


def wilson_interval(k: int, n: int, *, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % for z = 1.96) of a rate seen as k in n; (0, 1) when n is 0.

    So a table can say how little "0 sure dice wrong" proves on a small set: 0 wrong among 1,870 sure dice
    still allows up to 0.2 %. Closed form, written out here rather than adding scipy for one formula.
    """
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def score(
    probs: NDArray[np.float32], pip_counts: list[int | None], truth: NDArray[np.int64], *, bar: float
) -> dict[str, float]:
    """Classifier accuracy, share of sure dice, accuracy when sure (%), sure-but-wrong dice and the
    95 % interval of their rate among the sure dice (per 1,000); and the pip count's vetoes: dice the
    classifier is sure of (top probability >= bar) whose count differs, split into `vetoes_learned_right`
    (the classifier was right: a good die left to a person) and `vetoes_learned_wrong` (it was wrong: an
    error the veto stopped, whether or not the count itself was right)."""
    pred = probs.argmax(axis=1) + 1
    counts = np.array([-1 if c is None else c for c in pip_counts])
    confident = probs.max(axis=1) >= bar
    sure = confident & ((counts < 0) | (counts == pred))
    vetoed = confident & (counts >= 0) & (counts != pred)
    right = pred == truth
    wrong = int((sure & ~right).sum())
    low, high = wilson_interval(wrong, int(sure.sum()))
    return {
        "accuracy_pct": round(100.0 * float(right.mean()), 2),
        "sure_pct": round(100.0 * float(sure.mean()), 1),
        "sure_dice": int(sure.sum()),  # the exact count behind sure_pct (which rounds to a tenth)
        "accuracy_when_sure_pct": round(100.0 * float(right[sure].mean()), 3) if sure.any() else float("nan"),
        "sure_wrong": wrong,
        "sure_wrong_per_1000_low": round(1000.0 * low, 2),
        "sure_wrong_per_1000_high": round(1000.0 * high, 2),
        "vetoes_learned_right": int((vetoed & right).sum()),
        "vetoes_learned_wrong": int((vetoed & ~right).sum()),
    }


def _parser() -> argparse.ArgumentParser:
    """The study's options (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--real", type=Path, default=SHARED_REAL)
    parser.add_argument("--synth", type=Path, default=None, help="synthetic train-v1 folder (optional)")
    parser.add_argument("--synth-from", type=int, default=1500, help="first synthetic scene used for tuning")
    parser.add_argument("--synth-count", type=int, default=60)
    parser.add_argument("--below", default="0.8,0.9,0.95,1.01", help="second-look bars to try")
    parser.add_argument(
        "--sure",
        default=None,
        help="sure bars to try (top probability; default: ValidityConfig.min_confidence, the reader's)",
    )
    parser.add_argument(
        "--onnx", type=Path, default=None, help="a face model not yet registered (default: the manifest's)"
    )
    parser.add_argument(
        "--second-onnx",
        type=Path,
        default=None,
        help="a wide second-look face model (train_pips --arch wide)",
    )
    parser.add_argument("--second-weight", default="1.0", help="the wide model's weights to try")
    parser.add_argument(
        "--second-accept",
        default="none",
        help="bars to try under which the wide reading is dropped for the turned looks ('none' = never)",
    )
    parser.add_argument(
        "--min-pip-contrast",
        type=float,
        default=PipCountConfig().min_pip_contrast,
        help="the pip count's faint-pip bar (PipCountConfig.min_pip_contrast, default 0: none; 48 was tried)",
    )
    parser.add_argument(
        "--recount-scales",
        default=",".join(f"{k:g}" for k in PipCountConfig().recount_scales),
        help="box scales at which a count against the learned face is recounted and must hold "
        "(PipCountConfig.recount_scales; 'none': no recount, the reader before 2026-11-30 23:00 UTC)",
    )
    parser.add_argument(
        "--mirror",
        action="store_true",
        help="also read each bar with the four turns mirrored (FaceReader.second_look_mirror: eight looks)",
    )
    parser.add_argument(
        "--held-back",
        action="store_true",
        help="only the real train photos that `train_pips --hold-back` kept out of training",
    )
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    try:
        accepts = [None if v.strip() == "none" else float(v) for v in args.second_accept.split(",")]
        weights_asked = [float(v) for v in args.second_weight.split(",")]
    except ValueError as exc:
        parser.error(f"--second-weight wants numbers, --second-accept numbers or 'none' (none,0.95): {exc}")
    if any(a is not None and not 0.0 < a <= 1.0 for a in accepts):  # also refuses nan
        parser.error("--second-accept bars must lie in (0, 1]")
    if any(not 0.0 <= w <= 1.0 for w in weights_asked):
        parser.error("--second-weight values must lie in [0, 1]")
    try:  # PipCountConfig checks its own values (a negative or NaN contrast is refused there)
        asked = args.recount_scales
        scales = () if asked == "none" else tuple(float(v) for v in asked.split(","))
        pip_config = PipCountConfig(min_pip_contrast=args.min_pip_contrast, recount_scales=scales)
    except ValueError as exc:
        parser.error(f"--min-pip-contrast must be 0 or more, --recount-scales numbers in [0.5, 2] ({exc})")
    if args.second_onnx is None and (args.second_accept != "none" or args.second_weight != "1.0"):
        parser.error("--second-weight and --second-accept need --second-onnx (the wide model they weigh)")

    try:
        nell = load_nellbyler(args.real / "d6-topdown-nellbyler", "train")
        webcam = load_yolo_folder(args.real / "d6-webcam-matteop65" / "train", box_kind="top")
    except DatasetError as exc:
        raise SystemExit(
            f"{exc}\nthe real tuning photos are missing: give --real DIR holding d6-topdown-nellbyler and "
            "d6-webcam-matteop65 (the shared datasets, not in a clone of this repository)"
        ) from exc
    if args.held_back:
        nell_back, webcam_back = (
            held_back(len(nell), NELLBYLER_HELD_BACK),
            held_back(len(webcam), MATTEOP65_HELD_BACK),
        )
        sets = {
            "nellbyler train held back": [it for k, it in enumerate(nell) if k in nell_back],
            "matteop65 train held back": [it for k, it in enumerate(webcam) if k in webcam_back],
        }
    else:
        sets = {"nellbyler train": nell, "matteop65 train": webcam}
    if args.synth is not None:
        sets[f"synth {args.synth.name} {args.synth_from}+"] = load_synth(args.synth)[
            args.synth_from : args.synth_from + args.synth_count
        ]
    model = load_model("pips") if args.onnx is None else unregistered(args.onnx)
    sure_bars = (
        [ValidityConfig().min_confidence] if args.sure is None else [float(v) for v in args.sure.split(",")]
    )
    bars: list[float | None] = [None] + [float(v) for v in args.below.split(",")]
    second = None if args.second_onnx is None else unregistered(args.second_onnx, "pips_second")
    weights = [0.0] if second is None else [0.0, *weights_asked]
    print("sure = top probability >= the sure bar and no classical pip count against it")
    print(
        "vetoes = pip count against a face read at the sure bar: the face right (a good die left to a person)"
        " / the face wrong (an error stopped, the count right or not)"
    )
    print(
        "| set | dice | second look below | mirrored looks | wide model weight | wide accepted at | sure bar "
        "| accuracy % "
        "| sure % (dice) | accuracy when sure % | sure but wrong | per 1,000 sure, 95 % interval "
        "| vetoes: face right / face wrong |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    mirrors = (False, True) if args.mirror else (False,)
    for name, items in sets.items():
        crops, truth, first_counts, recounts = die_crops(items, pip_config)
        looks = [
            (below, weight, accept, mirror)
            for below in bars
            for weight in (weights if below is not None else [0.0])
            for accept in (accepts if weight else [None])
            for mirror in (mirrors if below is not None else (False,))
        ]
        for below, weight, accept, mirror in looks:
            reader = FaceReader(
                model,
                second_look_below=below,
                second_model=second if weight else None,
                second_weight=weight,
                second_accept=accept,
                second_look_mirror=mirror,
            )
            probs = reader.probabilities(crops)
            # As the face stage does: a count against the learned face must hold when recounted.
            pip_counts = [
                steady_count(c, int(row.argmax()) + 1, r.__getitem__, pip_config.recount_scales)
                for c, row, r in zip(first_counts, probs, recounts, strict=True)
            ]
            label = "off" if below is None else f"{below:g}"
            at = "-" if accept is None else f"{accept:g}"
            for bar in sure_bars:
                s = score(probs, pip_counts, truth, bar=bar)
                print(
                    f"| {name} | {len(truth)} | {label} | {'yes' if mirror else 'no'} | {weight:g} "
                    f"| {at} | {bar:g} | "
                    f"{s['accuracy_pct']} | {s['sure_pct']} ({s['sure_dice']}) | "
                    f"{s['accuracy_when_sure_pct']} | "
                    f"{s['sure_wrong']} | {s['sure_wrong_per_1000_low']:g}-"
                    f"{s['sure_wrong_per_1000_high']:g} | {s['vetoes_learned_right']} / "
                    f"{s['vetoes_learned_wrong']} |"
                )


if __name__ == "__main__":
    main()
