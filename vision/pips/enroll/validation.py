"""Whether an enrollment proves itself: stratified folds of the labelled dice, each held out of a fit and
read by the shipped and the enrolled head (`Validation.helps` is the rule; see the package docstring)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vision.pips.enroll.correction import RIDGE, STEPS, Progress, fit_correction

FOLDS = 5
FOLD_SEED = 0


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
