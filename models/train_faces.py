"""Train the face model on pretrained features (`models.nets_lite.LiteFaceNet`): `throwbox train faces`.

The crops are the reader's own (`vision.pips.crops.crop_die`, through `models.train_pips.CropSampler`: the
detector's box error, a random turn, sometimes low resolution, then hue turns, inversion, grey, blur, noise
and JPEG from `models.augment.photometric`), from the real train splits (nellbyler train, matteop65 train;
never nellbyler test or matteop65 valid) and any synthetic scene folders given.

A run writes into its folder: `checkpoint.pt` (net, optimiser, steps, seconds spent, the sampler's random
state; `--resume` continues it to the same budget), `<name>.onnx` (two outputs: `probs` and `embedding`,
for enrollment), and the run card `card.json` + `card.md` (data seen, seed, steps, and the classifier's
figures on the labelled dice of the sets it did not see). Nothing is registered in the manifest: a candidate
is judged first (docs/history/faces-pretrained.md).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from models.data import LabelledImage
from vision.pips.crops import CROP_PX, crop_die, crops_to_tensor

TOP_TO_DIE = 1.2  # as models.train_pips: matteop65 boxes hold the top face; widened to the whole die
SYNTHETIC = "synthetic"  # the name prefix of a synthetic training set (`throwbox train faces --synth`)
CHECKPOINT = "checkpoint.pt"
CARD_JSON = "card.json"
CARD_MD = "card.md"


@dataclass
class FacesConfig:
    """One training run's settings (all of them go into the run card)."""

    out: Path
    minutes: float = 30.0
    seed: int = 0
    batch: int = 64
    lr: float = 2e-3
    blocks: int = 8
    embed: int = 256
    device: str = "cpu"
    threads: int = 2
    real_repeat: int = 1
    max_steps: int = 0  # 0: until the time budget is spent (tests: a handful of steps)
    checkpoint_every_s: float = 60.0
    resume: bool = False
    pretrained: bool = True
    name: str = "pips_lite_candidate.onnx"
    # Share of each batch drawn from the synthetic sets (the training sets whose name starts with
    # "synthetic"), the rest from the photos; without either kind, every crop from the one there is.
    synth_share: float = 0.5
    styles_out: tuple[str, ...] = ()  # synthetic dice styles held out of training (whole scenes left out)
    data: dict[str, int] = field(default_factory=dict)  # source -> dice seen (filled by the run)


@dataclass(frozen=True)
class RunResult:
    steps: int
    seconds: float
    onnx: Path
    sha256: str
    card: dict[str, Any]


class Budget(Protocol):
    """The settings `train_budget` reads from a run's config."""

    minutes: float
    lr: float
    max_steps: int
    checkpoint_every_s: float
    resume: bool


