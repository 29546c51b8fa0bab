"""Train the die detector on pretrained features (`models.nets_lite_detect.LiteDetector`):
`throwbox train detector`.

The samples are `models.train_detector`'s (its `Sampler`: 160 px crops of the training scenes at random
scales, dice pasted on random surfaces, hard negatives, flips and turns, `models.augment.photometric`), from
the nellbyler train split (never its test split), optionally the matteop65 train folder (never `valid/`; its
top-face boxes widened as `models.train_detector` does) and any synthetic scene folders given; the loss is
CenterNet's (`models.train_detector.detection_loss`) and the loop, checkpoints and `--resume` those of
`throwbox train faces` (`models.train_faces.train_budget`).

A run writes into its folder: `checkpoint.pt`, `<name>.onnx` (input `image` (1, 3, H, W), output `head`
(1, 5, H/4, W/4): what `vision.detect.centernet` decodes) and the run card `card.json` + `card.md` (data
seen, seed, steps, and the detector's recall and precision on the real sets' parts no run trains on, run
through `vision.detect.centernet` at its shipped settings). Nothing is registered in the manifest: a
candidate is judged first (docs/history/detector-pretrained.md).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from models.data import LabelledImage
from models.train_faces import CARD_JSON, CARD_MD, RunResult

IOU_MATCH = 0.5  # as lab.evaluate.IOU_MATCH (the models may not import the lab)


@dataclass
class DetectorLiteConfig:
    """One training run's settings (all of them go into the run card)."""

    out: Path
    real: Path  # the nellbyler folder (its train split is read; never its test split)
    minutes: float = 40.0
    seed: int = 0
    batch: int = 16
    lr: float = 2e-3
    device: str = "cpu"
    threads: int = 2
    max_steps: int = 0  # 0: until the time budget is spent (tests: a handful of steps)
    checkpoint_every_s: float = 60.0
    resume: bool = False
    pretrained: bool = True
    freeze_early: bool = True  # Lite0's stem and blocks 1-3 as learned on ImageNet (LiteDetector)
    name: str = "detect_lite_candidate.onnx"
    matteop65: Path | None = None  # the matteop65 train/ folder
    synth: tuple[Path, ...] = ()
    synth_limit: int = 0  # the first N scenes of each synthetic folder (0: all)
    real_repeat: int = 1
    webcam_repeat: int = 1
    hard_negatives: float = 0.0
    camera_light: float = 0.0
    data: dict[str, dict[str, int]] = field(
        default_factory=dict
    )  # source -> images, dice (filled by the run)


def data_seen(cfg: DetectorLiteConfig) -> dict[str, dict[str, int]]:
    """Images and labelled dice of each training source (before --real-repeat / --webcam-repeat)."""
    from models.data import load_nellbyler, load_synth, load_yolo_folder

    def count(items: list[LabelledImage]) -> dict[str, int]:
        return {"images": len(items), "dice": int(sum(len(it.boxes_xyxy) for it in items))}

    seen: dict[str, dict[str, int]] = {f"{cfg.real.name} train": count(load_nellbyler(cfg.real, "train"))}
    for folder in cfg.synth:
        seen[f"synthetic {folder}"] = count(load_synth(folder, limit=cfg.synth_limit, all_dice=True))
    if cfg.matteop65 is not None:
        seen[f"{cfg.matteop65.parent.name} {cfg.matteop65.name}"] = count(
            load_yolo_folder(cfg.matteop65, box_kind="top")
        )
    return seen


def match_count(
    pred: NDArray[np.float32], scores: NDArray[np.float32], gt: NDArray[np.float32], box_kind: str
) -> int:
    """Labelled dice found: greedy one-to-one, best score first; IoU >= 0.5 for whole-die labels, the label's
    centre inside the box (nearest centre) for top-face labels (as `lab.evaluate.match`)."""
    from vision.detect.centernet import box_iou

    used: set[int] = set()
    centres = (gt[:, :2] + gt[:, 2:]) / 2
    for p in np.argsort(-scores):
        b = pred[p]
        free = [g for g in range(len(gt)) if g not in used]
        if box_kind == "die":
            scored = [(box_iou(b, gt[g]), g) for g in free]
            best = max(scored, default=(0.0, -1))
            if best[0] >= IOU_MATCH:
                used.add(best[1])
            continue
        inside = [g for g in free if b[0] <= centres[g, 0] <= b[2] and b[1] <= centres[g, 1] <= b[3]]
        if inside:
            pc = (b[:2] + b[2:]) / 2
            used.add(min(inside, key=lambda g: float(np.linalg.norm(centres[g] - pc))))
    return len(used)


def detection_figures(
    heads: Callable[[NDArray[np.float32]], NDArray[np.float32]], items: list[LabelledImage]
) -> dict[str, float | int]:
    """Recall and precision of the detector (`heads`: the net's input -> its output) on labelled photos, read
    through `vision.detect.centernet` at the shipped settings (no count given, no coarse looks)."""
    import cv2

    from vision.detect.centernet import DetectorConfig, decode, preprocess

    config = DetectorConfig()
    labelled = found = boxes = 0
    for it in items:
        img = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if img is None:
            continue
        h, w = img.shape[:2]
        tensor, letterbox = preprocess(np.asarray(img, np.uint8), input_long_px=config.input_long_px)
        pred, scores = decode(heads(tensor), letterbox=letterbox, image_wh=(w, h), config=config)
        labelled += len(it.boxes_xyxy)
        boxes += len(pred)
        found += match_count(pred, scores, it.boxes_xyxy, it.box_kind)
    return {
        "photos": len(items),
        "labelled_dice": labelled,
        "boxes": boxes,
        "found": found,
        "recall_pct": round(100 * found / labelled, 2) if labelled else 0.0,
        "precision_pct": round(100 * found / boxes, 2) if boxes else 0.0,
    }


