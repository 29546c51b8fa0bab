"""Train the top-face classifier on die crops cut exactly as the reader cuts them, export it to ONNX.

    .venv/bin/python -m models.train_pips --minutes 10 [--synth data/synth/train-v1]

Data seen: dice of the nellbyler train split (never its test split), the matteop65 train folder (never
valid/; its boxes hold the top face only, so they are widened to the whole die), and optionally synthetic
train scenes. Each sample is `vision.pips.crops.crop_die` on a jittered box (the detector's error), turned by
a random angle, with strong colour augmentation (hue rotation, inversion, grey, blur, noise, JPEG).
`--plane-synth DIR`: synthetic scenes whose dice under a camera leaning at least the reader's bar
(`RECTIFY_MIN_TILT_DEG`) are cut as the reader cuts them with a calibration, from the die-top plane
(`vision.pips.crops.crops_die_top`, the felt position from the die's true box, jittered); their other
dice as boxes.
`--shake P`: a share P of the crops blurred as the generator's shaken camera blurs a frame, scaled to the
die's side in the crop (`models.augment.camera_shake`; face stage 19).
`--cocked-share S`: a share S of the crops drawn from the dice the generator's truth calls cocked on chips
(the rest from every die), for the face model of the dice the die-state model calls cocked (face stage 20).
Dice cut from the die-top plane (`--plane-synth`) are never drawn so.
`--leave-out SET` (nellbyler or matteop65; repeat): that real train set is not trained on at all, so the
whole of it can be read as a set the model has never seen (issue 55's leave-one-out away sets;
`real_train_items`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera
from models.augment import camera_shake, photometric
from models.data import SHARED_REAL, LabelledImage, load_nellbyler, load_synth, load_yolo_folder
from models.loop import CALIBRATION_CROPS, Prefetch, export_onnx, require_torch, train_for
from vision.pips.classifier import RECTIFY_MIN_TILT_DEG, RECTIFY_SPAN
from vision.pips.crops import CROP_PAD, CROP_PX, crop_die, crops_die_top

# A frame whose dice are cut from the die-top plane: its image, camera, die edge (mm) and each die's felt
# position (mm) and face.
PlaneFrame = tuple[NDArray[np.uint8], Camera, float, list[tuple[float, float, int]]]

MODEL_DIR = Path(__file__).resolve().parent / "pips_facenet"
WIDE_MODEL_DIR = Path(__file__).resolve().parent / "pips_wide"
# --hold-back: the parts of the real train folders kept for tuning (models.data.held_back); matteop65's
# third is the one the die-state model holds back too.
NELLBYLER_HELD_BACK = 1 / 5
MATTEOP65_HELD_BACK = 1 / 3
CONTEXT = 1.5  # cut a larger crop first so a rotation has real pixels in its corners
TOP_TO_DIE = 1.2  # matteop65 boxes hold the top face; the whole die seen obliquely is about this much wider


class NoCockedDiceError(ValueError):
    """A share of cocked dice was asked for, and the training scenes hold none."""


class CropSampler:
    """Random augmented die crops with their face labels."""

    def __init__(
        self,
        items: list[LabelledImage],
        seed: int,
        *,
        shake: float = 0.0,
        shake_synthetic_only: bool = False,
        cocked_share: float = 0.0,
    ) -> None:
        if not 0.0 <= cocked_share <= 1.0:
            raise ValueError(f"cocked_share is a share of the crops, 0 to 1: got {cocked_share}")
        self.rng = np.random.default_rng(seed)
        # Share of the drawn crops taken from the dice cocked on chips (the face model for the dice the
        # die-state model calls cocked); 0: every die as often as another, and the draws as before.
        self.cocked_share = cocked_share
        self.cocked: list[int] = []  # indices into `dice` of the cocked ones
        self.shake = shake  # share of crops blurred as a shaken camera blurs them (models.augment)
        self.shake_synthetic_only = shake_synthetic_only  # photos' crops never shaken
        self.images: list[NDArray[np.uint8]] = []
        self.dice: list[tuple[int, NDArray[np.float32], int, bool]] = []  # (image, box, face, synthetic)
        self.frames: list[tuple[NDArray[np.uint8], Camera, float]] = []  # whole frames for plane crops
        self.plane: list[tuple[int, float, float, int]] = []  # (frame index, felt x, y mm, face)
        for it in items:
            img = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
            if img is None:
                raise SystemExit(f"unreadable training image {it.path}")
            tilted = it.cocked if it.cocked is not None else np.zeros(len(it.faces), np.bool_)
            for box, face, cocked in zip(it.boxes_xyxy, it.faces, tilted, strict=True):
                b = box.copy()
                if it.box_kind == "top":
                    c, half = (b[:2] + b[2:]) / 2, (b[2:] - b[:2]) / 2 * TOP_TO_DIE
                    b = np.concatenate([c - half, c + half]).astype(np.float32)
                # Keep a patch of 3x the die around it (not the whole frame: memory), box in patch px.
                reach = 1.5 * float(max(b[2] - b[0], b[3] - b[1]))
                cx, cy = float(b[0] + b[2]) / 2, float(b[1] + b[3]) / 2
                x0, y0 = max(0, int(cx - reach)), max(0, int(cy - reach))
                x1, y1 = min(img.shape[1], int(cx + reach) + 1), min(img.shape[0], int(cy + reach) + 1)
                if x1 - x0 < 4 or y1 - y0 < 4:
                    continue
                self.images.append(np.ascontiguousarray(img[y0:y1, x0:x1], dtype=np.uint8))
                shift = np.array([x0, y0, x0, y0], np.float32)
                synthetic = it.camera is not None  # a generator's scene (its label gives the camera)
                self.dice.append((len(self.images) - 1, (b - shift).astype(np.float32), int(face), synthetic))
                if cocked:
                    self.cocked.append(len(self.dice) - 1)
        if cocked_share > 0.0 and not self.cocked:
            raise NoCockedDiceError("cocked_share needs cocked dice: none of these scenes has one")

    def add_plane(self, frames: list[PlaneFrame]) -> None:
        """Dice to cut from the die-top plane: per frame its image, camera, die edge (mm) and each die's true
        felt position and face."""
        for image, camera, edge, dice in frames:
            self.frames.append((image, camera, edge))
            for x, y, face in dice:
                self.plane.append((len(self.frames) - 1, x, y, face))

    def __len__(self) -> int:
        return len(self.dice) + len(self.plane)

    def draw(self, n: int) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
        """`n` crops stacked (n, CROP_PX, CROP_PX, 3) BGR uint8 and their faces: one training batch."""
        batch = [self.sample() for _ in range(n)]
        return np.stack([c for c, _ in batch]), np.array([f for _, f in batch], np.int64)

    def sample(self, index: int | None = None) -> tuple[NDArray[np.uint8], int]:
        rng = self.rng
        if index is not None:
            i = index
        elif self.cocked_share > 0.0 and rng.random() < self.cocked_share:
            i = self.cocked[int(rng.integers(len(self.cocked)))]
        else:
            i = int(rng.integers(len(self)))
        big_px = round(CROP_PX * CONTEXT)
        if i >= len(self.dice):
            frame_idx, x, y, face = self.plane[i - len(self.dice)]
            image, camera, edge = self.frames[frame_idx]
            # The felt position from a detector's box is off by a few percent of the die, the span likewise.
            centre = np.array([[x, y]]) + rng.normal(0, 0.05, size=(1, 2)) * edge
            span = RECTIFY_SPAN * edge * float(np.exp(rng.normal(0, 0.08))) * CONTEXT
            big = crops_die_top(image, camera, centre, z_mm=edge, side_mm=span, size_px=big_px)[0]
            return self._finish(big, face, die_px=big_px / (RECTIFY_SPAN * CONTEXT), synthetic=True)
        img_idx, box, face, synthetic = self.dice[i]
        w, h = box[2] - box[0], box[3] - box[1]
        side = max(w, h)
        # The detector's box error: shift and size jitter of a few percent of the die.
        c = (box[:2] + box[2:]) / 2 + rng.normal(0, 0.05, size=2) * side
        s = np.array([w, h]) * np.exp(rng.normal(0, 0.08, size=2)) * CONTEXT / 2
        jittered = np.array([c[0] - s[0], c[1] - s[1], c[0] + s[0], c[1] + s[1]], np.float32)
        big = crop_die(self.images[img_idx], jittered, size_px=big_px)
        return self._finish(big, face, die_px=big_px / (CONTEXT * (1 + CROP_PAD)), synthetic=synthetic)

    def _finish(
        self, big: NDArray[np.uint8], face: int, *, die_px: float, synthetic: bool
    ) -> tuple[NDArray[np.uint8], int]:
        """Sometimes camera shake (`die_px`: the die's side in `big`; not on a photo's die with
        `shake_synthetic_only`), a random turn, the centre crop, sometimes low resolution, the colour
        augmentation."""
        rng = self.rng
        big_px = big.shape[0]
        shakeable = synthetic or not self.shake_synthetic_only
        if self.shake > 0 and shakeable and rng.random() < self.shake:
            big = camera_shake(big, die_px, rng)
        rot = cv2.getRotationMatrix2D((big_px / 2 - 0.5, big_px / 2 - 0.5), float(rng.uniform(0, 360)), 1.0)
        big = np.asarray(
            cv2.warpAffine(big, rot, (big_px, big_px), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT),
            np.uint8,
        )
        o = (big_px - CROP_PX) // 2
        crop = np.ascontiguousarray(big[o : o + CROP_PX, o : o + CROP_PX])
        if rng.random() < 0.15:  # low resolution: a die of 16-40 px upsampled by the reader
            small = int(rng.integers(16, 40))
            tiny = cv2.resize(crop, (small, small), interpolation=cv2.INTER_AREA)
            crop = np.asarray(cv2.resize(tiny, (CROP_PX, CROP_PX)), np.uint8)
        return photometric(crop, rng), face


def plane_split(folder: Path) -> tuple[list[LabelledImage], list[PlaneFrame]]:
    """A synthetic folder's scenes (as `load_synth` keeps their dice): those under a camera leaning less
    than the reader's bar as box items, the others as whole frames with each die's felt position (from its
    box, as the reader places a detected die) and face."""
    from calibration.layout import ThrowBoxLayout
    from vision.table.geometry import TableGeometry

    layout = ThrowBoxLayout()
    bar = RECTIFY_MIN_TILT_DEG if RECTIFY_MIN_TILT_DEG is not None else 90.0
    box_items: list[LabelledImage] = []
    frames: list[PlaneFrame] = []
    for item in load_synth(folder):
        assert item.camera is not None  # a synthetic scene's label gives its camera
        if item.camera.pose.tilt_deg < bar:
            box_items.append(item)
            continue
        image = cv2.imread(str(item.path), cv2.IMREAD_COLOR)
        if image is None:
            raise SystemExit(f"unreadable training image {item.path}")
        centres = TableGeometry(camera=item.camera, layout=layout).centres_mm(item.boxes_xyxy.tolist())
        felt = [(float(c[0]), float(c[1]), int(f)) for c, f in zip(centres, item.faces, strict=True)]
        frames.append((np.asarray(image, np.uint8), item.camera, layout.die_edge_mm, felt))
    return box_items, frames


REAL_SETS = ("nellbyler", "matteop65")


def real_train_items(
    nell: list[LabelledImage],
    webcam: list[LabelledImage],
    *,
    hold_back: bool = False,
    real_repeat: int = 1,
    leave_out: Sequence[str] = (),
) -> tuple[list[LabelledImage], str]:
    """The real photos a run trains on, and a line saying what was kept back: the nellbyler train photos
    (drawn `real_repeat` times) and the matteop65 train photos, less a fixed share of each with `hold_back`,
    less every photo of a set named in `leave_out`."""
    unknown = sorted(set(leave_out) - set(REAL_SETS))
    if unknown:
        raise ValueError(f"no real set {', '.join(unknown)} to leave out; known: {', '.join(REAL_SETS)}")
    said = []
    if hold_back:
        from models.data import held_back

        nell_back = held_back(len(nell), NELLBYLER_HELD_BACK)
        webcam_back = held_back(len(webcam), MATTEOP65_HELD_BACK)
        nell = [it for k, it in enumerate(nell) if k not in nell_back]
        webcam = [it for k, it in enumerate(webcam) if k not in webcam_back]
        said.append(f"held back: {len(nell_back)} nellbyler and {len(webcam_back)} matteop65 train photos")
    if "nellbyler" in leave_out:
        said.append(f"left out: all {len(nell)} nellbyler train photos")
        nell = []
    if "matteop65" in leave_out:
        said.append(f"left out: all {len(webcam)} matteop65 train photos")
        webcam = []
    return nell * max(1, real_repeat) + webcam, "; ".join(said)


def build_parser() -> argparse.ArgumentParser:
    """The command line; built before torch is imported, so `--help` works without it."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real", type=Path, default=SHARED_REAL)
    parser.add_argument("--synth", type=Path, default=None, help="synthetic train scenes (optional)")
    parser.add_argument("--synth-limit", type=int, default=300, help="use the first N synthetic scenes")
    parser.add_argument(
        "--synth-extra",
        type=Path,
        action="append",
        default=[],
        help="more synthetic scene folders, every scene (repeat; e.g. the judge's chips and layout boxes)",
    )
    parser.add_argument(
        "--plane-synth",
        type=Path,
        action="append",
        default=[],
        help="synthetic scene folders whose dice under an oblique camera are cut from the die-top plane, as "
        "the reader cuts them with a calibration (repeat); their other dice from their boxes",
    )
    parser.add_argument(
        "--init",
        type=Path,
        default=None,
        help="start from this checkpoint (.pt) or from an ONNX export of the same net (.onnx: its batch "
        "norms are rebuilt from a batch of training crops, models/from_onnx.py)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--data-workers",
        type=int,
        default=0,
        help="processes that cut the training crops while the net trains on the last batch (0: cut them "
        "between steps, as before, repeatable by --seed; with workers the order depends on timing)",
    )
    parser.add_argument(
        "--arch",
        choices=("small", "wide"),
        default="small",
        help="small: the face model every die goes through (pips_facenet, registered as 'pips'); wide: "
        "the second look at unsure dice (pips_wide, registered as 'pips_second')",
    )
    parser.add_argument(
        "--hold-back",
        action="store_true",
        help=f"keep a fixed {NELLBYLER_HELD_BACK * 100:.0f} %% of nellbyler train photos and "
        f"{MATTEOP65_HELD_BACK * 100:.0f} %% of matteop65 train photos out of training, to tune on",
    )
    parser.add_argument("--out", type=Path, default=None, help="default: the model's folder under models/")
    parser.add_argument(
        "--real-repeat", type=int, default=1, help="draw each nellbyler train die this many times as often"
    )
    parser.add_argument(
        "--shake",
        type=float,
        default=0.0,
        help="share of crops blurred as the generator's shaken camera blurs a frame (a line of 0.07-0.45 of "
        "the die's side, sometimes defocused too; models.augment.camera_shake); 0: none, as before stage 19",
    )
    parser.add_argument(
        "--shake-synthetic-only",
        action="store_true",
        help="with --shake: blur only the dice of synthetic scenes, never a photo's (face stage 19b)",
    )
    parser.add_argument(
        "--cocked-share",
        type=float,
        default=0.0,
        help="share of crops drawn from the synthetic dice cocked on chips (a face model for the dice the "
        "die-state model calls cocked, `pips_cocked`), the rest from every die, cocked ones included; 0: "
        "every die as often as another, as before (face stage 20: 0.5)",
    )
    parser.add_argument(
        "--no-register", action="store_true", help="export the .onnx but leave models/manifest.json as it is"
    )
    parser.add_argument(
        "--leave-out",
        action="append",
        choices=REAL_SETS,
        default=[],
        help="a real train set not trained on at all (repeat), to read all of it as unseen (issue 55)",
    )
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    if not 0.0 <= args.shake <= 1.0:
        parser.error(f"--shake is a share of the crops, 0 to 1: got {args.shake}")
    if args.shake_synthetic_only and args.shake == 0:
        parser.error("--shake-synthetic-only needs --shake above 0")
    if not 0.0 <= args.cocked_share <= 1.0:
        parser.error(f"--cocked-share is a share of the crops, 0 to 1: got {args.cocked_share}")
    if args.data_workers < 0:
        parser.error(f"--data-workers must be 0 or more, got {args.data_workers}")
    require_torch()
    import torch
    import torch.nn.functional as F  # noqa: N812

    from models.export import dated_name, register
    from models.nets import FaceClassifier, WideFaceClassifier
    from vision.pips.crops import crops_to_tensor

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    # never the test split; --real-repeat weighs the real top-down photos against the many synthetic dice
    nell = load_nellbyler(args.real / "d6-topdown-nellbyler", "train")
    webcam = load_yolo_folder(args.real / "d6-webcam-matteop65" / "train", box_kind="top")  # never valid/
    items, said = real_train_items(
        nell, webcam, hold_back=args.hold_back, real_repeat=args.real_repeat, leave_out=args.leave_out
    )
    if said:
        print(said)
    if args.synth is not None:
        items += load_synth(args.synth, limit=args.synth_limit)
    for folder in args.synth_extra:
        items += load_synth(folder)
    plane_frames: list[PlaneFrame] = []
    for folder in args.plane_synth:
        box_items, frames = plane_split(folder)
        items += box_items
        plane_frames += frames
    try:
        sampler = CropSampler(
            items,
            args.seed,
            shake=args.shake,
            shake_synthetic_only=args.shake_synthetic_only,
            cocked_share=args.cocked_share,
        )
    except NoCockedDiceError as exc:
        parser.error(str(exc))
    sampler.add_plane(plane_frames)
    print(
        f"training on {len(sampler)} dice from {len(items) + len(plane_frames)} images "
        f"({len(sampler.plane)} cut from the die-top plane, {len(sampler.cocked)} cocked on chips)"
    )

    wide = args.arch == "wide"
    model = WideFaceClassifier() if wide else FaceClassifier()
    out_dir: Path = args.out or (WIDE_MODEL_DIR if wide else MODEL_DIR)
    if args.init is not None and args.init.suffix == ".onnx":
        from models.from_onnx import init_from_onnx

        crops = [sampler.sample()[0] for _ in range(CALIBRATION_CROPS)]
        calibration = torch.from_numpy(crops_to_tensor(crops))
        init_from_onnx(model, args.init, calibration)
        print(f"started from {args.init} (batch norms from {CALIBRATION_CROPS} training crops)")
    elif args.init is not None:
        model.load_state_dict(torch.load(args.init, weights_only=True))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    out_dir.mkdir(parents=True, exist_ok=True)

    draw = partial(CropSampler.draw, n=args.batch)
    with Prefetch(draw, sampler, workers=args.data_workers, seed=args.seed) as batches:

        def step_loss() -> tuple[torch.Tensor, str]:
            crops, faces = batches.next()
            x = torch.from_numpy(crops_to_tensor(list(crops)))
            y = torch.from_numpy(faces - 1)
            return F.cross_entropy(model.logits(x), y, label_smoothing=0.05), ""

        run = train_for(
            model=model, opt=opt, base_lr=args.lr, minutes=args.minutes, label="faces", step_loss=step_loss
        )
    torch.save(model.state_dict(), out_dir / "last.pt")
    onnx_path = out_dir / dated_name("pips", "wide" if wide else "facenet")
    export_onnx(
        model,
        onnx_path,
        example_shape=(2, 3, CROP_PX, CROP_PX),
        input_name="crops",
        output_name="probs",
        dynamic_axes={"crops": {0: "n"}, "probs": {0: "n"}},
    )
    if args.no_register:
        from vision.onnx_session import sha256_of

        entry: dict[str, object] = {"sha256": sha256_of(onnx_path)}
    else:
        entry = register(
            name="pips_second" if wide else "pips",
            onnx_path=onnx_path,
            input_size_hw=(CROP_PX, CROP_PX),
            labels=("1", "2", "3", "4", "5", "6"),
        )
    minutes = (time.monotonic() - run.started_s) / 60
    print(f"done: {run.steps} steps x {args.batch} in {minutes:.1f} min -> {onnx_path} {entry['sha256']}")


if __name__ == "__main__":
    main()
