"""Train the die detector (CenterNet-style) on CPU and export it to ONNX.

    .venv/bin/python -m models.train_detector --minutes 25 [--synth data/synth/train-v1]

Data seen: the nellbyler train split (200 photos; never the test split), optionally synthetic train
scenes, and domain-randomised composites (real dice pasted onto random felt/wood/noise backgrounds).
Needs the `train` extra (torch==2.13.0, onnx). Two threads, time-bounded, one rich progress bar.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from models.augment import camera_light, flip_rotate, paste_dice, photometric, random_background
from models.data import SHARED_REAL, DatasetError, LabelledImage, load_nellbyler, load_synth, load_yolo_folder
from models.loop import Prefetch, export_onnx, require_torch, train_for
from vision.detect.centernet import STRIDE

MODEL_DIR = Path(__file__).resolve().parent / "detect_centernet"
CROP = 160  # training crops; small because two shared CPU cores train it (dice 6-70 px inside)
# Crops whose statistics rebuild the batch norms of an --init .onnx (models/from_onnx.py).
CALIBRATION_CROPS = 64


def _load(
    items: list[LabelledImage],
) -> list[tuple[NDArray[np.uint8], NDArray[np.float32], NDArray[np.int64]]]:
    out = []
    for it in items:
        img = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if img is None:
            raise SystemExit(f"unreadable training image {it.path}")
        out.append((np.asarray(img, np.uint8), it.boxes_xyxy.copy(), it.faces.copy()))
    return out


def mine_false_alarms(
    scenes: list[tuple[NDArray[np.uint8], NDArray[np.float32], NDArray[np.int64]]],
    *,
    threshold: float = 0.2,
    manifest_path: Path | None = None,
) -> list[NDArray[np.float32]]:
    """Centres (n, 2) in scene px where the registered detector fires with no labelled die there.

    Hard negatives: the crops around these (sheet-protector holes, tray edges, shadows) are drawn more
    often. Uses the ONNX model in `models/manifest.json` (or `manifest_path`: a candidate's own false
    alarms), as the reader would run it.
    """
    from vision.detect.centernet import DetectorConfig, decode, preprocess
    from vision.onnx_session import MANIFEST_PATH, load_model

    model = load_model("detector", manifest_path=manifest_path or MANIFEST_PATH)
    config = DetectorConfig(score_threshold=threshold)
    out = []
    for img, boxes, _ in scenes:
        h, w = img.shape[:2]
        tensor, letterbox = preprocess(img, input_long_px=config.input_long_px)
        pred, _ = decode(model.run(tensor)[0], letterbox=letterbox, image_wh=(w, h), config=config)
        out.append(false_alarm_centres(pred, labelled_xyxy=boxes))
    return out


def false_alarm_centres(
    detected_xyxy: NDArray[np.float32], *, labelled_xyxy: NDArray[np.float32]
) -> NDArray[np.float32]:
    """Centres (n, 2) of the detected boxes that lie in no labelled box grown by 10 % of its size a side."""
    centres = (detected_xyxy[:, :2] + detected_xyxy[:, 2:]) / 2
    grow = 0.1 * (labelled_xyxy[:, 2:] - labelled_xyxy[:, :2])
    lo, hi = labelled_xyxy[:, :2] - grow, labelled_xyxy[:, 2:] + grow
    inside = (centres[:, None, :] >= lo[None]) & (centres[:, None, :] <= hi[None])
    # (detections, labelled boxes); either may be none (an image the detector finds nothing on)
    on_die = np.asarray(np.all(inside, axis=2), bool).reshape(len(centres), len(labelled_xyxy))
    return np.asarray(centres[~np.any(on_die, axis=1)], np.float32).reshape(-1, 2)


class Sampler:
    """Makes one augmented (image, boxes) training sample at a time."""

    def __init__(
        self,
        scenes: list[tuple[NDArray[np.uint8], NDArray[np.float32], NDArray[np.int64]]],
        seed: int,
        *,
        false_alarms: list[NDArray[np.float32]] | None = None,
        hard_share: float = 0.3,
        camera_light_share: float = 0.0,
    ) -> None:
        self.scenes = scenes
        self.camera_light_share = camera_light_share
        self.rng = np.random.default_rng(seed)
        self.false_alarms = false_alarms or []
        self.hard_scenes = [i for i, fa in enumerate(self.false_alarms) if len(fa)]
        self.hard_share = hard_share if self.hard_scenes else 0.0
        self.patches: list[tuple[NDArray[np.uint8], int]] = []
        for img, boxes, faces in scenes:
            for b, f in zip(boxes, faces, strict=True):
                # Inset 6 % per side: the labels are loose and the tray's grey must not become "a die".
                dx, dy = 0.06 * float(b[2] - b[0]), 0.06 * float(b[3] - b[1])
                x0, y0 = round(float(b[0]) + dx), round(float(b[1]) + dy)
                x1, y1 = round(float(b[2]) - dx), round(float(b[3]) - dy)
                if x1 - x0 >= 8 and y1 - y0 >= 8:
                    self.patches.append((img[max(0, y0) : y1, max(0, x0) : x1].copy(), int(f)))

    def sample(self) -> tuple[NDArray[np.uint8], NDArray[np.float32]]:
        """One sample; a `camera_light_share` of them also under a camera's exposure and sensor noise."""
        img, boxes = self._sample()
        if self.camera_light_share > 0 and self.rng.random() < self.camera_light_share:
            img = camera_light(img, self.rng)
        return img, boxes

    def _sample(self) -> tuple[NDArray[np.uint8], NDArray[np.float32]]:
        rng = self.rng
        if rng.random() < 0.35:
            bg = random_background(CROP, CROP, rng)
            n = int(rng.integers(1, 16))
            picks = [self.patches[int(i)] for i in rng.integers(0, len(self.patches), size=n)]
            lo = float(np.exp(rng.uniform(np.log(7), np.log(45))))
            img, boxes, _ = paste_dice(bg, picks, rng, size_range_px=(lo, lo * rng.uniform(1.0, 1.6)))
            if rng.random() < 0.1 and len(boxes) == 0:
                return photometric(img, rng), boxes
            return photometric(img, rng), boxes
        if rng.random() < self.hard_share:
            return self._hard_sample()
        img, boxes, _ = self.scenes[int(rng.integers(len(self.scenes)))]
        med = (
            float(np.median(np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])))
            if len(boxes)
            else 40
        )
        # Die size at the net input, log-uniform from 6 px to ~200 px.
        target = float(np.exp(rng.uniform(np.log(6), np.log(150 if rng.random() < 0.2 else 60))))
        scale = target / max(med, 1.0)
        sx, sy = scale * rng.uniform(0.9, 1.1), scale * rng.uniform(0.9, 1.1)
        h, w = img.shape[:2]
        nw, nh = max(8, round(w * sx)), max(8, round(h * sy))
        resized = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
        b = boxes * np.array([nw / w, nh / h, nw / w, nh / h], np.float32)
        canvas = random_background(CROP, CROP, rng) if (nw < CROP or nh < CROP) else None
        x_off = (
            int(rng.integers(0, max(1, nw - CROP + 1))) if nw > CROP else -int(rng.integers(0, CROP - nw + 1))
        )
        y_off = (
            int(rng.integers(0, max(1, nh - CROP + 1))) if nh > CROP else -int(rng.integers(0, CROP - nh + 1))
        )
        if canvas is None:
            out = resized[y_off : y_off + CROP, x_off : x_off + CROP].copy()
        else:
            out = canvas
            sx0, sy0 = max(0, x_off), max(0, y_off)
            dx0, dy0 = max(0, -x_off), max(0, -y_off)
            cw, ch = min(nw - sx0, CROP - dx0), min(nh - sy0, CROP - dy0)
            out[dy0 : dy0 + ch, dx0 : dx0 + cw] = resized[sy0 : sy0 + ch, sx0 : sx0 + cw]
        b = b - np.array([x_off, y_off, x_off, y_off], np.float32)
        cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
        inside = (cx >= 0) & (cx < CROP) & (cy >= 0) & (cy < CROP)
        b = np.clip(b[inside], 0, CROP)
        out, b = flip_rotate(np.asarray(out, np.uint8), b, rng)
        return photometric(out, rng), b

    def _hard_sample(self) -> tuple[NDArray[np.uint8], NDArray[np.float32]]:
        """A crop around one mined false alarm, at about the scale the reader sees the scene."""
        rng = self.rng
        idx = self.hard_scenes[int(rng.integers(len(self.hard_scenes)))]
        img, boxes, _ = self.scenes[idx]
        fa = self.false_alarms[idx]
        h, w = img.shape[:2]
        scale = 640 / max(h, w) * float(np.exp(rng.uniform(np.log(0.7), np.log(1.4))))
        nw, nh = max(CROP, round(w * scale)), max(CROP, round(h * scale))
        sx, sy = nw / w, nh / h
        resized = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
        px, py = fa[int(rng.integers(len(fa)))] * np.array([sx, sy], np.float32)
        x_off = int(np.clip(px - rng.uniform(0.2, 0.8) * CROP, 0, nw - CROP))
        y_off = int(np.clip(py - rng.uniform(0.2, 0.8) * CROP, 0, nh - CROP))
        out = resized[y_off : y_off + CROP, x_off : x_off + CROP].copy()
        shift = np.array([x_off, y_off, x_off, y_off], np.float32)
        b = boxes * np.array([sx, sy, sx, sy], np.float32) - shift
        cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
        inside = (cx >= 0) & (cx < CROP) & (cy >= 0) & (cy < CROP)
        b = np.clip(b[inside], 0, CROP)
        out, b = flip_rotate(np.asarray(out, np.uint8), b, rng)
        return photometric(out, rng), b


