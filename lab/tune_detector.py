"""Choose the detector's score threshold and box-size factor on tuning images, never on a test split.

    .venv/bin/python -m lab.tune_detector [--synth data/synth/train-v1 --synth-from 1500]

Runs the registered detector (models/manifest.json, or `--manifest`'s: a candidate) once per image and
decodes its output at every (score_threshold, size_scale, min_size_of_median) point of the grid: detection
precision and recall at IoU >= 0.5 and the median predicted/true box width, per tuning set. Tuning sets:
every second nellbyler **train** photo (seen in training: its false-alarm rate there is a lower bound) and
synthetic train-v1 scenes from `--synth-from` on (the detector trained on the first 800 only). The chosen
values go into `vision.detect.centernet.DetectorConfig` with the table this prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from lab.evaluate import match
from models.data import SHARED_REAL, DatasetError, LabelledImage, load_nellbyler, load_synth
from vision.detect.centernet import DetectorConfig, Letterbox, decode, preprocess
from vision.onnx_session import MANIFEST_PATH, ModelError, load_model

Head = tuple[NDArray[np.float32], Letterbox, tuple[int, int], NDArray[np.float32]]


def run_heads(items: list[LabelledImage], *, manifest_path: Path = MANIFEST_PATH) -> list[Head]:
    """The detector's raw output per image, with what decoding and scoring need."""
    model = load_model("detector", manifest_path=manifest_path)
    out = []
    for it in items:
        img = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if img is None:
            raise SystemExit(f"unreadable tuning image {it.path}")
        h, w = img.shape[:2]
        long_px = DetectorConfig().input_long_px
        tensor, letterbox = preprocess(np.asarray(img, np.uint8), input_long_px=long_px)
        out.append((model.run(tensor)[0], letterbox, (w, h), it.boxes_xyxy))
    return out


def score(heads: list[Head], config: DetectorConfig) -> dict[str, float]:
    """Precision, recall (%) and the median predicted/true width over the images."""
    tp = fp = gt = 0
    ratios: list[float] = []
    for head, letterbox, wh, truth in heads:
        boxes, scores = decode(head, letterbox=letterbox, image_wh=wh, config=config)
        pairs = match(boxes, scores, truth)
        tp, fp, gt = tp + len(pairs), fp + len(boxes) - len(pairs), gt + len(truth)
        ratios += [float((boxes[p, 2] - boxes[p, 0]) / (truth[g, 2] - truth[g, 0])) for p, g in pairs]
    return {
        "precision_pct": round(100.0 * tp / max(1, tp + fp), 1),
        "recall_pct": round(100.0 * tp / max(1, gt), 1),
        "median_width_ratio": round(float(np.median(ratios)), 3) if ratios else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--real", type=Path, default=SHARED_REAL / "d6-topdown-nellbyler")
    parser.add_argument("--synth", type=Path, default=None, help="synthetic train-v1 folder (optional)")
    parser.add_argument("--synth-from", type=int, default=1500, help="first synthetic scene used for tuning")
    parser.add_argument("--synth-count", type=int, default=60)
    parser.add_argument("--thresholds", default="0.2,0.25,0.3,0.35,0.4,0.5")
    parser.add_argument("--scales", default="1.0,1.05,1.1,1.15,1.25")
    parser.add_argument("--min-fractions", default="0", help="DetectorConfig.min_size_of_median values")
    parser.add_argument(
        "--manifest",
        type=Path,
        default=MANIFEST_PATH,
        help="model manifest (default: models/manifest.json): tune a candidate before registering it",
    )
    args = parser.parse_args()

    try:
        sets = {"nellbyler train (every 2nd)": load_nellbyler(args.real, "train")[::2]}
        if args.synth is not None:
            sets[f"synth {args.synth.name} {args.synth_from}+"] = load_synth(args.synth)[
                args.synth_from : args.synth_from + args.synth_count
            ]
        heads = {name: run_heads(items, manifest_path=args.manifest) for name, items in sets.items()}
    except (DatasetError, ModelError) as exc:
        # A tuning set that is not there (a clone has no ../shared) or a manifest or model file that is
        # missing or changed: say which, not a traceback.
        raise SystemExit(f"lab.tune_detector: {exc}") from exc
    print(
        "| threshold | size_scale | min_size_of_median | "
        + " | ".join(f"{n}: P / R / width" for n in sets)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(sets))
    for thr in (float(v) for v in args.thresholds.split(",")):
        for scale in (float(v) for v in args.scales.split(",")):
            for frac in (float(v) for v in args.min_fractions.split(",")):
                config = DetectorConfig(score_threshold=thr, size_scale=scale, min_size_of_median=frac)
                cells = []
                for name in sets:
                    s = score(heads[name], config)
                    cells.append(f"{s['precision_pct']} / {s['recall_pct']} / {s['median_width_ratio']}")
                print(f"| {thr} | {scale} | {frac} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
