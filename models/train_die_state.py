"""Train the die-state classifier (flat, cocked, wedged, on a die, under, off the table, no die) to ONNX.

    .venv/bin/python -m models.train_die_state --synth data/judge/train-s600 --minutes 12

Data seen: synthetic scenes made for it with seeds nobody evaluates on (600 by default: `throwbox lab synth
data/judge/train-s600 --scenes 2000 --seed 600 --mix normal=0.25,cluster=0.05,cocked=0.2,
wedged=0.15,stacked=0.2,off_table=0.15`). Every die that is not flat gives two crops and every flat die
one, each cut with `vision.state.model.crop_context` around a box jittered like the detector's, the
reference size jittered too; quarter turns, flips and colour changes on the fly. A tenth of the scenes is
held back and scored at the end (per-class recall printed and written to the model card's metrics file).

`--not-dice` trains the seventh state, `no_die` (the net always has it; without the flag it sees no
example of it): the shipped detector is run over the same scenes (and the real photos of `--real-flat`)
and every detection, or heatmap peak the judge looks at, that lies on no die of the truth becomes a
`no_die` crop (chip stacks, chip edges, marks): the judge can then leave such a
detection out instead of leaving the roll to a person.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.format import SceneTruth, read_scene
from models.augment import photometric
from models.die_state_truth import die_states_of
from models.loop import CALIBRATION_CROPS, export_onnx, require_torch, train_for
from vision.onnx_session import MANIFEST_PATH
from vision.state.model import FLAT, NO_DIE, STATE_CROP_PX, STATE_LABELS, crop_context, reference_die_px

MODEL_DIR = Path(__file__).resolve().parent / "judge_diestate"
MIN_VISIBLE = 0.25  # dice hidden more than this are not asked of the classifier (the detector misses them)
SPLIT_SEED = 0  # which scenes and photos are held back: fixed, see main()
FLAT_PER_SCENE = 10  # every flat die: flat dice must be called flat with confidence (10 a roll)
NOT_DIE_COPIES = 2  # jittered crops per detection on no die
NOT_DIE_MAX_IOU = 0.2  # a detection overlapping a true die by this much (or centred in it) may be that die


def stack_crops(crops: list[NDArray[np.uint8]]) -> NDArray[np.uint8]:
    """(N, 64, 64, 3) of a list of crops; (0, 64, 64, 3) for none."""
    return np.stack(crops) if crops else np.zeros((0, STATE_CROP_PX, STATE_CROP_PX, 3), np.uint8)


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
        stack_crops(xs),
        np.asarray(ys, np.int64),
        np.asarray(ts, np.float32),
    )


def on_no_die(box: tuple[float, ...], truth_boxes: Sequence[tuple[float, ...]]) -> bool:
    """True when a detected box lies on no true die: IoU under `NOT_DIE_MAX_IOU` and its centre in none."""
    from vision.detect.centernet import box_iou

    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    a = np.asarray(box, np.float32)
    for t in truth_boxes:
        if t[0] <= cx <= t[2] and t[1] <= cy <= t[3]:
            return False
        if box_iou(a, np.asarray(t, np.float32)) >= NOT_DIE_MAX_IOU:
            return False
    return True


class NotDiceMiner:
    """The shipped detector's detections (and weak peaks the judge looks at) that lie on no true die."""

    def __init__(self) -> None:
        from vision.detect.detector import DieDetector
        from vision.judge.config import JudgeConfig
        from vision.onnx_session import load_model

        self.detector = DieDetector(load_model("detector", threads=1))
        self.weak = min(JudgeConfig().weak_peak_score, self.detector.config.score_threshold)

    def boxes(
        self, img: NDArray[np.uint8], truth_boxes: Sequence[tuple[float, ...]]
    ) -> list[tuple[float, ...]]:
        """Detections and weak peaks of `img` on no die of `truth_boxes` (all dice in the image)."""
        found, weak = self.detector.detect_with_weak(img, weak_score=self.weak)
        return [c.box_xyxy for c in (*found, *weak) if on_no_die(c.box_xyxy, truth_boxes)]


