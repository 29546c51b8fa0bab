"""Table enrollment: adapt the shipped face model to one table's dice from a few labelled examples, no torch.

`throwbox enroll --table ID --from DIR` reads `DIR/<face>/*.jpg` (one die per photo, the die filling it;
faces 1..6; or labelled frames, or confirmed rolls: `models.enroll_sources`), cuts each as the reader cuts a
die whose box is the photo (`crop_die`), looks at it in the eight turns and mirror images a d6 face does not
change under, and runs the registered face model on them with
onnxruntime (`embedding`, its second output, and `probs`). Then, with numpy alone, it fits a correction of the
shipped head, z = log p_shipped + e @ dW.T + db, by full-batch gradient descent on the cross-entropy plus a
ridge penalty on dW (`ridge`): with few examples the correction stays small and the shipped head decides; the
examples move it only as far as they agree. Plain numpy, not scikit-learn (not a dependency) nor scipy: the
problem is a 6-class logistic regression of a few hundred rows, a few hundred steps of a known step size.

The correction is stored per table (`vision.pips.enrolled.save_enrollment`, beside the table's calibration)
with its SHA-256, and the reader names it in every read (`models["pips"]`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from vision.onnx_session import OnnxModel
from vision.pips.crops import CROP_PAD, crop_die, crops_to_tensor
from vision.pips.enrolled import Enrollment

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
RIDGE = 1e-2
STEPS = 300
MAX_DICE = 60
EMBED_SHARE = 0.8  # of the progress: running the face model; the rest, the fit

Progress = Callable[[float], None]


class EnrollDataError(ValueError):
    """The examples folder is missing, empty, or not laid out as DIR/<face>/*.jpg."""


@dataclass(frozen=True)
class EnrollResult:
    enrollment: Enrollment
    dice: int
    seconds: float
    train_accuracy_before: float
    train_accuracy_after: float


def photo_crop(image_bgr: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """The reader's crop of a die that fills the photo (its box the photo shrunk by the crop's pad)."""
    h, w = image_bgr.shape[:2]
    side = min(h, w) / (1.0 + CROP_PAD)
    cx, cy = w / 2.0, h / 2.0
    return crop_die(image_bgr, (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2))


def symmetries(crop: NDArray[np.uint8]) -> list[NDArray[np.uint8]]:
    """The eight turns and mirror images of a crop (a d6 face is the same face in each)."""
    turns = [np.rot90(crop, k) for k in range(4)]
    return [np.ascontiguousarray(c) for c in turns + [np.fliplr(t) for t in turns]]


def embed(
    model: OnnxModel, crops: Sequence[NDArray[np.uint8]], *, progress: Progress | None = None
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """(probabilities (n, 6), embeddings (n, d)) of the model's two outputs; `progress` told 0..1."""
    probs, embs = [], []
    for i in range(0, len(crops), 128):
        if progress is not None:
            progress(i / max(len(crops), 1))
        outputs = model.run(crops_to_tensor(list(crops[i : i + 128])))
        if len(outputs) < 2:
            raise EnrollDataError(
                f"face model {model.spec.tag} has no embedding output: it cannot be enrolled"
            )
        probs.append(outputs[0])
        embs.append(outputs[1])
    return np.concatenate(probs), np.concatenate(embs)


def fit_correction(
    probs: NDArray[np.float32],
    embedding: NDArray[np.float32],
    faces: NDArray[np.int64],
    *,
    ridge: float = RIDGE,
    steps: int = STEPS,
    progress: Progress | None = None,
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """dW (6, d), db (6,) minimising the mean cross-entropy of softmax(log probs + E dW^T + db) on `faces`
    (1..6) plus ridge/2 |dW|^2: gradient descent with the step 1/L of the loss's smoothness bound."""
    n, d = embedding.shape
    x = embedding.astype(np.float64)
    base = np.log(np.maximum(probs.astype(np.float64), 1e-7))
    y = np.zeros((n, 6))
    y[np.arange(n), faces - 1] = 1.0
    # The softmax cross-entropy's Hessian is at most 1/2 x x^T per row: L <= |[x 1]|_2^2 / (2n) + ridge.
    xa = np.concatenate([x, np.ones((n, 1))], axis=1)
    lipschitz = float(np.linalg.norm(xa, 2) ** 2) / (2 * n) + ridge
    lr = 1.0 / lipschitz
    w = np.zeros((6, d))
    b = np.zeros(6)
    for step in range(steps):
        if progress is not None and step % 25 == 0:
            progress(step / steps)
        z = base + x @ w.T + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) / n
        w -= lr * (g.T @ x + ridge * w)
        b -= lr * g.sum(axis=0)
    return w.astype(np.float32), b.astype(np.float32)


def enroll_table(
    model: OnnxModel,
    table_id: str,
    examples: Sequence[tuple[NDArray[np.uint8], int]],
    *,
    ridge: float = RIDGE,
    steps: int = STEPS,
    progress: Progress | None = None,
) -> EnrollResult:
    """Fit a table's correction from (die crop, face) examples (crops cut as the reader cuts them);
    `progress` is told the share done, 0..1 (the face model's runs, then the fit's steps)."""
    from vision.pips.enrolled import corrected

    if not examples:
        raise EnrollDataError("no labelled dice to enroll")
    start = time.perf_counter()
    crops: list[NDArray[np.uint8]] = []
    faces: list[int] = []
    for crop, face in examples:
        if not 1 <= face <= 6:
            raise EnrollDataError(f"face {face} is not 1..6")
        looks = symmetries(crop)
        crops += looks
        faces += [face] * len(looks)
    y = np.array(faces, np.int64)
    tell = progress or (lambda _: None)
    probs, embedding = embed(model, crops, progress=lambda p: tell(EMBED_SHARE * p))
    d_weight, d_bias = fit_correction(
        probs,
        embedding,
        y,
        ridge=ridge,
        steps=steps,
        progress=lambda p: tell(EMBED_SHARE + (1 - EMBED_SHARE) * p),
    )
    after = corrected(probs, embedding, d_weight, d_bias)
    counts = {str(f): int(sum(1 for _, g in examples if g == f)) for f in range(1, 7)}
    enrollment = Enrollment(
        table_id=table_id,
        model_sha256=model.spec.sha256,
        d_weight=d_weight,
        d_bias=d_bias,
        examples=counts,
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    tell(1.0)
    return EnrollResult(
        enrollment=enrollment,
        dice=len(examples),
        seconds=time.perf_counter() - start,
        train_accuracy_before=float((probs.argmax(axis=1) + 1 == y).mean()),
        train_accuracy_after=float((after.argmax(axis=1) + 1 == y).mean()),
    )
