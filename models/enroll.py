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

An enrollment must prove itself before it is stored (issue 47: on the shipped 18c, enrolling 60 dice of a
style it never saw made the rest read worse). `enroll_table` therefore also estimates, by stratified k-fold
cross-validation over the labelled dice (`FOLDS` folds, dealt face by face in an order drawn by a fixed
seed; each fit on the other folds' dice, all eight looks of each), how the shipped head and the enrolled
head read the dice held out of each fit (as cut, the reader's first look), with the dice each is sure of
(`ValidityConfig.min_confidence`, the reader's bar) and reads wrong. `Validation.helps` is the rule the
callers apply (`throwbox enroll`, the service's job): store only when the enrolled head reads more held-out
dice right and is sure-and-wrong on no more of them; otherwise refuse with both figures unless forced.
scikit-learn's StratifiedKFold would deal the folds the same way; it is not a dependency, and dealing a
shuffled, face-sorted list round-robin is four lines.

The correction is stored per table (`vision.pips.enrolled.save_enrollment`, beside the table's calibration)
with its SHA-256 and its validation, and the reader names it in every read (`models["pips"]`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vision.onnx_session import OnnxModel
from vision.pips.crops import CROP_PAD, crop_die, crops_to_tensor
from vision.pips.enrolled import Enrollment

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
RIDGE = 1e-2
STEPS = 300
MAX_DICE = 60
EMBED_SHARE = 0.8  # of the progress: running the face model; the rest, the fits
FOLDS = 5
FOLD_SEED = 0

Progress = Callable[[float], None]


class EnrollDataError(ValueError):
    """The examples folder is missing, empty, or not laid out as DIR/<face>/*.jpg."""


@dataclass(frozen=True)
class Validation:
    """Cross-validated figures: the dice held out of each fit, read by the shipped and the enrolled head."""

    folds: int
    dice: int
    shipped_right: int
    enrolled_right: int
    shipped_sure_wrong: int  # sure (max probability >= min_confidence) and wrong
    enrolled_sure_wrong: int
    min_confidence: float

    @property
    def shipped_accuracy(self) -> float:
        return self.shipped_right / self.dice

    @property
    def enrolled_accuracy(self) -> float:
        return self.enrolled_right / self.dice

    @property
    def helps(self) -> bool:
        """More held-out dice read right, and no more read wrong while sure."""
        return (
            self.enrolled_right > self.shipped_right and self.enrolled_sure_wrong <= self.shipped_sure_wrong
        )

    def figures(self) -> str:
        return (
            f"cross-validated ({self.folds} folds, {self.dice} dice held out): shipped head "
            f"{100 * self.shipped_accuracy:.1f} % ({self.shipped_right}/{self.dice}, "
            f"{self.shipped_sure_wrong} sure and wrong), enrolled {100 * self.enrolled_accuracy:.1f} % "
            f"({self.enrolled_right}/{self.dice}, {self.enrolled_sure_wrong} sure and wrong)"
        )

    def refusal(self) -> str:
        return (
            f"the enrollment does not prove itself, so it was not stored: {self.figures()}; it must read "
            "more held-out dice right than the shipped head and be sure and wrong on no more "
            "(force stores it anyway)"
        )

    def document(self, *, forced: bool = False) -> dict[str, Any]:
        """The JSON form kept in the enrollment file, the job and the table's summary."""
        return {
            "folds": self.folds,
            "dice": self.dice,
            "shipped_right": self.shipped_right,
            "enrolled_right": self.enrolled_right,
            "shipped_accuracy": round(self.shipped_accuracy, 4),
            "enrolled_accuracy": round(self.enrolled_accuracy, 4),
            "shipped_sure_wrong": self.shipped_sure_wrong,
            "enrolled_sure_wrong": self.enrolled_sure_wrong,
            "min_confidence": self.min_confidence,
            "helps": self.helps,
            "forced": forced,
        }


@dataclass(frozen=True)
class EnrollResult:
    enrollment: Enrollment
    dice: int
    seconds: float
    train_accuracy_before: float
    train_accuracy_after: float
    validation: Validation


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


def fold_of(faces: Sequence[int], folds: int = FOLDS, *, seed: int = FOLD_SEED) -> NDArray[np.int64]:
    """Each die's fold, 0..folds-1 (fewer folds when there are fewer dice): the dice shuffled by `seed`,
    sorted by face, dealt round-robin, so every fold has its share of each face (stratified)."""
    n = len(faces)
    k = max(1, min(folds, n))
    order = np.random.default_rng(seed).permutation(n)
    order = order[np.argsort(np.asarray(faces)[order], kind="stable")]
    out = np.empty(n, np.int64)
    out[order] = np.arange(n) % k
    return out


def cross_validate(
    probs: NDArray[np.float32],
    embedding: NDArray[np.float32],
    faces: NDArray[np.int64],
    die: NDArray[np.int64],
    *,
    folds: int = FOLDS,
    min_confidence: float,
    ridge: float = RIDGE,
    steps: int = STEPS,
    progress: Progress | None = None,
) -> Validation:
    """Rows are looks of dice (`die` their die's index; the first look of each die is as cut): fit on the
    looks of the other folds' dice, read each held-out die's as-cut look with both heads."""
    from vision.pips.enrolled import corrected

    n_dice = int(die.max()) + 1
    first = np.array([int(np.flatnonzero(die == d)[0]) for d in range(n_dice)])
    die_faces = faces[first]
    fold = fold_of(die_faces.tolist(), folds)
    k = int(fold.max()) + 1
    shipped = probs[first]
    enrolled = np.zeros_like(shipped)
    for f in range(k):
        if progress is not None:
            progress(f / k)
        train = fold[die] != f
        held = np.flatnonzero(fold == f)
        w, b = fit_correction(probs[train], embedding[train], faces[train], ridge=ridge, steps=steps)
        enrolled[held] = corrected(probs[first[held]], embedding[first[held]], w, b)

    def right_and_sure_wrong(p: NDArray[np.float32]) -> tuple[int, int]:
        read = p.argmax(axis=1) + 1
        wrong = read != die_faces
        return int((~wrong).sum()), int((wrong & (p.max(axis=1) >= min_confidence)).sum())

    shipped_right, shipped_sure_wrong = right_and_sure_wrong(shipped)
    enrolled_right, enrolled_sure_wrong = right_and_sure_wrong(enrolled)
    return Validation(
        folds=k,
        dice=n_dice,
        shipped_right=shipped_right,
        enrolled_right=enrolled_right,
        shipped_sure_wrong=shipped_sure_wrong,
        enrolled_sure_wrong=enrolled_sure_wrong,
        min_confidence=min_confidence,
    )


def enroll_table(
    model: OnnxModel,
    table_id: str,
    examples: Sequence[tuple[NDArray[np.uint8], int]],
    *,
    ridge: float = RIDGE,
    steps: int = STEPS,
    folds: int = FOLDS,
    min_confidence: float | None = None,
    progress: Progress | None = None,
) -> EnrollResult:
    """Fit a table's correction from (die crop, face) examples (crops cut as the reader cuts them), and
    cross-validate it (`folds`; `min_confidence` the reader's bar, by default `ValidityConfig`'s);
    `progress` is told the share done, 0..1 (the face model's runs, then the fits). Storing it, or not,
    is the caller's: see `Validation.helps`."""
    from vision.judge.validity import ValidityConfig
    from vision.pips.enrolled import corrected

    if not examples:
        raise EnrollDataError("no labelled dice to enroll")
    start = time.perf_counter()
    crops: list[NDArray[np.uint8]] = []
    faces: list[int] = []
    dice: list[int] = []
    for index, (crop, face) in enumerate(examples):
        if not 1 <= face <= 6:
            raise EnrollDataError(f"face {face} is not 1..6")
        looks = symmetries(crop)
        crops += looks
        faces += [face] * len(looks)
        dice += [index] * len(looks)
    y = np.array(faces, np.int64)
    tell = progress or (lambda _: None)
    probs, embedding = embed(model, crops, progress=lambda p: tell(EMBED_SHARE * p))
    share = (1 - EMBED_SHARE) / (folds + 1)  # each fit's share of the progress
    validation = cross_validate(
        probs,
        embedding,
        y,
        np.array(dice, np.int64),
        folds=folds,
        min_confidence=ValidityConfig().min_confidence if min_confidence is None else min_confidence,
        ridge=ridge,
        steps=steps,
        progress=lambda p: tell(EMBED_SHARE + folds * share * p),
    )
    d_weight, d_bias = fit_correction(
        probs,
        embedding,
        y,
        ridge=ridge,
        steps=steps,
        progress=lambda p: tell(1 - share + share * p),
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
        validation=validation.document(),
    )
    tell(1.0)
    return EnrollResult(
        enrollment=enrollment,
        dice=len(examples),
        seconds=time.perf_counter() - start,
        train_accuracy_before=float((probs.argmax(axis=1) + 1 == y).mean()),
        train_accuracy_after=float((after.argmax(axis=1) + 1 == y).mean()),
        validation=validation,
    )


def forced(result: EnrollResult) -> EnrollResult:
    """The result with its enrollment marked as stored by force (its validation says `forced`)."""
    enrollment = replace(result.enrollment, validation=result.validation.document(forced=True))
    return replace(result, enrollment=enrollment)