def not_die_crops(root: Path, scenes: list[SceneTruth], miner: NotDiceMiner, seed: int) -> NDArray[np.uint8]:
    """`NOT_DIE_COPIES` jittered context crops of each detection on no die in the scenes."""
    rng = np.random.default_rng(seed)
    out: list[NDArray[np.uint8]] = []
    for scene in scenes:
        raw = cv2.imread(str(root / scene.image), cv2.IMREAD_COLOR)
        if raw is None:
            raise SystemExit(f"unreadable training image {root / scene.image}")
        img: NDArray[np.uint8] = np.asarray(raw, np.uint8)
        truth = [d.box_xyxy for d in scene.dice if d.in_image]
        seen = [d.box_xyxy for d in scene.dice if d.in_image and d.visible_fraction >= MIN_VISIBLE]
        if not seen:
            continue
        ref = reference_die_px(seen)
        for box in miner.boxes(img, truth):
            out += [jittered_context_crop(img, box, ref, rng) for _ in range(NOT_DIE_COPIES)]
    return stack_crops(out)


def real_flat_crops(
    root: Path, seed: int, *, copies: int = 2, miner: NotDiceMiner | None = None
) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    """Context crops of the real nellbyler train-split dice, all labelled flat: (train, held back), and
    with a `miner`, crops of the detections on no die in the same photos: (train, held back).

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
    none_train: list[NDArray[np.uint8]] = []
    none_back: list[NDArray[np.uint8]] = []
    for k, it in enumerate(items):
        raw = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if raw is None or len(it.boxes_xyxy) == 0:
            continue
        img: NDArray[np.uint8] = np.asarray(raw, np.uint8)
        ref = reference_die_px(it.boxes_xyxy.tolist())
        truth = [tuple(float(v) for v in b) for b in it.boxes_xyxy]
        for b in truth:
            for _ in range(1 if k in held else copies):
                crop = jittered_context_crop(img, b, ref, rng)
                (back if k in held else train).append(crop)
        for b in miner.boxes(img, truth) if miner is not None else []:
            for _ in range(1 if k in held else NOT_DIE_COPIES):
                crop = jittered_context_crop(img, b, ref, rng)
                (none_back if k in held else none_train).append(crop)

    return stack_crops(train), stack_crops(back), stack_crops(none_train), stack_crops(none_back)


REAL_TOP_HELD_BACK = 1 / 3  # of a top-face set's photos (matteop65 train): kept for tuning, never trained on


def real_top_crops(
    folder: Path, seed: int, miner: NotDiceMiner
) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8], list[str]]:
    """Real photos labelled on the top face only (matteop65 train/): the detector's boxes as the reader sees
    them, those holding a labelled face's centre as flat dice and the rest as no die.

    Returns (flat train, no-die train, flat held back, no-die held back, held-back photo names): a fixed
    third of the photos (`REAL_TOP_HELD_BACK`, whatever `seed`) is held back to tune the judge on.
    """
    from models.data import held_back, load_yolo_folder

    rng = np.random.default_rng(seed)
    items = load_yolo_folder(folder, box_kind="top")
    held = held_back(len(items), REAL_TOP_HELD_BACK)  # the third `train_pips --hold-back` keeps out too
    parts: list[list[NDArray[np.uint8]]] = [[], [], [], []]
    for k, it in enumerate(items):
        raw = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if raw is None:
            continue
        img: NDArray[np.uint8] = np.asarray(raw, np.uint8)
        found, _ = miner.detector.detect_with_weak(img, weak_score=miner.weak)
        if not found:
            continue
        ref = reference_die_px([c.box_xyxy for c in found])
        centres = [((b[0] + b[2]) / 2, (b[1] + b[3]) / 2) for b in it.boxes_xyxy.tolist()]
        for c in found:
            x0, y0, x1, y1 = c.box_xyxy
            on_die = any(x0 <= cx <= x1 and y0 <= cy <= y1 for cx, cy in centres)
            slot = (0 if on_die else 1) + (2 if k in held else 0)
            for _ in range(1 if k in held else 2):
                parts[slot].append(jittered_context_crop(img, c.box_xyxy, ref, rng))
    names = sorted(items[k].path.name for k in held)

    return stack_crops(parts[0]), stack_crops(parts[1]), stack_crops(parts[2]), stack_crops(parts[3]), names


def augment(crop: NDArray[np.uint8], rng: np.random.Generator) -> NDArray[np.uint8]:
    """Quarter turn, flip and colour change: a die's state does not depend on any of them."""
    out = np.rot90(crop, int(rng.integers(4)))
    if rng.random() < 0.5:
        out = out[:, ::-1]
    out = np.ascontiguousarray(out)
    if rng.random() < 0.7:
        out = photometric(out, rng, strong=False)
    return np.asarray(out, np.uint8)


