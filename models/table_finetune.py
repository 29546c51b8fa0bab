"""A table's fine-tune of the shipped face model on its confirmed dice (issue 56; training only, the `train`
extra), run by the service in a process of its own, niced (`api.learning_tune`):

    python -m models.table_finetune --work DIR --table ID

The service writes the job folder DIR and reads back what this writes; it guards and stores the result,
never this process. DIR holds:

- `job.json` (`JOB_FILE`): the shipped face model's ONNX (`base_model`, its `base_sha256`, checked here),
  the reader's bar (`min_confidence`) and temperature, the seed, the budget (`max_steps`, `max_seconds`,
  whichever ends first), `threads`, `batch`, `lr`, and the augmentation's `strong_colour` and
  `label_smoothing` (training's by default; the service asks milder colour and none, `api.learning_tune`).
- `crops.npz` (`CROPS_FILE`): `crops` (n, 64, 64, 3) uint8 BGR, each die cut as the reader cuts it
  (`vision.pips.crops.crop_die`), `faces` (n,) 1..6, and `held_out` (n,) bool: the confirmed dice kept out
  of training, chosen by the service (one stratified fold, `vision.pips.enroll.fold_of`).

It starts the shipped net (`models.nets.FaceClassifier`, stage 18c) from its ONNX (`models.from_onnx`), trains
on the other dice with training's augmentation (a jittered box as the detector's error, a random turn, now
and then low resolution, `models.augment.photometric`; as `models.train_pips.CropSampler` does, on a crop
already cut, its corners filled by reflection), its batch norms frozen (their statistics are the export's:
at step 0 the net is the shipped model exactly, and a few hundred crops of one table do not move them),
exports the candidate with the shipped model's outputs (`probs`, and `embedding` where the shipped file has
it, `models.expose_embedding`), and writes `candidate.onnx` and `result.json` (`RESULT_FILE`): the shipped
model's and the candidate's figures on the held-out dice, both read as the reader runs them (onnxruntime,
the dice as cut): right, and sure (top probability at the bar or above) and wrong.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from models.augment import photometric
from vision.pips.crops import CROP_PAD, CROP_PX, crops_to_tensor

JOB_FILE = "job.json"
CROPS_FILE = "crops.npz"
CANDIDATE_FILE = "candidate.onnx"
RESULT_FILE = "result.json"
DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "max_steps": 300,
    "max_seconds": 90.0,
    "threads": 2,
    "batch": 64,
    "lr": 5e-4,
    "min_confidence": 0.90,
    "temperature": 1.0,
    "label_smoothing": 0.05,  # training's
    "strong_colour": True,  # training's photometric changes (hue turned, colours inverted); False: milder
}


class FineTuneJobError(ValueError):
    """The job folder is not one this module can run: a file missing, malformed, or another base model."""


def augmented(crop: NDArray[np.uint8], rng: np.random.Generator, *, strong: bool = True) -> NDArray[np.uint8]:
    """One training look of a cut crop: the box's error (5 % shift, 8 % size of the die), a random turn,
    sometimes low resolution (16-40 px), then the photometric changes; as training's sampler draws them."""
    die_px = CROP_PX / (1.0 + CROP_PAD)
    centre = (CROP_PX / 2 - 0.5, CROP_PX / 2 - 0.5)
    scale = float(np.exp(rng.normal(0, 0.08)))
    m = np.asarray(cv2.getRotationMatrix2D(centre, float(rng.uniform(0, 360)), 1.0 / scale), np.float64)
    m[:, 2] += rng.normal(0, 0.05, size=2) * die_px
    out = np.asarray(
        cv2.warpAffine(crop, m, (CROP_PX, CROP_PX), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT),
        np.uint8,
    )
    if rng.random() < 0.15:
        small = int(rng.integers(16, 40))
        tiny = cv2.resize(out, (small, small), interpolation=cv2.INTER_AREA)
        out = np.asarray(cv2.resize(tiny, (CROP_PX, CROP_PX)), np.uint8)
    return photometric(out, rng, strong=strong)


def read_job(work: Path) -> tuple[dict[str, Any], NDArray[np.uint8], NDArray[np.int64], NDArray[np.bool_]]:
    """(job settings with their defaults, crops, faces, held-out mask) of a job folder."""
    try:
        job = {**DEFAULTS, **json.loads((work / JOB_FILE).read_text(encoding="utf-8"))}
        with np.load(work / CROPS_FILE) as data:
            crops = np.asarray(data["crops"], np.uint8)
            faces = np.asarray(data["faces"], np.int64)
            held = np.asarray(data["held_out"], np.bool_)
    except (OSError, ValueError, KeyError) as exc:
        raise FineTuneJobError(f"{work}: not a fine-tune job folder ({exc})") from exc
    if crops.ndim != 4 or crops.shape[1:] != (CROP_PX, CROP_PX, 3) or len(faces) != len(crops):
        raise FineTuneJobError(f"crops of shape {crops.shape} for {len(faces)} faces")
    if len(held) != len(crops) or not held.any() or held.all():
        raise FineTuneJobError("held_out must mark some of the dice, not all")
    if not np.isin(faces, np.arange(1, 7)).all():
        raise FineTuneJobError("faces must be 1..6")
    return job, crops, faces, held


def figures(probs: NDArray[np.float32], faces: NDArray[np.int64], bar: float) -> tuple[int, int]:
    """(read right, sure and wrong) of probabilities (n, 6) against faces 1..6."""
    wrong = probs.argmax(axis=1) + 1 != faces
    return int((~wrong).sum()), int((wrong & (probs.max(axis=1) >= bar)).sum())


