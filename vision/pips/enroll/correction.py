"""Enrollment's fit: the reader's crop of a die photo, its eight looks, the face model's two outputs, and the
numpy fit of a correction of the shipped head (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from vision.onnx_session import OnnxModel
from vision.pips.crops import CROP_PAD, crop_die, crops_to_tensor

RIDGE = 1e-2
STEPS = 300

Progress = Callable[[float], None]


class EnrollDataError(ValueError):
    """The examples folder is missing, empty, or not laid out as DIR/<face>/*.jpg."""


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