def targets(boxes: NDArray[np.float32], size: int) -> NDArray[np.float32]:
    """CenterNet targets (6, size/4, size/4): heat, log w, log h, dx, dy, regression mask."""
    s = size // STRIDE
    t = np.zeros((6, s, s), np.float32)
    ys, xs = np.mgrid[0:s, 0:s].astype(np.float32)
    for x0, y0, x1, y1 in boxes:
        w, h = (x1 - x0) / STRIDE, (y1 - y0) / STRIDE
        if w < 0.5 or h < 0.5:
            continue
        cx, cy = (x0 + x1) / 2 / STRIDE, (y0 + y1) / 2 / STRIDE
        ix, iy = min(s - 1, int(cx)), min(s - 1, int(cy))
        radius = max(0.0, 0.15 * min(w, h))
        sigma = max(0.5, (2 * radius + 1) / 6)
        g = np.exp(-((xs - ix) ** 2 + (ys - iy) ** 2) / (2 * sigma**2))
        t[0] = np.maximum(t[0], g)
        t[0, iy, ix] = 1.0
        t[1, iy, ix] = np.log(w)
        t[2, iy, ix] = np.log(h)
        t[3, iy, ix] = cx - ix
        t[4, iy, ix] = cy - iy
        t[5, iy, ix] = 1.0
    return t


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The training data options, shared with models/distill_detector.py."""
    parser.add_argument("--real", type=Path, default=SHARED_REAL / "d6-topdown-nellbyler")
    parser.add_argument(
        "--synth", type=Path, action="append", default=[], help="synthetic train scenes (repeatable)"
    )
    parser.add_argument(
        "--synth-limit", type=int, default=300, help="use the first N scenes of each synthetic folder"
    )
    parser.add_argument(
        "--matteop65", type=Path, default=None, help="matteop65 train/ folder (top-face boxes widened 1.2x)"
    )
    parser.add_argument(
        "--hard-negatives",
        type=float,
        default=0.0,
        help="share of samples cut around the registered detector's false alarms on the training images",
    )
    parser.add_argument(
        "--synth-all-dice",
        action="store_true",
        help="label every visible synthetic die, also those with no face by the rules (wedged, off the felt)",
    )
    parser.add_argument(
        "--real-repeat", type=int, default=1, help="draw each nellbyler train photo this many times as often"
    )
    parser.add_argument(
        "--webcam-repeat", type=int, default=1, help="draw each matteop65 photo this many times as often"
    )
    parser.add_argument(
        "--camera-light",
        type=float,
        default=0.0,
        help="share of samples also under a camera's exposure (x0.2-1.7) and sensor noise "
        "(models/augment.py camera_light)",
    )
    parser.add_argument(
        "--mine-manifest",
        type=Path,
        default=None,
        help="mine the hard negatives with the detector this manifest names (default: the registered one), "
        "e.g. a candidate's own false alarms",
    )


def repeat_sources(
    seq: list[Any], n_real: int, n_synth: int, real_repeat: int, webcam_repeat: int
) -> list[Any]:
    """The training list with its first `n_real` entries (the nellbyler photos) `real_repeat` times and those
    from `n_synth` on (the matteop65 photos) `webcam_repeat` times; the synthetic scenes between once."""
    if not 0 <= n_real <= n_synth <= len(seq):
        raise ValueError(f"need 0 <= n_real <= n_synth <= {len(seq)}, got {n_real}, {n_synth}")
    out: list[Any] = (
        seq[:n_real] * max(1, real_repeat) + seq[n_real:n_synth] + seq[n_synth:] * max(1, webcam_repeat)
    )
    return out


def load_training_data(
    args: argparse.Namespace,
) -> tuple[
    list[tuple[NDArray[np.uint8], NDArray[np.float32], NDArray[np.int64]]],
    list[NDArray[np.float32]] | None,
    Sampler,
]:
    """The training scenes, their mined false alarms (None without --hard-negatives) and the sampler."""
    items = load_nellbyler(args.real, "train")  # never the test split
    n_real = len(items)
    for folder in args.synth:
        items += load_synth(folder, limit=args.synth_limit, all_dice=args.synth_all_dice)
    n_synth = len(items)
    if args.matteop65 is not None:  # never valid/
        for it in load_yolo_folder(args.matteop65, box_kind="top"):
            c, half = (
                (it.boxes_xyxy[:, :2] + it.boxes_xyxy[:, 2:]) / 2,
                (it.boxes_xyxy[:, 2:] - it.boxes_xyxy[:, :2]) * 0.6,
            )
            wide = np.concatenate([c - half, c + half], axis=1).astype(np.float32)
            items.append(LabelledImage(path=it.path, boxes_xyxy=wide, faces=it.faces, box_kind="die"))
    scenes = _load(items)
    false_alarms = (
        mine_false_alarms(scenes, manifest_path=args.mine_manifest) if args.hard_negatives > 0 else None
    )
    # --real-repeat / --webcam-repeat: the nellbyler and matteop65 photos appear that many times in the lists
    # the sampler draws from (loaded and mined once; the copies are the same arrays).
    counts = (n_real, n_synth, args.real_repeat, args.webcam_repeat)
    items, scenes = repeat_sources(items, *counts), repeat_sources(scenes, *counts)
    if false_alarms is not None:
        false_alarms = repeat_sources(false_alarms, *counts)
        print(f"mined {sum(len(f) for f in false_alarms)} false alarms on {len(scenes)} training images")
    sampler = Sampler(
        scenes,
        args.seed,
        false_alarms=false_alarms,
        hard_share=args.hard_negatives,
        camera_light_share=args.camera_light,
    )
    print(f"training on {len(items)} images, {len(sampler.patches)} die patches for pasting")
    return scenes, false_alarms, sampler


def detection_loss(out: Any, t: Any) -> tuple[Any, Any, Any]:
    """CenterNet's loss terms on a batch: focal loss on the heat, L1 on log size and offset at the centres."""
    import torch

    heat = out[:, 0].clamp(1e-4, 1 - 1e-4)
    gt = t[:, 0]
    pos = (gt == 1).float()
    n_pos = pos.sum().clamp(min=1)
    pos_loss = torch.log(heat) * (1 - heat) ** 2 * pos
    neg_loss = torch.log(1 - heat) * heat**2 * (1 - gt) ** 4 * (1 - pos)
    focal = -(pos_loss.sum() + neg_loss.sum()) / n_pos
    mask = t[:, 5:6]
    size_l1 = (torch.abs(out[:, 1:3] - t[:, 1:3]) * mask).sum() / n_pos
    off_l1 = (torch.abs(out[:, 3:5] - t[:, 3:5]) * mask).sum() / n_pos
    return focal, size_l1, off_l1


