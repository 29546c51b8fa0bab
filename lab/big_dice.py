"""How the reader does on a die filling much of the frame (the issue asks for dice up to frame-filling).

    .venv/bin/python -m lab.big_dice [--count 16] [--rendered 12] [--fractions 0.1,0.2,0.3,0.5,0.7,0.9]

Two kinds of frames, 1280x960, one die in the middle spanning the given fraction of the short side:

- **Real dice, scaled up**: a die cut from a real photo (the nellbyler train photos, top-down, and the
  matteop65 train folder, at an angle: tuning images, never a test split) with a margin of felt around it,
  scaled up and pasted on a random surface (`models.augment.random_background`). Scaling a 35-100 px die
  up blurs it, and matteop65's boxes hold the top face only (widened as in training), so its true box is
  rough.
- **Sharp close-ups** (`--rendered N`): N throws of the synthetic generator (`datasets.synth`, seed 950,
  never trained on), each photographed again from straight above its flattest die by a camera with a
  12-degree long lens brought down until that die spans the fraction (the scene's own look, light and
  degradations; the true box from the generator's ground truth).

Columns: the whole reader (found: a box with IoU >= 0.5 against the true one and no other box centred on
the die; face right: that box's face, or the learned classifier's when the reader left it unsure), the same
reader without the coarse looks (`DetectorConfig.coarse_long_px=()`: as it read before them), and the
detector alone with the frame scaled to each `--inputs` long side (a box with IoU >= 0.5: where a scale
pyramid would find the die).
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

from lab.evaluate import iou_matrix
from lab.small_dice import margin_arg
from models.augment import random_background
from models.data import SHARED_REAL, LabelledImage, load_nellbyler, load_yolo_folder
from models.train_pips import TOP_TO_DIE
from vision.detect.centernet import DetectorConfig
from vision.reader import Reader, ReaderConfig
from vision.types import Frame, ImageArray, Roll

FRAME_HW = (960, 1280)
MARGIN = 0.35  # felt around the die, each side, as a share of the die's side


def die_with_margin(item: LabelledImage, index: int) -> tuple[ImageArray, int, float]:
    """The crop around one labelled die (square, with margin), its face, and the die's side in the crop."""
    image = cv2.imread(str(item.path), cv2.IMREAD_COLOR)
    if image is None:
        raise SystemExit(f"unreadable image {item.path}")
    b = item.boxes_xyxy[index].astype(np.float64)
    centre, side = (b[:2] + b[2:]) / 2, float(max(b[2] - b[0], b[3] - b[1]))
    if item.box_kind == "top":
        side *= TOP_TO_DIE
    half = side * (0.5 + MARGIN)
    h, w = image.shape[:2]
    x0, y0 = round(max(0.0, centre[0] - half)), round(max(0.0, centre[1] - half))
    x1, y1 = round(min(float(w), centre[0] + half)), round(min(float(h), centre[1] + half))
    crop = np.asarray(image[y0:y1, x0:x1], np.uint8)
    return crop, int(item.faces[index]), side


def place(
    crop: ImageArray, die_side: float, fraction: float, rng: np.random.Generator
) -> tuple[ImageArray, NDArray[np.float32]]:
    """A 1280x960 frame with the crop scaled so the die spans `fraction` of the short side, and its box."""
    h, w = FRAME_HW
    scale = fraction * h / die_side
    new_w, new_h = max(1, round(crop.shape[1] * scale)), max(1, round(crop.shape[0] * scale))
    big = cv2.resize(crop, (new_w, new_h), interpolation=cv2.INTER_CUBIC)
    frame = random_background(h, w, rng)
    x0, y0 = (w - new_w) // 2, (h - new_h) // 2
    fx0, fy0 = max(0, x0), max(0, y0)
    fx1, fy1 = min(w, x0 + new_w), min(h, y0 + new_h)
    frame[fy0:fy1, fx0:fx1] = big[fy0 - y0 : fy1 - y0, fx0 - x0 : fx1 - x0]
    side = fraction * h
    cx, cy = w / 2, h / 2
    box = np.array([[cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2]], np.float32)
    box[:, [0, 2]] = np.clip(box[:, [0, 2]], 0, w)
    box[:, [1, 3]] = np.clip(box[:, [1, 3]], 0, h)
    return np.asarray(frame, np.uint8), box