def onnx_probs(
    path: Path, crops: NDArray[np.uint8], *, threads: int, temperature: float
) -> tuple[NDArray[np.float32], int]:
    """The file's first output on the crops as the reader feeds them (at `temperature`), and how many
    outputs it has."""
    from vision.onnx_session import DEFAULT_PROVIDERS, onnxruntime_session

    session = onnxruntime_session(path, threads, DEFAULT_PROVIDERS)
    name = str(session.get_inputs()[0].name)
    outs = session.run(None, {name: crops_to_tensor(list(crops))})
    probs = np.asarray(outs[0], np.float64)
    if temperature != 1.0:
        z = np.log(np.maximum(probs, 1e-12)) / temperature
        z -= z.max(axis=1, keepdims=True)
        probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return probs.astype(np.float32), len(outs)


def fine_tune(work: Path, table_id: str) -> dict[str, Any]:
    """Run the job in `work`: train, export `candidate.onnx`, write and return `result.json`'s document."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    from models.expose_embedding import EMBEDDING, expose_embedding
    from models.from_onnx import init_from_onnx
    from models.loop import export_onnx, lr_at
    from models.nets import FaceClassifier
    from vision.onnx_session import sha256_of

    start = time.monotonic()
    job, crops, faces, held = read_job(work)
    base = Path(str(job["base_model"]))
    if not base.is_file() or sha256_of(base) != job.get("base_sha256"):
        raise FineTuneJobError(f"{base}: missing, or not the face model of SHA-256 {job.get('base_sha256')}")
    threads, seed = int(job["threads"]), int(job["seed"])
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train_crops, train_faces = crops[~held], faces[~held]

    def draw(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        pick = rng.integers(len(train_crops), size=n)
        looks = [augmented(train_crops[i], rng, strong=bool(job["strong_colour"])) for i in pick]
        return torch.from_numpy(crops_to_tensor(looks)), torch.from_numpy(train_faces[pick] - 1)

    model = FaceClassifier()
    init_from_onnx(model, base, draw(min(256, 4 * len(train_crops)))[0])
    opt = torch.optim.AdamW(model.parameters(), lr=float(job["lr"]), weight_decay=1e-4)
    max_steps, max_seconds = int(job["max_steps"]), float(job["max_seconds"])
    steps, losses = 0, []
    while steps < max_steps and time.monotonic() - start < max_seconds:
        for group in opt.param_groups:
            group["lr"] = lr_at(float(job["lr"]), step=steps, frac=steps / max_steps, warmup_steps=20)
        model.train()
        for m in model.modules():  # the batch norms keep the export's statistics
            if isinstance(m, torch.nn.BatchNorm2d):
                m.eval()
        x, y = draw(int(job["batch"]))
        loss = F.cross_entropy(model.logits(x), y, label_smoothing=float(job["label_smoothing"]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        losses.append(float(loss.detach()))

    plain = work / "candidate-probs.onnx"
    export_onnx(
        model,
        plain,
        example_shape=(2, 3, CROP_PX, CROP_PX),
        input_name="crops",
        output_name="probs",
        dynamic_axes={"crops": {0: "n"}, "probs": {0: "n"}},
    )
    candidate = work / CANDIDATE_FILE
    bar, temperature = float(job["min_confidence"]), float(job["temperature"])
    shipped_probs, base_outputs = onnx_probs(base, crops[held], threads=threads, temperature=temperature)
    if base_outputs >= 2:  # the shipped file has its embedding output: so has the candidate
        expose_embedding(plain, candidate)
    else:
        plain.replace(candidate)
    plain.unlink(missing_ok=True)
    tuned_probs, tuned_outputs = onnx_probs(candidate, crops[held], threads=threads, temperature=temperature)
    shipped_right, shipped_sure_wrong = figures(shipped_probs, faces[held], bar)
    tuned_right, tuned_sure_wrong = figures(tuned_probs, faces[held], bar)
    result = {
        "table_id": table_id,
        "base_sha256": job["base_sha256"],
        "candidate": CANDIDATE_FILE,
        "candidate_sha256": sha256_of(candidate),
        "outputs": ["probs", EMBEDDING][:tuned_outputs],
        "trained_on_dice": len(train_crops),
        "held_out": {
            "dice": int(held.sum()),
            "shipped_right": shipped_right,
            "tuned_right": tuned_right,
            "shipped_sure_wrong": shipped_sure_wrong,
            "tuned_sure_wrong": tuned_sure_wrong,
            "min_confidence": bar,
        },
        "steps": steps,
        "loss_last_50": round(float(np.mean(losses[-50:])), 4) if losses else None,
        "seconds": round(time.monotonic() - start, 2),
        "seed": seed,
    }
    (work / RESULT_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True, help="the job folder the service wrote")
    parser.add_argument("--table", required=True, help="the table's id (named in the result)")
    args = parser.parse_args()
    from models.loop import require_torch

    require_torch()
    try:
        result = fine_tune(args.work, args.table)
    except FineTuneJobError as exc:
        raise SystemExit(f"table_finetune: {exc}") from exc
    held = result["held_out"]
    print(
        f"table {args.table}: {result['steps']} steps on {result['trained_on_dice']} dice in "
        f"{result['seconds']} s; held out {held['dice']}: shipped {held['shipped_right']} right "
        f"({held['shipped_sure_wrong']} sure and wrong), tuned {held['tuned_right']} "
        f"({held['tuned_sure_wrong']})"
    )


if __name__ == "__main__":
    main()