def draw_arrays(sampler: Sampler, n: int) -> tuple[NDArray[np.uint8], NDArray[np.float32]]:
    """`n` samples as arrays: images (n, 3, CROP, CROP) RGB uint8 and their targets (n, 6, ...). A data worker
    sends these (a quarter of the bytes of the float images) and the training process makes the tensors."""
    imgs, tgts = [], []
    for _ in range(n):
        img, boxes = sampler.sample()
        imgs.append(img[:, :, ::-1].transpose(2, 0, 1))
        tgts.append(targets(boxes, CROP))
    return np.stack(imgs), np.stack(tgts)


def to_tensors(arrays: tuple[NDArray[np.uint8], NDArray[np.float32]]) -> tuple[Any, Any]:
    """`draw_arrays`' batch as tensors: the images as float RGB in 0..1."""
    import torch

    imgs, tgts = arrays
    return torch.from_numpy(imgs.astype(np.float32) / 255), torch.from_numpy(tgts)


def draw_batch(sampler: Sampler, n: int) -> tuple[Any, Any]:
    """`n` samples as tensors: images (n, 3, CROP, CROP) RGB in 0..1 and their targets (n, 6, ...)."""
    return to_tensors(draw_arrays(sampler, n))


def load_detector_onnx(
    model: Any,
    onnx_path: Path,
    scenes: list[tuple[NDArray[np.uint8], NDArray[np.float32], NDArray[np.int64]]],
    false_alarms: list[NDArray[np.float32]] | None,
    args: argparse.Namespace,
) -> None:
    """Put an exported detector's weights into `model`, batch norms rebuilt from training crops.

    The calibration crops come from a sampler of their own (seed + 1), so the run's draws stay those of
    --seed.
    """
    import torch

    from models.from_onnx import init_from_onnx

    calib = Sampler(scenes, args.seed + 1, false_alarms=false_alarms, hard_share=args.hard_negatives)
    x, _ = draw_batch(calib, CALIBRATION_CROPS)
    del calib  # it holds a copy of every die patch
    init_from_onnx(model, onnx_path, torch.as_tensor(x))