def train_budget(
    *,
    model: Any,
    opt: Any,
    out: Path,
    budget: Budget,
    rngs: Sequence[np.random.Generator],
    config: dict[str, Any],
    loss_of_batch: Callable[[], Any],
    label: str,
    progress: bool,
    device: Any,
) -> tuple[int, float]:
    """Train `model` for `budget.minutes` of wall clock (or `budget.max_steps` steps): warm-up then cosine
    learning rate (`models.loop.lr_at`), a progress bar, and `out/checkpoint.pt` (net, optimiser, steps,
    seconds spent, the states of `rngs` (the batch samplers') and torch's) every `checkpoint_every_s` and at
    the end; `budget.resume` continues that checkpoint to the same budget. `loss_of_batch` draws a batch
    (from `rngs`) and returns its loss. Returns (steps, seconds)."""
    import torch
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from models.loop import lr_at

    steps, spent = 0, 0.0
    ckpt_path = out / CHECKPOINT
    if budget.resume:
        if not ckpt_path.is_file():
            raise FileNotFoundError(f"--resume: no checkpoint in {out}")
        state = torch.load(ckpt_path, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        steps, spent = int(state["steps"]), float(state["seconds"])
        for rng, rng_state in zip(rngs, state["sampler_rngs"], strict=True):
            rng.bit_generator.state = rng_state
        torch.set_rng_state(state["torch_rng"])

    def save() -> None:
        torch.save(
            {
                "model": model.state_dict(),
                "opt": opt.state_dict(),
                "steps": steps,
                "seconds": spent,
                "sampler_rngs": [rng.bit_generator.state for rng in rngs],
                "torch_rng": torch.get_rng_state(),
                "config": {k: str(v) for k, v in config.items()},
            },
            ckpt_path,
        )

    budget_s = budget.minutes * 60.0
    started = time.monotonic() - spent
    last_save = time.monotonic()
    ema: float | None = None
    with Progress(
        TextColumn(label), BarColumn(), TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
        disable=not progress,
    ) as bar:  # fmt: skip
        task = bar.add_task("train", total=budget_s, completed=int(spent), info="")
        while (spent := time.monotonic() - started) < budget_s and not (
            budget.max_steps and steps >= budget.max_steps
        ):
            lr = lr_at(budget.lr, step=steps, frac=spent / budget_s, warmup_steps=100)
            for group in opt.param_groups:
                group["lr"] = lr
            model.train()
            loss = loss_of_batch()
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            ema = float(loss.detach()) if ema is None else 0.98 * ema + 0.02 * float(loss.detach())
            bar.update(task, completed=min(budget_s, spent), info=f"step {steps} loss {ema:.3f}")
            if time.monotonic() - last_save >= budget.checkpoint_every_s:
                save()
                last_save = time.monotonic()
                if progress and not bar.console.is_terminal:  # a run watched through a log file
                    print(
                        f"{label}: step {steps} loss {ema:.3f} lr {lr:.5f} {spent:.0f} of {budget_s:.0f} s, "
                        f"checkpoint saved",
                        flush=True,
                    )
    spent = time.monotonic() - started
    save()
    return steps, spent


def real_training_items(real: Path, real_repeat: int = 1) -> dict[str, list[LabelledImage]]:
    """The two real train splits (never their test / valid parts), by source name."""
    from models.data import load_nellbyler, load_yolo_folder

    nell = load_nellbyler(real / "d6-topdown-nellbyler", "train")
    webcam = load_yolo_folder(real / "d6-webcam-matteop65" / "train", box_kind="top")
    return {"nellbyler train": nell * max(1, real_repeat), "matteop65 train": webcam}


def real_unseen_items(real: Path) -> dict[str, list[LabelledImage]]:
    """The parts of the real sets no run trains on: the run card's figures."""
    from models.data import load_nellbyler, load_yolo_folder

    return {
        "nellbyler test": load_nellbyler(real / "d6-topdown-nellbyler", "test"),
        "matteop65 valid": load_yolo_folder(real / "d6-webcam-matteop65" / "valid", box_kind="top"),
    }


def labelled_crops(items: Sequence[LabelledImage]) -> tuple[list[NDArray[np.uint8]], NDArray[np.int64]]:
    """Each labelled die cut as the reader cuts it from its box (a top-face box widened to the die)."""
    import cv2

    crops: list[NDArray[np.uint8]] = []
    faces: list[int] = []
    for it in items:
        img = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if img is None:
            continue
        for box, face in zip(it.boxes_xyxy, it.faces, strict=True):
            b = np.asarray(box, np.float64)
            if it.box_kind == "top":
                c, half = (b[:2] + b[2:]) / 2, (b[2:] - b[:2]) / 2 * TOP_TO_DIE
                b = np.concatenate([c - half, c + half])
            crops.append(crop_die(np.asarray(img, np.uint8), tuple(float(v) for v in b)))
            faces.append(int(face))
    return crops, np.array(faces, np.int64)


def accuracy(
    predict: Callable[[NDArray[np.float32]], NDArray[np.float32]],
    crops: list[NDArray[np.uint8]],
    faces: NDArray[np.int64],
) -> dict[str, float | int]:
    """Right face / dice, and right / sure (top probability >= 0.9) of the classifier alone on `crops`."""
    if not crops:
        return {"dice": 0, "right": 0, "accuracy": 0.0, "sure": 0, "sure_wrong": 0}
    probs = np.concatenate([predict(crops_to_tensor(crops[i : i + 256])) for i in range(0, len(crops), 256)])
    guess = probs.argmax(axis=1) + 1
    sure = probs.max(axis=1) >= 0.9
    right = guess == faces
    return {
        "dice": len(crops),
        "right": int(right.sum()),
        "accuracy": round(float(right.mean()), 4),
        "sure": int(sure.sum()),
        "sure_wrong": int((sure & ~right).sum()),
    }


def train_faces(
    cfg: FacesConfig,
    train_sets: dict[str, list[LabelledImage]],
    unseen_sets: dict[str, list[LabelledImage]],
    *,
    progress: bool = True,
) -> RunResult:
    """Train (or resume) a run in `cfg.out`, export its ONNX and write the run card beside it."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    from models.loop import export_onnx
    from models.nets_lite import LiteFaceNet
    from models.train_pips import CropSampler
    from vision.onnx_session import sha256_of

    out = cfg.out
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    device = torch.device(cfg.device)
    if not 0.0 <= cfg.synth_share <= 1.0:
        raise ValueError(f"synth_share is a share of each batch, 0 to 1: got {cfg.synth_share}")
    real_items = [it for name, part in train_sets.items() if not name.startswith(SYNTHETIC) for it in part]
    synth_items = [it for name, part in train_sets.items() if name.startswith(SYNTHETIC) for it in part]
    if not real_items and not synth_items:
        raise ValueError("no training images")
    # Two samplers, so that the share of synthetic crops is the one asked whatever the sizes of the sets
    # (one sampler draws every die as often as another: 40,000 rendered dice would drown 2,438 real ones).
    parts = ((real_items, 1.0 - cfg.synth_share), (synth_items, cfg.synth_share))
    samplers = [(CropSampler(part, cfg.seed + k), share) for k, (part, share) in enumerate(parts) if part]
    if len(samplers) == 1:
        samplers = [(samplers[0][0], 1.0)]
    counts = [round(cfg.batch * share) for _, share in samplers]
    counts[0] = cfg.batch - sum(counts[1:])
    cfg.data = {name: int(sum(len(it.faces) for it in part)) for name, part in train_sets.items()}
    model = LiteFaceNet(blocks=cfg.blocks, embed=cfg.embed, pretrained=cfg.pretrained).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)

    def loss_of_batch() -> Any:
        drawn = [sampler.draw(n) for (sampler, _), n in zip(samplers, counts, strict=True) if n]
        crops = np.concatenate([c for c, _ in drawn])
        faces = np.concatenate([f for _, f in drawn])
        x = torch.from_numpy(crops_to_tensor(list(crops))).to(device)
        y = torch.from_numpy(faces - 1).to(device)
        return F.cross_entropy(model.logits(x), y, label_smoothing=0.05)

    steps, spent = train_budget(
        model=model, opt=opt, out=out, budget=cfg, rngs=[sampler.rng for sampler, _ in samplers],
        config=asdict(cfg), loss_of_batch=loss_of_batch, label="faces", progress=progress, device=device,
    )  # fmt: skip

    model = model.cpu().eval()
    onnx_path = out / cfg.name
    export_onnx(
        model,
        onnx_path,
        example_shape=(2, 3, CROP_PX, CROP_PX),
        input_name="crops",
        output_name="probs",
        dynamic_axes={"crops": {0: "n"}, "probs": {0: "n"}, "embedding": {0: "n"}},
        extra_output_names=["embedding"],
    )
    digest = sha256_of(onnx_path)

    def predict(batch: NDArray[np.float32]) -> NDArray[np.float32]:
        with torch.no_grad():
            probs, _ = model(torch.from_numpy(batch))
        return np.asarray(probs.numpy(), np.float32)

    figures = {name: accuracy(predict, *labelled_crops(part)) for name, part in unseen_sets.items()}
    card: dict[str, Any] = {
        "model": "LiteFaceNet (EfficientNet-Lite0 ImageNet weights, first blocks)",
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
            "blocks": cfg.blocks,
            "embed": cfg.embed,
            "lr": cfg.lr,
            "minutes": cfg.minutes,
            "synth_share": cfg.synth_share if synth_items and real_items else float(bool(synth_items)),
        },
        "data_seen_dice": cfg.data,
        "synthetic_styles_held_out": list(cfg.styles_out),
        "figures_unseen_classifier_alone": figures,
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
        f"- sha256 `{card['sha256']}`, {card['size_bytes'] / 1e6:.2f} MB",
        f"- seed {card['seed']}, {card['steps']} steps of {card['batch']} crops in {card['seconds']:.0f} s "
        f"on {card['device']} ({card['threads']} threads){', resumed' if card['resumed'] else ''}",
        f"- settings: {card['settings']}",
        "- data seen (labelled dice; each drawn with random augmentation): "
        + ", ".join(f"{k} {v}" for k, v in card["data_seen_dice"].items()),
        "- synthetic dice styles held out of training: "
        + (", ".join(card.get("synthetic_styles_held_out", [])) or "none"),
        "",
        "## Figures on data not seen (the classifier alone, on the labelled boxes)",
        "",
        "| set | dice | right | sure (p >= 0.9) | sure and wrong |",
        "|---|---|---|---|---|",
    ]
    for name, f in card["figures_unseen_classifier_alone"].items():
        right = f"{f['right']} ({100 * f['accuracy']:.2f} %)"
        lines.append(f"| {name} | {f['dice']} | {right} | {f['sure']} | {f['sure_wrong']} |")
    return "\n".join(lines) + "\n"
