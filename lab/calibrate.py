"""Calibrate a face model's confidence (issue 55, item 3): one temperature fitted on a tuning set, its
expected calibration error on any set, and the sure bar the calibrated model is read at.

The face model is read on the labelled dice's own boxes (as `throwbox lab eval`'s "face classifier alone on
the labelled boxes"), so the fit sees the model, not the detector. The temperature T minimises the negative
log-likelihood of the labels under softmax(log p / T) (a bounded scalar search: scipy's, as no closed form
serves). Expected calibration error: the mean gap between confidence and accuracy over 15 equal-width bins
of confidence, weighted by the bins' dice (Guo et al. 2017).

The sure bar is chosen on the tuning set too: the lowest bar at which the dice the calibrated model is at
least that sure of are wrong no more than `target_per_1000` per 1,000 (the point estimate: a tuning set of a
few thousand dice cannot bound a rate of 1 per 1,000 from above); where none is, the highest bar swept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

BINS = 15
BAR_GRID: tuple[float, ...] = tuple(
    sorted({round(v, 5) for v in (*np.linspace(0.5, 0.99, 50), 0.995, 0.998, 0.999, 0.9995, 0.9999)})
)


@dataclass(frozen=True)
class Calibration:
    """A fitted temperature, the sure bar chosen with it, and the tuning set's figures before and after."""

    temperature: float
    sure_bar: float
    tuning_dice: int
    ece_before: float
    ece_after: float
    nll_before: float
    nll_after: float


def at_temperature(probs: NDArray[np.float32], temperature: float) -> NDArray[np.float64]:
    """softmax(log p / T), row by row (what `FaceReader` does with a manifest's temperature)."""
    logits = np.log(np.maximum(probs.astype(np.float64), 1e-12)) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    out: NDArray[np.float64] = e / e.sum(axis=1, keepdims=True)
    return out


def nll(probs: NDArray[np.floating[Any]], faces: NDArray[np.int64]) -> float:
    """Mean negative log-likelihood of the labelled faces (1..6)."""
    picked = probs[np.arange(len(faces)), faces - 1]
    return float(-np.log(np.maximum(picked, 1e-12)).mean())


def fit_temperature(probs: NDArray[np.float32], faces: NDArray[np.int64]) -> float:
    """The temperature in [0.05, 20] that minimises the labels' negative log-likelihood."""
    from scipy.optimize import minimize_scalar

    if len(faces) == 0:
        raise ValueError("no labelled dice to fit a temperature on")
    found = minimize_scalar(
        lambda log_t: nll(at_temperature(probs, float(np.exp(log_t))), faces),
        bounds=(np.log(0.05), np.log(20.0)),
        method="bounded",
    )
    return float(np.exp(found.x))


def reliability(
    probs: NDArray[np.floating[Any]], faces: NDArray[np.int64], *, bins: int = BINS
) -> list[dict[str, float | int]]:
    """Per bin of confidence: its dice, mean confidence and accuracy (the reliability diagram's points)."""
    conf = probs.max(axis=1)
    right = probs.argmax(axis=1) + 1 == faces
    edges = np.linspace(0.0, 1.0, bins + 1)
    out: list[dict[str, float | int]] = []
    for k in range(bins):
        inside = (conf > edges[k]) & (conf <= edges[k + 1]) if k else (conf <= edges[1])
        n = int(inside.sum())
        if n:
            out.append(
                {
                    "low": float(edges[k]),
                    "high": float(edges[k + 1]),
                    "dice": n,
                    "confidence": float(conf[inside].mean()),
                    "accuracy": float(right[inside].mean()),
                }
            )
    return out


def ece(probs: NDArray[np.floating[Any]], faces: NDArray[np.int64], *, bins: int = BINS) -> float:
    """Expected calibration error over `bins` equal-width bins of confidence."""
    total = len(faces)
    if total == 0:
        return float("nan")
    rows = reliability(probs, faces, bins=bins)
    return float(
        sum(int(r["dice"]) * abs(float(r["confidence"]) - float(r["accuracy"])) for r in rows) / total
    )


def choose_bar(
    probs: NDArray[np.floating[Any]],
    faces: NDArray[np.int64],
    *,
    target_per_1000: float,
    bars: Sequence[float] = BAR_GRID,
) -> float:
    """The lowest bar whose sure dice are wrong at most `target_per_1000` per 1,000 (the point estimate)."""
    conf = probs.max(axis=1)
    wrong = probs.argmax(axis=1) + 1 != faces
    for bar in bars:
        sure = conf >= bar
        if sure.any() and 1000.0 * float(wrong[sure].mean()) <= target_per_1000:
            return float(bar)
    return float(bars[-1])


def calibrate(probs: NDArray[np.float32], faces: NDArray[np.int64], *, target_per_1000: float) -> Calibration:
    """Fit the temperature and choose the sure bar on one tuning set's face probabilities."""
    t = fit_temperature(probs, faces)
    after = at_temperature(probs, t)
    return Calibration(
        temperature=round(t, 4),
        sure_bar=choose_bar(after, faces, target_per_1000=target_per_1000),
        tuning_dice=len(faces),
        ece_before=round(ece(probs, faces), 5),
        ece_after=round(ece(after, faces), 5),
        nll_before=round(nll(probs, faces), 5),
        nll_after=round(nll(after, faces), 5),
    )
