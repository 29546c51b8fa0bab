"""Train the die-state classifier (flat, cocked, wedged, on a die, under a die, off the table) to ONNX.

    .venv/bin/python -m models.train_die_state --synth /work/data/judge/train-s600 --minutes 12

Data seen: synthetic scenes made for it with seeds nobody evaluates on (600 by default: `throwbox synth
/work/data/judge/train-s600 --scenes 2000 --seed 600 --mix normal=0.25,cluster=0.05,cocked=0.2,
wedged=0.15,stacked=0.2,off_table=0.15`). Every die that is not flat gives two crops and every flat die
one, each cut with `vision.judge.state.crop_context` around a box jittered like the detector's, the
reference size jittered too; quarter turns, flips and colour changes on the fly. A tenth of the scenes is
held back and scored at the end (per-class recall printed and written to the model card's metrics file).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.format import SceneTruth, read_scene
from models.augment import photometric
from models.loop import train_for
from vision.judge.state import STATE_CROP_PX, STATE_LABELS, crop_context, reference_die_px
from vision.judge.truth import die_states_of
from vision.onnx_session import MANIFEST_PATH

MODEL_DIR = Path(__file__).resolve().parent / "judge_diestate"
MIN_VISIBLE = 0.25  # dice hidden more than this are not asked of the classifier (the detector misses them)
SPLIT_SEED = 0  # which scenes and photos are held back: fixed, see main()
FLAT_PER_SCENE = 10  # every flat die: flat dice must be called flat with confidence (10 a roll)


def jittered_context_crop(
    img: NDArray[np.uint8], box_xyxy: tuple[float, ...], ref_px: float, rng: np.random.Generator
) -> NDArray[np.uint8]:
    """`crop_context` around a box moved and resized like the detector's (6 %), the reference size too."""
    x0, y0, x1, y1 = box_xyxy
    side = max(x1 - x0, y1 - y0)
    c = np.array([(x0 + x1) / 2, (y0 + y1) / 2]) + rng.normal(0, 0.06, size=2) * side
    hw = np.array([x1 - x0, y1 - y0]) / 2 * np.exp(rng.normal(0, 0.06, size=2))
    box = (c[0] - hw[0], c[1] - hw[1], c[0] + hw[0], c[1] + hw[1])
    return np.asarray(crop_context(img, box, ref_px=ref_px * float(np.exp(rng.normal(0, 0.06)))), np.uint8)


def crops_of_scene(
    root: Path, scene: SceneTruth, rng: np.random.Generator
) -> tuple[list[NDArray[np.uint8]], list[int], list[float]]:
    """Jittered context crops of one scene's dice with their state labels and tilts."""
    raw = cv2.imread(str(root / scene.image), cv2.IMREAD_COLOR)
    if raw is None:
        raise SystemExit(f"unreadable training image {root / scene.image}")
    img: NDArray[np.uint8] = np.asarray(raw, np.uint8)
    states = die_states_of(scene)
    seen = [i for i, d in enumerate(scene.dice) if d.in_image and d.visible_fraction >= MIN_VISIBLE]
    if not seen:
        return [], [], []
    ref = reference_die_px([scene.dice[i].box_xyxy for i in seen])
    flats = [i for i in seen if states[i] == 0]
    picked = [i for i in seen if states[i] != 0] * 2
    picked += [int(v) for v in rng.choice(flats, size=min(FLAT_PER_SCENE, len(flats)), replace=False)]
    crops, labels, tilts = [], [], []
    for i in picked:
        d = scene.dice[i]
        crops.append(jittered_context_crop(img, d.box_xyxy, ref, rng))
        labels.append(states[i])
        tilts.append(float(d.tilt_deg))
    return crops, labels, tilts


def load_crops(
    root: Path, scenes: list[SceneTruth], seed: int
) -> tuple[NDArray[np.uint8], NDArray[np.int64], NDArray[np.float32]]:
    """Crops (N, 64, 64, 3), labels (N,), tilts (N,) of the given scenes."""
    rng = np.random.default_rng(seed)
    xs: list[NDArray[np.uint8]] = []
    ys: list[int] = []
    ts: list[float] = []
    for s in scenes:
        c, y, t = crops_of_scene(root, s, rng)
        xs += c
        ys += y
        ts += t
    return (
        np.stack(xs) if xs else np.zeros((0, STATE_CROP_PX, STATE_CROP_PX, 3), np.uint8),
        np.asarray(ys, np.int64),
        np.asarray(ts, np.float32),
    )