def rendered_closeups(
    count: int, fractions: list[float], *, seed: int = 950
) -> list[tuple[float, ImageArray, int, NDArray[np.float32]]]:
    """(fraction, frame, face, true box): `count` synthetic throws, each seen close up at every fraction."""
    from dataclasses import replace

    from calibration.camera import Camera, CameraIntrinsics, CameraPose
    from datasets.synth.generator import GeneratorConfig, build_truth, draw_look, scene_rng, simulate_scene
    from datasets.synth.randomise import degrade
    from datasets.synth.render import SceneRenderer

    cfg = GeneratorConfig(seed=seed)
    out: list[tuple[float, ImageArray, int, NDArray[np.float32]]] = []
    with SceneRenderer(cfg.layout) as renderer:
        for index in track(range(count), description="rendering close-ups", transient=True):
            outcome = simulate_scene(cfg, index)
            rng = scene_rng(cfg.seed, index, 1)
            draw = draw_look(cfg, outcome, rng)
            poses = outcome.result.poses
            # Flat: one of the die's axes points straight up or down (any face on top).
            flat = [i for i, p in enumerate(poses) if abs(float(np.abs(p.rotation[2, :]).max()) - 1.0) < 0.02]
            if not flat:
                continue
            die = flat[0]
            x, y, z = poses[die].position_mm
            top_z = z + outcome.world.die_edge_mm / 2
            h, w = FRAME_HW
            # A long lens (12 degrees across): the renderer clips what is nearer than 50 mm, so the camera
            # stays 130 mm or more from the die even when it fills nine tenths of the frame.
            intrinsics = CameraIntrinsics.from_fov(width_px=w, height_px=h, hfov_deg=12.0)
            for fraction in fractions:
                dist = intrinsics.fx * outcome.world.die_edge_mm / (fraction * h)
                pose = CameraPose.look_at(
                    eye_mm=(x, y, top_z + dist), target_mm=(x, y, 0.0), up=(0.0, 1.0, 0.0)
                )
                camera = Camera(intrinsics, pose)
                seen = renderer.render(
                    camera, dice=poses, chips=draw.chips, look=draw.look, lighting=draw.lighting
                )
                truth = build_truth(
                    cfg,
                    outcome,
                    replace(draw, camera=camera),
                    seen,
                    index=index,
                    scene_id="close",
                    image="close",
                )
                t = truth.dice[die]
                if t.face is None:
                    break
                image = degrade(seen.image, draw.degradation, rng)
                out.append(
                    (fraction, np.asarray(image, np.uint8), t.face, np.array([t.box_xyxy], np.float32))
                )
    return out


def judged(roll: Roll, truth_box: NDArray[np.float32], face: int) -> tuple[bool, bool]:
    """(found: a box matches it and no other box lies inside it, face right)."""
    if not roll.dice:
        return False, False
    boxes = np.array([d.candidate.box_xyxy for d in roll.dice], np.float32)
    ious = iou_matrix(boxes, truth_box)[:, 0]
    best = int(np.argmax(ious))
    t = truth_box[0]
    centres = (boxes[:, :2] + boxes[:, 2:]) / 2
    inside = (centres[:, 0] > t[0]) & (centres[:, 0] < t[2]) & (centres[:, 1] > t[1]) & (centres[:, 1] < t[3])
    found = bool(ious[best] >= 0.5) and int(inside.sum()) == 1
    die = roll.dice[best]
    read = die.face if die.face is not None else int(np.argmax(die.face_probs)) + 1
    return found, bool(ious[best] >= 0.5 and read == face)


