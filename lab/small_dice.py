"""How the reader does on small dice in a large photo (a phone photo of a tray: dice 30-40 px in 2,000+ px).

    .venv/bin/python -m lab.small_dice [--split train] [--count 40] [--factors 1,2,3,4]

The detector sees the frame with its long side scaled to 640 px: the nellbyler photos (640 px, dice about
30-40 px across) are read at their own size, but the same dice in a photo three times as wide come to the
net at 10-13 px, under most of what it learned. Each frame here is a real photo (the nellbyler **train**
split by default: tuning images; `--split test` only to report; `--set matteop65`: the oblique webcam
photos, train or valid, their top-face boxes matched by their centre as `throwbox lab eval` does) set, at its
own size, at a random place in a frame `factor` times as wide and high: the dice keep their pixels, the
frame grows. Around it, more of
its own surface (`--surface own`: its border's median colour with a little noise, the photo feathered in
over 32 px) or a random surface (`--surface random`, `models.augment.random_background`: the photo's edges
show, as a sheet of paper or a tray on a table would). Only the photo's labelled dice are truth.

Columns: a candidate reader as a photo is read (no table: `Reader.read` with no count and no calibration):
the shipped settings but for what the flags change (the fine look, `--fine-max-long-px`; the coarse looks'
limit on pips, `--coarse-max-pips`; their face check, `--big-die-face-margin`; each defaults to the shipped
value); found (matched as `throwbox lab eval` matches: a box with IoU >= 0.5 with a labelled die),
detections on no labelled die, faces right (of the found dice: the reader's face, or the learned
classifier's where the reader left the die unsure), and the median read time on one thread; then the
shipped reader (its defaults); then the detector alone with the frame scaled to each `--inputs` long side
(found dice: where a scale would find them).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray
from rich.progress import track

from lab.evaluate import match
from models.augment import random_background
from models.data import SHARED_REAL, LabelledImage, load_nellbyler, load_yolo_folder
from vision.detect.centernet import DetectorConfig, decode, preprocess
from vision.reader import Reader, ReaderConfig
from vision.types import Frame, ImageArray, Roll

FEATHER = 32.0  # px over which a photo is blended into more of its own surface


def enlarge(
    item: LabelledImage, factor: int, rng: np.random.Generator, surface: str = "own"
) -> tuple[ImageArray, NDArray[np.float32], NDArray[np.int64]]:
    """The photo at its own size in a frame `factor` times as large, around it more of its own surface
    (`surface="own"`) or a random one (`"random"`); its boxes moved with it, and its faces."""
    image = cv2.imread(str(item.path), cv2.IMREAD_COLOR)
    if image is None:
        raise SystemExit(f"unreadable image {item.path}")
    h, w = image.shape[:2]
    if factor == 1:
        return np.asarray(image, np.uint8), item.boxes_xyxy.astype(np.float32), item.faces
    y0 = int(rng.integers(0, h * (factor - 1) + 1))
    x0 = int(rng.integers(0, w * (factor - 1) + 1))
    if surface == "random":
        frame = random_background(h * factor, w * factor, rng)
        frame[y0 : y0 + h, x0 : x0 + w] = image
    else:
        # More of the photo's own surface: its border's median colour with a little noise, the photo
        # blended in over a FEATHER-px margin, so no edge of a pasted picture shows.
        border = np.concatenate(
            [
                image[:8].reshape(-1, 3),
                image[-8:].reshape(-1, 3),
                image[:, :8].reshape(-1, 3),
                image[:, -8:].reshape(-1, 3),
            ]
        )
        colour = np.median(border, axis=0)
        frame_f = np.empty((h * factor, w * factor, 3), np.float32)
        frame_f[:] = colour
        frame_f += np.asarray(rng.normal(0.0, 4.0, frame_f.shape), np.float32)
        ramp = np.minimum(np.arange(h)[:, None], np.arange(h)[::-1][:, None]).astype(np.float32)
        ramp_x = np.minimum(np.arange(w)[None, :], np.arange(w)[::-1][None, :]).astype(np.float32)
        alpha = np.clip(np.minimum(ramp, ramp_x) / FEATHER, 0.0, 1.0)[:, :, None]
        region = frame_f[y0 : y0 + h, x0 : x0 + w]
        frame_f[y0 : y0 + h, x0 : x0 + w] = alpha * image + (1.0 - alpha) * region
        frame = np.clip(frame_f, 0, 255).astype(np.uint8)
    boxes = item.boxes_xyxy.astype(np.float32) + np.array([x0, y0, x0, y0], np.float32)
    return np.asarray(frame, np.uint8), boxes, item.faces


def tally(
    roll: Roll, boxes: NDArray[np.float32], faces: NDArray[np.int64], box_kind: str = "die"
) -> tuple[int, int, int]:
    """(labelled dice found, detections on no labelled die, found dice whose face is read right), matched as
    `throwbox lab eval` matches them (`lab.evaluate.match`: IoU >= 0.5, or a top-face label's centre in the
    box)."""
    if not roll.dice:
        return 0, 0, 0
    found = np.array([d.candidate.box_xyxy for d in roll.dice], np.float32)
    scores = np.array([d.candidate.score for d in roll.dice], np.float32)
    pairs = match(found, scores, boxes, box_kind=box_kind)
    right = 0
    for i, j in pairs:
        die = roll.dice[i]
        read = die.face if die.face is not None else int(np.argmax(die.face_probs)) + 1
        right += int(read == int(faces[j]))
    return len(pairs), len(roll.dice) - len(pairs), right


def detector_alone(
    reader: Reader, frame: ImageArray, boxes: NDArray[np.float32], input_px: int, box_kind: str = "die"
) -> int:
    """Labelled dice the detector alone finds (matched as `tally` does) on the frame scaled to `input_px`
    (long side)."""
    config = dataclasses.replace(reader.detector.config, input_long_px=input_px)
    tensor, letterbox = preprocess(frame, input_long_px=input_px)
    h, w = frame.shape[:2]
    found, scores = decode(
        reader.detector.model.run(tensor)[0], letterbox=letterbox, image_wh=(w, h), config=config
    )
    return len(match(found, scores, boxes, box_kind=box_kind))


def margin_arg(text: str) -> float | None:
    """`--big-die-face-margin`: a number, or 'none' (no face check)."""
    return None if text.strip().lower() == "none" else float(text)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--real", type=Path, default=SHARED_REAL)
    parser.add_argument(
        "--set",
        choices=("nellbyler", "matteop65"),
        default="nellbyler",
        help="nellbyler (top-down, whole-die boxes) or matteop65 (oblique webcam, top-face boxes)",
    )
    parser.add_argument(
        "--split",
        default="train",
        help="the set's split: train to tune; test (nellbyler) or valid (matteop65) only to report",
    )
    parser.add_argument("--count", type=int, default=40, help="photos (0: all of the split)")
    parser.add_argument("--factors", default="1,2,3,4", help="frame size over the photo's, per side")
    parser.add_argument("--inputs", default="640,1280,1920", help="detector input sizes to try alone")
    parser.add_argument(
        "--surface",
        choices=("own", "random"),
        default="own",
        help="what the larger frame shows around the photo: more of its own surface (its border colour, "
        "the photo feathered in) or a random surface (the photo's edges show)",
    )
    shipped_detector, shipped_reader = DetectorConfig(), ReaderConfig()
    parser.add_argument(
        "--fine-max-long-px",
        type=int,
        default=shipped_detector.fine_max_long_px,
        help="the candidate's fine look (0: none; 1920 was refused on 2026-12-02)",
    )
    parser.add_argument(
        "--coarse-max-pips",
        type=int,
        default=shipped_detector.coarse_max_pips,
        help="the candidate's limit on pips under a coarse box (0: none; 9 was refused on 2026-12-02)",
    )
    parser.add_argument(
        "--big-die-face-margin",
        type=margin_arg,
        default=shipped_reader.big_die_face_margin,
        help="the candidate's face check on a coarse look's big die (ReaderConfig.big_die_face_margin; "
        "'none': no check)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = args.real / ("d6-topdown-nellbyler" if args.set == "nellbyler" else "d6-webcam-matteop65")
    if not folder.is_dir():
        raise SystemExit(
            f"the {args.set} photos are not under {args.real}: give --real DIR holding {folder.name} "
            "(the shared datasets, not in a clone of this repository)"
        )
    if args.set == "nellbyler":
        items = load_nellbyler(folder, args.split)
    else:
        items = load_yolo_folder(folder / args.split, box_kind="top")
    if args.count:
        items = items[: args.count]
    factors = [int(v) for v in args.factors.split(",")]
    inputs = [int(v) for v in args.inputs.split(",") if v]
    candidate = dataclasses.replace(
        DetectorConfig(), fine_max_long_px=args.fine_max_long_px, coarse_max_pips=args.coarse_max_pips
    )
    reader = Reader(
        threads=1, config=ReaderConfig(detector=candidate, big_die_face_margin=args.big_die_face_margin)
    )
    before = Reader(threads=1)
    print(
        f"{args.set} {args.split}, {len(items)} photos: each set at its own size in a frame `factor` "
        "times as large (dice keep their pixels), around it "
        + ("more of its own surface" if args.surface == "own" else "a random surface")
    )
    print(
        "| factor (frame long side) | dice | candidate: found | candidate: on no die | candidate: face right "
        "| candidate p50 ms | shipped reader: found / on no die / face right | "
        + " | ".join(f"detector alone at {n} px: found" for n in inputs)
        + " |"
    )
    print("|---|---|---|---|---|---|---|" + "---|" * len(inputs))
    for factor in factors:
        rng = np.random.default_rng(args.seed + factor)
        dice = found = false = right = 0
        old = [0, 0, 0]
        alone = dict.fromkeys(inputs, 0)
        times: list[float] = []
        long_side = 0
        for item in track(items, description=f"factor {factor}", transient=True):
            frame, boxes, faces = enlarge(item, factor, rng, args.surface)
            long_side = max(frame.shape[:2])
            dice += len(boxes)
            start = time.perf_counter()
            roll = reader.read(Frame(image=frame, frame_id="small"))
            times.append((time.perf_counter() - start) * 1000)
            f, n, r = tally(roll, boxes, faces, item.box_kind)
            found, false, right = found + f, false + n, right + r
            shipped = before.read(Frame(image=frame, frame_id="small"))
            for k, v in enumerate(tally(shipped, boxes, faces, item.box_kind)):
                old[k] += v
            for size in inputs:
                alone[size] += detector_alone(reader, frame, boxes, size, item.box_kind)
        pct = 100.0 / max(dice, 1)
        cells = " | ".join(f"{alone[n]} ({alone[n] * pct:.1f} %)" for n in inputs)
        print(
            f"| {factor} ({long_side} px) | {dice} | {found} ({found * pct:.1f} %) | {false} | "
            f"{right} ({100.0 * right / max(found, 1):.1f} % of found) | {float(np.median(times)):.1f} | "
            f"{old[0]} ({old[0] * pct:.1f} %) / {old[1]} / {old[2]} | {cells} |"
        )


if __name__ == "__main__":
    main()