def real_flat_crops(root: Path, seed: int, *, copies: int = 2) -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """Context crops of the real nellbyler train-split dice, all labelled flat: (train, held back).

    The photos are top-down shots of dice at rest on a tray, and the set's labels read every die's top
    face, so every labelled die is taken as lying flat. A tenth of the photos is held back (by `seed`) to
    measure how often real flat dice are called flat (the same photos whatever `seed`). Never the test split.
    """
    from models.data import load_nellbyler

    rng = np.random.default_rng(seed)
    items = load_nellbyler(root, "train")
    split = np.random.default_rng(SPLIT_SEED).permutation(len(items))
    held = set(split[: max(1, len(items) // 10)].tolist())
    train: list[NDArray[np.uint8]] = []
    back: list[NDArray[np.uint8]] = []
    for k, it in enumerate(items):
        raw = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if raw is None or len(it.boxes_xyxy) == 0:
            continue
        img: NDArray[np.uint8] = np.asarray(raw, np.uint8)
        ref = reference_die_px(it.boxes_xyxy.tolist())
        for b in it.boxes_xyxy:
            for _ in range(1 if k in held else copies):
                crop = jittered_context_crop(img, tuple(float(v) for v in b), ref, rng)
                (back if k in held else train).append(crop)
    empty = np.zeros((0, STATE_CROP_PX, STATE_CROP_PX, 3), np.uint8)
    return (np.stack(train) if train else empty), (np.stack(back) if back else empty)


def augment(crop: NDArray[np.uint8], rng: np.random.Generator) -> NDArray[np.uint8]:
    """Quarter turn, flip and colour change: a die's state does not depend on any of them."""
    out = np.rot90(crop, int(rng.integers(4)))
    if rng.random() < 0.5:
        out = out[:, ::-1]
    out = np.ascontiguousarray(out)
    if rng.random() < 0.7:
        out = photometric(out, rng, strong=False)
    return np.asarray(out, np.uint8)


def main() -> None:
    import torch
    import torch.nn.functional as F  # noqa: N812

    from models.export import dated_name, register
    from models.nets_die_state import DieStateNet, ExportWrapper
    from vision.judge.state import crops_to_tensor

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--synth", type=Path, required=True, help="Synthetic scenes to train on.")
    parser.add_argument("--minutes", type=float, default=12.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared).")
    parser.add_argument("--out", type=Path, default=MODEL_DIR)
    parser.add_argument("--init", type=Path, default=None, help="Start from these weights (a last.pt).")
    parser.add_argument(
        "--manifest", type=Path, default=MANIFEST_PATH, help="Manifest to record the model in."
    )
    parser.add_argument(
        "--real-flat",
        type=Path,
        default=None,
        help="nellbyler folder: its train-split dice join the training data as flat (real photos)",
    )
    parser.add_argument(
        "--balance",
        type=float,
        default=1.0,
        help="draw class k with frequency ~ count_k ** BALANCE (1: as found, 0.5: rare states oftener)",
    )
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    paths = sorted((args.synth / "labels").glob("*.json"))
    if not paths:
        raise SystemExit(f"{args.synth}: no labels/*.json")
    scenes = [read_scene(p) for p in paths]
    # The held-back tenth does not depend on --seed, so a run continuing another (--init) never trains on
    # the scenes the earlier run held back. (Runs before 2026-11-29 20:20 split by --seed.)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(scenes))
    n_val = max(1, len(scenes) // 10)
    val_scenes = [scenes[i] for i in order[:n_val]]
    train_scenes = [scenes[i] for i in order[n_val:]]
    t0 = time.monotonic()
    x_tr, y_tr, t_tr = load_crops(args.synth, train_scenes, args.seed)
    x_va, y_va, _ = load_crops(args.synth, val_scenes, args.seed + 1)
    x_real_va = np.zeros((0, STATE_CROP_PX, STATE_CROP_PX, 3), np.uint8)
    if args.real_flat is not None:
        x_real, x_real_va = real_flat_crops(args.real_flat, args.seed)
        x_tr = np.concatenate([x_tr, x_real])
        y_tr = np.concatenate([y_tr, np.zeros(len(x_real), np.int64)])
        t_tr = np.concatenate([t_tr, np.zeros(len(x_real), np.float32)])
        print(f"{len(x_real)} real flat crops added, {len(x_real_va)} held back")
    counts = np.bincount(y_tr, minlength=len(STATE_LABELS))
    print(
        f"{len(x_tr)} training crops from {len(train_scenes)} scenes, {len(x_va)} held back "
        f"({time.monotonic() - t0:.0f} s); per class {dict(zip(STATE_LABELS, counts.tolist(), strict=True))}"
    )
    # Mild class weights: the rare states still count, but the flat prior (most dice) is kept.
    weight = torch.tensor((counts.max() / np.maximum(counts, 1)) ** 0.25, dtype=torch.float32)
    # Sampling: each crop is drawn with probability ~ count_k ** (BALANCE - 1) for its class k.
    draw = (np.maximum(counts, 1).astype(np.float64) ** (args.balance - 1.0))[y_tr]
    draw /= draw.sum()
    if args.balance < 1.0:
        weight = torch.ones(len(STATE_LABELS))  # the sampling already lifts the rare states

    model = DieStateNet()
    if args.init is not None:
        model.load_state_dict(torch.load(args.init, weights_only=True))
        print(f"starting from {args.init}")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    args.out.mkdir(parents=True, exist_ok=True)

    def step_loss() -> tuple[torch.Tensor, str]:
        idx = rng.choice(len(x_tr), size=args.batch, p=draw)
        x = torch.from_numpy(crops_to_tensor([augment(x_tr[i], rng) for i in idx]))
        y = torch.from_numpy(y_tr[idx])
        tilt = torch.from_numpy(t_tr[idx] / 90.0)
        out = model(x)
        loss = F.cross_entropy(out[:, :6], y, weight=weight)
        return loss + 2.0 * F.l1_loss(torch.sigmoid(out[:, 6]), tilt), ""

    run = train_for(
        model=model, opt=opt, base_lr=args.lr, minutes=args.minutes, label="die state", step_loss=step_loss
    )
    torch.save(model.state_dict(), args.out / "last.pt")
    model.eval()
    wrapper = ExportWrapper(model)
    with torch.no_grad():
        probs = np.concatenate(
            [
                wrapper(torch.from_numpy(crops_to_tensor(list(x_va[i : i + 256])))).numpy()
                for i in range(0, len(x_va), 256)
            ]
        )
    pred = probs[:, :6].argmax(axis=1)
    recall = {
        STATE_LABELS[k]: round(100.0 * float((pred[y_va == k] == k).mean()), 2) if (y_va == k).any() else None
        for k in range(len(STATE_LABELS))
    }
    support = dict(zip(STATE_LABELS, np.bincount(y_va, minlength=6).tolist(), strict=True))
    print(f"held-back crops: recall per class {recall}, support {support}")
    real_flat_recall = None
    if len(x_real_va):
        with torch.no_grad():
            real_probs = wrapper(torch.from_numpy(crops_to_tensor(list(x_real_va)))).numpy()
        real_flat_recall = round(100.0 * float((real_probs[:, :6].argmax(axis=1) == 0).mean()), 2)
        print(f"held-back real flat dice called flat: {real_flat_recall} % of {len(x_real_va)}")
    onnx_path = args.out / dated_name("judge", "diestate")
    torch.onnx.export(
        wrapper,
        (torch.zeros(2, 3, STATE_CROP_PX, STATE_CROP_PX),),
        str(onnx_path),
        dynamo=False,
        opset_version=17,
        input_names=["crops"],
        output_names=["state"],
        dynamic_axes={"crops": {0: "n"}, "state": {0: "n"}},
    )
    entry = register(
        name="die_state",
        onnx_path=onnx_path,
        input_size_hw=(STATE_CROP_PX, STATE_CROP_PX),
        labels=STATE_LABELS,
        manifest_path=args.manifest,
    )
    minutes = (time.monotonic() - run.started_s) / 60
    metrics = {
        "data": str(args.synth),
        "train_scenes": len(train_scenes),
        "train_crops": len(x_tr),
        "held_back_scenes": len(val_scenes),
        "held_back_recall_pct": recall,
        "held_back_support": support,
        "real_flat_held_back": {"crops": len(x_real_va), "called_flat_pct": real_flat_recall},
        "balance": args.balance,
        "steps": run.steps,
        "batch": args.batch,
        "train_minutes": round(minutes, 1),
        "sha256": entry["sha256"],
    }
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    print(f"done: {run.steps} steps x {args.batch} in {minutes:.1f} min -> {onnx_path} {entry['sha256']}")


if __name__ == "__main__":
    main()