def detector_finds(reader: Reader, frame: ImageArray, truth_box: NDArray[np.float32], input_px: int) -> bool:
    """Whether the detector alone, on the frame scaled to `input_px` (long side), boxes the die."""
    from vision.detect.centernet import decode, preprocess

    config = dataclasses.replace(
        reader.detector.config, input_long_px=input_px, min_size_of_median=0.0, coarse_long_px=()
    )
    tensor, letterbox = preprocess(frame, input_long_px=input_px)
    h, w = frame.shape[:2]
    boxes, _ = decode(
        reader.detector.model.run(tensor)[0], letterbox=letterbox, image_wh=(w, h), config=config
    )
    return bool(len(boxes)) and float(iou_matrix(boxes, truth_box).max()) >= 0.5


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--real", type=Path, default=SHARED_REAL)
    parser.add_argument("--count", type=int, default=16, help="real dice per set (nellbyler, matteop65)")
    parser.add_argument("--rendered", type=int, default=12, help="synthetic throws seen close up (0: none)")
    parser.add_argument("--fractions", default="0.1,0.2,0.3,0.5,0.7,0.9")
    parser.add_argument("--inputs", default="320,160,96", help="detector input sizes to try alone")
    parser.add_argument(
        "--big-die-face-margin",
        type=margin_arg,
        default=ReaderConfig().big_die_face_margin,
        help="the reader's face check on a coarse look's big die (ReaderConfig.big_die_face_margin; "
        "'none': no check)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    inputs = [int(v) for v in args.inputs.split(",") if v]
    rng = np.random.default_rng(args.seed)
    frames: list[tuple[str, float, ImageArray, int, NDArray[np.float32]]] = []
    nellbyler = args.real / "d6-topdown-nellbyler"
    matteop65 = args.real / "d6-webcam-matteop65" / "train"
    if args.count and nellbyler.is_dir() and matteop65.is_dir():
        for name, items in (
            ("nellbyler train, scaled up", load_nellbyler(nellbyler, "train")),
            ("matteop65 train, scaled up", load_yolo_folder(matteop65, box_kind="top")),
        ):
            for k in rng.choice(len(items), size=args.count, replace=False):
                item = items[int(k)]
                crop, face, side = die_with_margin(item, int(rng.integers(len(item.faces))))
                for fraction in fractions:
                    frame, box = place(crop, side, fraction, rng)
                    frames.append((name, fraction, frame, face, box))
    elif args.count:
        print(f"(the real sets are not under {args.real}: only the rendered close-ups; see README, Licences)")
    if args.rendered:
        for fraction, frame, face, box in rendered_closeups(args.rendered, fractions):
            frames.append(("synthetic close-ups, sharp", fraction, frame, face, box))
    reader = Reader(threads=1, config=ReaderConfig(big_die_face_margin=args.big_die_face_margin))
    # The same reader without the coarse looks: how it read these frames before they existed.
    fine_only = Reader(
        threads=1, config=ReaderConfig(detector=dataclasses.replace(DetectorConfig(), coarse_long_px=()))
    )
    print(
        "| frames | die side / frame short side | dice | reader: found | reader: face right | "
        "without the coarse looks: found / face right | "
        + " | ".join(f"detector alone at {n} px: found" for n in inputs)
        + " | reader p50 ms |"
    )
    print("|---|---|---|---|---|---|" + "---|" * len(inputs) + "---|")
    for name in dict.fromkeys(f[0] for f in frames):
        for fraction in fractions:
            mine = [f for f in frames if f[0] == name and f[1] == fraction]
            if not mine:
                continue
            found = right = found_before = right_before = 0
            alone = dict.fromkeys(inputs, 0)
            times = []
            for _, _, frame, face, box in track(mine, description=f"{name} {fraction:g}", transient=True):
                start = time.perf_counter()
                roll = reader.read(Frame(image=frame, frame_id="big"))
                times.append((time.perf_counter() - start) * 1000)
                f, r = judged(roll, box, face)
                found += f
                right += r
                f, r = judged(fine_only.read(Frame(image=frame, frame_id="big")), box, face)
                found_before += f
                right_before += r
                for n in inputs:
                    alone[n] += detector_finds(reader, frame, box, n)
            cells = " | ".join(str(alone[n]) for n in inputs)
            p50 = float(np.median(times))
            row = (
                f"| {name} | {fraction:g} | {len(mine)} | {found} | {right} | {found_before} / {right_before}"
            )
            print(f"{row} | {cells} | {p50:.1f} |")


if __name__ == "__main__":
    main()