def train_detector_lite(
    cfg: DetectorLiteConfig, unseen_sets: dict[str, list[LabelledImage]], *, progress: bool = True
) -> RunResult:
    """Train (or resume) a run in `cfg.out`, export its ONNX and write the run card beside it."""
    import torch

    from models.loop import require_torch
    from models.nets_lite_detect import LiteDetector
    from models.train_detector import detection_loss, draw_batch, export_detector, load_training_data
    from models.train_faces import train_budget
    from vision.onnx_session import sha256_of

    require_torch()
    out = cfg.out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    device = torch.device(cfg.device)
    cfg.data = data_seen(cfg)
    # models.train_detector's loader and sampler, given its command-line options.
    args = argparse.Namespace(
        real=cfg.real, synth=list(cfg.synth), synth_limit=cfg.synth_limit, synth_all_dice=True,
        matteop65=cfg.matteop65, hard_negatives=cfg.hard_negatives, mine_manifest=None,
        real_repeat=cfg.real_repeat, webcam_repeat=cfg.webcam_repeat, camera_light=cfg.camera_light,
        seed=cfg.seed,
    )  # fmt: skip
    _, _, sampler = load_training_data(args)
    model = LiteDetector(pretrained=cfg.pretrained, freeze_early=cfg.freeze_early).to(device)
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trained, lr=cfg.lr, weight_decay=1e-4)

    def loss_of_batch() -> Any:
        x, t = draw_batch(sampler, cfg.batch)
        focal, size_l1, off_l1 = detection_loss(model(x.to(device)), t.to(device))
        return focal + size_l1 + off_l1

    steps, spent = train_budget(
        model=model, opt=opt, out=out, budget=cfg, rngs=[sampler.rng], config=asdict(cfg),
        loss_of_batch=loss_of_batch, label="detector", progress=progress, device=device,
    )  # fmt: skip

    model = model.cpu().eval()
    onnx_path = out / cfg.name
    export_detector(model, onnx_path)
    digest = sha256_of(onnx_path)

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, cfg.threads)
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])

    def heads(tensor: NDArray[np.float32]) -> NDArray[np.float32]:
        return np.asarray(session.run(None, {"image": tensor})[0], np.float32)

    figures = {name: detection_figures(heads, part) for name, part in unseen_sets.items()}
    card: dict[str, Any] = {
        "model": "LiteDetector (EfficientNet-Lite0 ImageNet weights, blocks 1-8 on the frame at half size)",
        "onnx": onnx_path.name,
        "sha256": digest,
        "size_bytes": onnx_path.stat().st_size,
        "seed": cfg.seed,
        "steps": steps,
        "batch": cfg.batch,
        "seconds": round(spent, 1),
        "device": cfg.device,
        "threads": cfg.threads,
        "resumed": cfg.resume,
        "settings": {
            "lr": cfg.lr,
            "minutes": cfg.minutes,
            "synth_limit": cfg.synth_limit,
            "real_repeat": cfg.real_repeat,
            "webcam_repeat": cfg.webcam_repeat,
            "hard_negatives": cfg.hard_negatives,
            "camera_light": cfg.camera_light,
            "pretrained": cfg.pretrained,
            "freeze_early": cfg.freeze_early,
        },
        "data_seen": cfg.data,
        "figures_unseen_detector_alone": figures,
        "written_utc": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
    }
    (out / CARD_JSON).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    (out / CARD_MD).write_text(card_markdown(card), encoding="utf-8")
    return RunResult(steps=steps, seconds=spent, onnx=onnx_path, sha256=digest, card=card)


def card_markdown(card: dict[str, Any]) -> str:
    """The run card as a short markdown page."""
    lines = [
        f"# Run card: {card['onnx']}",
        "",
        f"- {card['model']}",
        f"- sha256 `{card['sha256']}`, {card['size_bytes'] / 1e6:.2f} MB",
        f"- seed {card['seed']}, {card['steps']} steps of {card['batch']} crops in {card['seconds']:.0f} s "
        f"on {card['device']} ({card['threads']} threads){', resumed' if card['resumed'] else ''}",
        f"- settings: {card['settings']}",
        "- data seen (images / labelled dice; each drawn as random crops with augmentation): "
        + ", ".join(f"{k} {v['images']} / {v['dice']}" for k, v in card["data_seen"].items()),
        "",
        "## Figures on data not seen (the detector alone, shipped decoding settings, no count given)",
        "",
        "| set | photos | labelled dice | boxes | found | recall | precision |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, f in card["figures_unseen_detector_alone"].items():
        lines.append(
            f"| {name} | {f['photos']} | {f['labelled_dice']} | {f['boxes']} | {f['found']} | "
            f"{f['recall_pct']} % | {f['precision_pct']} % |"
        )
    return "\n".join(lines) + "\n"