@dataclass
class StateData:
    """The die-state model's crops: training (with tilts) and held back, and the held-back real photos."""

    x_tr: NDArray[np.uint8]
    y_tr: NDArray[np.int64]
    t_tr: NDArray[np.float32]
    x_va: NDArray[np.uint8]
    y_va: NDArray[np.int64]
    train_scenes: int
    val_scenes: int
    real_va: NDArray[np.uint8]  # held-back real nellbyler dice (flat)
    real_none_va: NDArray[np.uint8]  # held-back detections on no die in those photos
    top_va: NDArray[np.uint8]  # held-back dice of the top-face set
    top_none_va: NDArray[np.uint8]
    top_held: list[str] = field(default_factory=list)
    real_top: Path | None = None

    def counts(self) -> NDArray[np.int64]:
        return np.bincount(self.y_tr, minlength=len(STATE_LABELS)).astype(np.int64)


def state_data(
    synth: Sequence[Path],
    seed: int,
    *,
    real_flat: Path | None = None,
    real_top: Path | None = None,
    not_dice: bool = False,
    log: Callable[[str], None] = print,
) -> StateData:
    """Crops and labels of the synthetic folders (each holds back its own fixed tenth, whatever `seed`) and
    of the real photos asked for; `not_dice` mines the shipped detector's detections on no die."""
    # The held-back tenth of each folder does not depend on `seed`, so a run continuing another (--init)
    # never trains on the scenes the earlier run held back. (Runs before 2026-11-29 20:20 split by --seed.)
    splits: list[tuple[Path, list[SceneTruth], list[SceneTruth]]] = []
    for root in synth:
        paths = sorted((root / "labels").glob("*.json"))
        if not paths:
            raise SystemExit(f"{root}: no labels/*.json")
        scenes = [read_scene(p) for p in paths]
        order = np.random.default_rng(SPLIT_SEED).permutation(len(scenes))
        n_val = max(1, len(scenes) // 10)
        splits.append((root, [scenes[i] for i in order[n_val:]], [scenes[i] for i in order[:n_val]]))
    parts = [load_crops(root, tr, seed) for root, tr, _ in splits]
    x_tr = np.concatenate([x for x, _, _ in parts])
    y_tr = np.concatenate([y for _, y, _ in parts])
    t_tr = np.concatenate([t for _, _, t in parts])
    parts = [load_crops(root, va, seed + 1) for root, _, va in splits]
    x_va = np.concatenate([x for x, _, _ in parts])
    y_va = np.concatenate([y for _, y, _ in parts])
    empty = stack_crops([])
    x_real_va, x_real_none_va = empty, empty
    miner = NotDiceMiner() if not_dice else None

    def add(x: NDArray[np.uint8], label: int, to_train: bool = True) -> None:
        nonlocal x_tr, y_tr, t_tr, x_va, y_va
        if to_train:
            x_tr = np.concatenate([x_tr, x])
            y_tr = np.concatenate([y_tr, np.full(len(x), label, np.int64)])
            t_tr = np.concatenate([t_tr, np.zeros(len(x), np.float32)])
        else:
            x_va = np.concatenate([x_va, x])
            y_va = np.concatenate([y_va, np.full(len(x), label, np.int64)])

    if miner is not None:
        for root, tr, va in splits:
            add(not_die_crops(root, tr, miner, seed + 2), NO_DIE)
            add(not_die_crops(root, va, miner, seed + 3), NO_DIE, to_train=False)
        n_tr, n_va = int((y_tr == NO_DIE).sum()), int((y_va == NO_DIE).sum())
        log(f"{n_tr} crops of detections on no die, {n_va} held back")
    x_top_va, x_top_none_va = empty, empty
    top_held: list[str] = []
    if real_top is not None:
        if miner is None:
            raise SystemExit("--real-top needs --not-dice (the detector's boxes on the photos)")
        x_top, x_top_none, x_top_va, x_top_none_va, top_held = real_top_crops(real_top, seed, miner)
        add(x_top, FLAT)
        add(x_top_none, NO_DIE)
        log(
            f"{real_top}: {len(x_top)} flat and {len(x_top_none)} no-die crops added; held back "
            f"{len(top_held)} photos ({len(x_top_va)} dice, {len(x_top_none_va)} detections on no die)"
        )
    if real_flat is not None:
        x_real, x_real_va, x_real_none, x_real_none_va = real_flat_crops(real_flat, seed, miner=miner)
        add(x_real, FLAT)
        add(x_real_none, NO_DIE)
        log(
            f"{len(x_real)} real flat crops added, {len(x_real_va)} held back; real detections on no die "
            f"{len(x_real_none)}, {len(x_real_none_va)} held back"
        )
    return StateData(
        x_tr=x_tr, y_tr=y_tr, t_tr=t_tr, x_va=x_va, y_va=y_va,
        train_scenes=sum(len(tr) for _, tr, _ in splits), val_scenes=sum(len(va) for _, _, va in splits),
        real_va=x_real_va, real_none_va=x_real_none_va, top_va=x_top_va, top_none_va=x_top_none_va,
        top_held=top_held, real_top=real_top,
    )  # fmt: skip


def sampling(counts: NDArray[np.int64], balance: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(class weights of the loss, draw weights per class): mild weights `(max / count) ** 0.25` (the flat
    prior kept) when `balance` is 1; with `balance` < 1 class k is drawn ~ count_k ** balance, weights 1."""
    weight = (counts.max() / np.maximum(counts, 1)) ** 0.25
    if balance < 1.0:
        weight = np.ones(len(counts))  # the sampling already lifts the rare states
    return weight.astype(np.float64), np.maximum(counts, 1).astype(np.float64) ** (balance - 1.0)


def held_back_figures(
    predict: Callable[[NDArray[np.float32]], NDArray[np.float32]], data: StateData
) -> tuple[dict[str, float | None], dict[str, int], dict[str, object], dict[str, object]]:
    """(recall per class, support, real nellbyler figures, top-face set figures) on the held-back crops;
    `predict` maps (N, 3, 64, 64) crops to the export's (N, 8) output."""
    from vision.state.model import crops_to_tensor

    def run(xs: NDArray[np.uint8]) -> NDArray[np.float32]:
        outs = [predict(crops_to_tensor(list(xs[i : i + 256]))) for i in range(0, len(xs), 256)]
        return np.concatenate(outs) if outs else np.zeros((0, len(STATE_LABELS) + 1), np.float32)

    pred = run(data.x_va)[:, : len(STATE_LABELS)].argmax(axis=1)
    y_va = data.y_va
    recall = {
        STATE_LABELS[k]: round(100.0 * float((pred[y_va == k] == k).mean()), 2) if (y_va == k).any() else None
        for k in range(len(STATE_LABELS))
    }
    support = dict(zip(STATE_LABELS, np.bincount(y_va, minlength=len(STATE_LABELS)).tolist(), strict=True))
    real: dict[str, object] = {"crops": len(data.real_va), "called_flat_pct": None}
    top: dict[str, object] = {"folder": None if data.real_top is None else str(data.real_top)}
    for name, xs in (
        ("dice", data.real_va),
        ("on_no_die", data.real_none_va),
        ("top_dice", data.top_va),
        ("top_on_no_die", data.top_none_va),
    ):
        if not len(xs):
            continue
        real_probs = run(xs)
        called = real_probs[:, : len(STATE_LABELS)].argmax(axis=1)
        if name == "dice":
            real["called_flat_pct"] = round(100.0 * float((called == FLAT).mean()), 2)
            real["called_no_die_pct"] = round(100.0 * float((called == NO_DIE).mean()), 2)
            real["p_no_die_max"] = round(float(real_probs[:, NO_DIE].max()), 4)
        elif name == "on_no_die":
            real["on_no_die_crops"] = len(xs)
            real["on_no_die_called_no_die_pct"] = round(100.0 * float((called == NO_DIE).mean()), 2)
        elif name == "top_dice":
            top["dice"] = len(xs)
            top["dice_called_no_die_pct"] = round(100.0 * float((called == NO_DIE).mean()), 2)
            top["dice_p_no_die_at_least_0.7"] = int((real_probs[:, NO_DIE] >= 0.7).sum())
        else:
            top["on_no_die"] = len(xs)
            top["on_no_die_called_no_die_pct"] = round(100.0 * float((called == NO_DIE).mean()), 2)
    return recall, support, real, top


def export_state(wrapper: Any, path: Path) -> None:
    """The reader's die-state ONNX contract: `crops` (N, 3, 64, 64) -> `state` (N, 8) (an `ExportWrapper`)."""
    export_onnx(
        wrapper,
        path,
        example_shape=(2, 3, STATE_CROP_PX, STATE_CROP_PX),
        input_name="crops",
        output_name="state",
        dynamic_axes={"crops": {0: "n"}, "state": {0: "n"}},
    )


def _parser() -> argparse.ArgumentParser:
    """The training's options (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--synth",
        type=Path,
        action="append",
        required=True,
        help="Synthetic scenes to train on (repeat for more folders; each holds back its own tenth).",
    )
    parser.add_argument("--minutes", type=float, default=12.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared).")
    parser.add_argument("--out", type=Path, default=MODEL_DIR)
    parser.add_argument(
        "--init",
        type=Path,
        default=None,
        help="Start from these weights: a last.pt, or a committed .onnx export (its batch norms rebuilt from "
        f"{CALIBRATION_CROPS} training crops, models/from_onnx.py).",
    )
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
        "--real-top",
        type=Path,
        default=None,
        help="a folder of real photos labelled on the top face (matteop65 train/): the detector's boxes on "
        "them join as flat dice, the rest as no die (needs --not-dice); a fixed third is held back",
    )
    parser.add_argument(
        "--not-dice",
        action="store_true",
        help="add the no_die state: the shipped detector's detections on no die (scenes and real photos)",
    )
    parser.add_argument(
        "--balance",
        type=float,
        default=1.0,
        help="draw class k with frequency ~ count_k ** BALANCE (1: as found, 0.5: rare states oftener)",
    )
    return parser


def main() -> None:
    require_torch()
    import torch
    import torch.nn.functional as F  # noqa: N812

    from models.export import dated_name, register
    from models.nets_die_state import DieStateNet, ExportWrapper, load_widened
    from vision.state.model import crops_to_tensor

    args = _parser().parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.monotonic()
    data = state_data(
        args.synth, args.seed, real_flat=args.real_flat, real_top=args.real_top, not_dice=args.not_dice
    )
    x_tr, y_tr, t_tr = data.x_tr, data.y_tr, data.t_tr
    counts = data.counts()
    print(
        f"{len(x_tr)} training crops from {data.train_scenes} scenes, {len(data.x_va)} held back "
        f"({time.monotonic() - t0:.0f} s); per class {dict(zip(STATE_LABELS, counts.tolist(), strict=True))}"
    )
    class_weight, class_draw = sampling(counts, args.balance)
    weight = torch.tensor(class_weight, dtype=torch.float32)
    draw = class_draw[y_tr]
    draw /= draw.sum()

    model = DieStateNet(states=len(STATE_LABELS))
    if args.init is not None and args.init.suffix == ".onnx":
        from models.from_onnx import init_from_onnx

        pick = rng.choice(len(x_tr), size=CALIBRATION_CROPS, p=draw)
        calibration = torch.from_numpy(crops_to_tensor([augment(x_tr[i], rng) for i in pick]))
        init_from_onnx(ExportWrapper(model), args.init, calibration)
        print(f"starting from {args.init} (batch norms from {CALIBRATION_CROPS} training crops)")
    elif args.init is not None:
        load_widened(model, torch.load(args.init, weights_only=True))
        print(f"starting from {args.init}")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    args.out.mkdir(parents=True, exist_ok=True)

    def step_loss() -> tuple[torch.Tensor, str]:
        idx = rng.choice(len(x_tr), size=args.batch, p=draw)
        x = torch.from_numpy(crops_to_tensor([augment(x_tr[i], rng) for i in idx]))
        y = torch.from_numpy(y_tr[idx])
        tilt = torch.from_numpy(t_tr[idx] / 90.0)
        out = model(x)
        k = len(STATE_LABELS)
        loss = F.cross_entropy(out[:, :k], y, weight=weight)
        return loss + 2.0 * F.l1_loss(torch.sigmoid(out[:, k]), tilt), ""

    run = train_for(
        model=model, opt=opt, base_lr=args.lr, minutes=args.minutes, label="die state", step_loss=step_loss
    )
    torch.save(model.state_dict(), args.out / "last.pt")
    model.eval()
    wrapper = ExportWrapper(model)

    def predict(batch: NDArray[np.float32]) -> NDArray[np.float32]:
        with torch.no_grad():
            return np.asarray(wrapper(torch.from_numpy(batch)).numpy(), np.float32)

    recall, support, real, top = held_back_figures(predict, data)
    print(f"held-back crops: recall per class {recall}, support {support}")
    print(f"held-back real photos: {real}; top-face set: {top}")
    onnx_path = args.out / dated_name("judge", "diestate")
    export_state(wrapper, onnx_path)
    entry = register(
        name="die_state",
        onnx_path=onnx_path,
        input_size_hw=(STATE_CROP_PX, STATE_CROP_PX),
        labels=STATE_LABELS,
        manifest_path=args.manifest,
    )
    minutes = (time.monotonic() - run.started_s) / 60
    metrics = {
        "data": [str(root) for root in args.synth],
        "train_scenes": data.train_scenes,
        "train_crops": len(x_tr),
        "held_back_scenes": data.val_scenes,
        "held_back_recall_pct": recall,
        "held_back_support": support,
        "real_flat_held_back": real,
        "real_top_held_back": top | {"photos": data.top_held},
        "not_dice": bool(args.not_dice),
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