def export_detector(model: Any, path: Path, *, example_hw: tuple[int, int] = (480, 640)) -> None:
    """The detector's ONNX export: input "image" (1, 3, H, W), output "head" (1, 5, H/4, W/4); H, W free."""
    export_onnx(
        model,
        path,
        example_shape=(1, 3, *example_hw),
        input_name="image",
        output_name="head",
        dynamic_axes={"image": {2: "h", 3: "w"}, "head": {2: "h4", 3: "w4"}},
    )


def finish_detector(
    model: Any, *, out: Path, kind: str, steps: str, started_s: float, no_register: bool
) -> None:
    """Save `last.pt`, export `detect_<kind>_<date>.onnx` into `out` and register it unless `no_register`."""
    import torch

    from models.export import dated_name, register

    torch.save(model.state_dict(), out / "last.pt")
    onnx_path = out / dated_name("detect", kind)
    export_detector(model, onnx_path)
    minutes = (time.monotonic() - started_s) / 60
    if no_register:
        print(f"done: {steps} in {minutes:.1f} min -> {onnx_path} (not registered)")
        return
    entry = register(name="detector", onnx_path=onnx_path, input_size_hw=(480, 640), labels=("die",))
    print(f"done: {steps} in {minutes:.1f} min -> {onnx_path} {entry['sha256']}")


def main() -> None:
    require_torch()
    import torch

    from models.nets import DieDetector

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=25.0, help="wall-time budget for training")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    add_data_arguments(parser)
    parser.add_argument(
        "--init",
        type=Path,
        default=None,
        help="start from these weights: a last.pt checkpoint, or a committed .onnx export (its batch norms "
        f"rebuilt from {CALIBRATION_CROPS} training crops, models/from_onnx.py)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--data-workers",
        type=int,
        default=0,
        help="processes that cut the training crops while the net trains on the last batch (0: cut them "
        "between steps, as before, and the draws are repeatable by --seed; with workers they are not: "
        "which worker's batch comes next depends on timing)",
    )
    parser.add_argument("--out", type=Path, default=MODEL_DIR)
    parser.add_argument(
        "--no-register", action="store_true", help="export the .onnx but leave models/manifest.json as it is"
    )
    args = parser.parse_args()
    if not 0.0 <= args.camera_light <= 1.0:
        parser.error(f"--camera-light is a share of the samples, 0 to 1: got {args.camera_light}")
    if args.data_workers < 0:
        parser.error(f"--data-workers must be 0 or more, got {args.data_workers}")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    try:
        scenes, false_alarms, sampler = load_training_data(args)
    except DatasetError as exc:  # a clone without ../shared, a mistyped folder
        parser.error(f"{exc} (the real photo sets live in {SHARED_REAL}, not in a clone; see --real)")

    model = DieDetector()
    if args.init is not None and args.init.suffix == ".onnx":
        load_detector_onnx(model, args.init, scenes, false_alarms, args)
        print(f"starting from {args.init} (batch norms from {CALIBRATION_CROPS} training crops)")
    elif args.init is not None:
        model.load_state_dict(torch.load(args.init, weights_only=True))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    args.out.mkdir(parents=True, exist_ok=True)

    draw = partial(draw_arrays, n=args.batch)
    with Prefetch(draw, sampler, workers=args.data_workers, seed=args.seed) as batches:

        def step_loss() -> tuple[torch.Tensor, str]:
            x, t = to_tensors(batches.next())
            focal, size_l1, off_l1 = detection_loss(model(x), t)
            return focal + size_l1 + off_l1, f"focal {float(focal.detach()):.2f}"

        run = train_for(
            model=model,
            opt=opt,
            base_lr=args.lr,
            minutes=args.minutes,
            label="detector",
            step_loss=step_loss,
            warmup_steps=100,
            clip_grad_norm=10.0,
            checkpoint=args.out / "last.pt",
            checkpoint_every=50,
        )

    finish_detector(
        model,
        out=args.out,
        kind="centernet",
        steps=f"{run.steps} steps x {args.batch}",
        started_s=run.started_s,
        no_register=args.no_register,
    )


if __name__ == "__main__":
    main()
