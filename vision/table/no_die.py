"""A table's no-die filter (issue 56): the boxes its people struck out, learned, so the next like them is set
aside.

At a table the detector's false boxes repeat: the layout's printed letters (on the one-table learn-bench, the
O of TWO, the E of FIVE: half the rolls had one, docs/history/learn-bench-one-table.md), a logo, a rack's
edge, a translucent die's reflection. A table calibrated with its camera fixed sets the print it saw on the
empty box aside (`vision/table/marks.py`); what it did not see, or what moves with the light, comes back every
shift. The console's person strikes each one out (a labelled box, `api.console_decisions.labelled_boxes`) and
confirms the dice; this module learns the difference from those boxes alone, numpy and OpenCV only.

- **Look.** Each box is described by its colours and its size (`features`): a hue-saturation-value
  histogram of the box (8 x 3 x 3 bins) and the box's long side and aspect against the frame's typical box
  (the median long side of the frame's boxes). Nothing of the face model: the filter outlives any refit of it.
- **Fit.** A logistic regression with an L2 penalty (`fit_no_die`, Newton's method on standardised
  features): 74 numbers and a bias. Hand-written: scikit-learn would be a dependency for twenty lines.
- **Guard.** Stored only when it proves itself on boxes it did not learn from (`cross_validate`, five folds
  by frame): **no die of the table's confirmed rolls at the bar or above**, and at least `MIN_RECALL` of the
  struck boxes. Too few boxes (`MIN_DICE`, `MIN_STRUCK`) is no filter, saying so.
- **Use** (`vision.reader.Reader`): only where a frame has more boxes than the game's dice, the boxes at the
  bar or above are set aside, the surest first, never more than the surplus (as the die-state model's
  `no_die`, vision/judge/validity.py), so it never makes a count short and never gives a face; each is kept in
  the read's `set_aside` (reason `table_no_die`) and drawn on the evidence frame.

Stored per table beside its calibration (`<table>.no-die.json`), in the calibration store's shape: a format
tag, a version, the SHA-256 of the body's canonical JSON, checked on load.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.store import check_table_id, write_whole
from calibration.table import canonical_json
from vision.types import DieCandidate, SetAside

NO_DIE_FORMAT = "throwbox.no-die-filter"
NO_DIE_VERSION = 1
HIST_BINS = (8, 3, 3)  # hue, saturation, value
N_FEATURES = int(np.prod(HIST_BINS)) + 2
BAR = 0.9  # a box at this probability of no die or above may be set aside
RIDGE = 1.0  # the L2 penalty on the standardised weights
NEWTON_STEPS = 30
FOLDS = 5
MIN_DICE = 100  # labelled dice needed before a filter is fitted
MIN_STRUCK = 20  # struck-out boxes needed
MIN_RECALL = 0.5  # of the struck boxes at the bar or above, cross-validated

Box = tuple[float, float, float, float]


class NoDieError(Exception):
    """A table's no-die filter file is unreadable, damaged or malformed."""


def features(image: NDArray[np.uint8], boxes: Sequence[Box]) -> NDArray[np.float64]:
    """(n, N_FEATURES): each box's HSV histogram (sums to 1), its long side's log against the frame's median
    long side, and the log of its aspect."""
    if not boxes:
        return np.zeros((0, N_FEATURES))
    h, w = image.shape[:2]
    longs = np.array([max(b[2] - b[0], b[3] - b[1]) for b in boxes], np.float64)
    typical = float(np.median(longs)) if len(longs) else 1.0
    out = np.zeros((len(boxes), N_FEATURES))
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        xa, ya = max(0, round(x0)), max(0, round(y0))
        xb, yb = min(w, max(xa + 1, round(x1))), min(h, max(ya + 1, round(y1)))
        patch = image[ya:yb, xa:xb]
        hsv = cv2.cvtColor(np.ascontiguousarray(patch), cv2.COLOR_BGR2HSV)
        hist = cv2.calcHist([hsv], [0, 1, 2], None, list(HIST_BINS), [0, 180, 0, 256, 0, 256]).ravel()
        out[i, :-2] = hist / max(float(hist.sum()), 1.0)
        out[i, -2] = np.log(max(longs[i], 1.0) / max(typical, 1.0))
        out[i, -1] = np.log(max(x1 - x0, 1.0) / max(y1 - y0, 1.0))
    return out


def _fit_logistic(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    """Weights and bias of an L2-penalised logistic regression (Newton's method; the bias not penalised)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], RIDGE)
    penalty[-1] = 0.0
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        grad = xb.T @ (p - y) + penalty * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


@dataclass(frozen=True)
class NoDieFilter:
    """A fitted filter: standardisation, weights, bias; the figures it was stored on."""

    table_id: str
    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    weight: NDArray[np.float64]
    bias: float
    examples: dict[str, int]  # "die" and "no_die": the boxes it learned from
    validation: dict[str, Any] = field(default_factory=dict)
    bar: float = BAR
    fitted_at: str | None = None
    checksum: str = ""

    def probabilities(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """P(no die) of feature rows."""
        z = ((x - self.mean) / self.scale) @ self.weight + self.bias
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))), np.float64)

    def p_no_die(self, image: NDArray[np.uint8], boxes: Sequence[Box]) -> NDArray[np.float64]:
        """P(no die) of each box of a frame (the frame's boxes together: the typical size is theirs)."""
        return self.probabilities(features(image, boxes))

    def body(self) -> dict[str, Any]:
        def r(a: NDArray[np.float64]) -> list[float]:
            return [float(v) for v in np.round(a, 8)]

        return {
            "table_id": self.table_id,
            "hist_bins": list(HIST_BINS),
            "mean": r(self.mean),
            "scale": r(self.scale),
            "weight": r(self.weight),
            "bias": round(float(self.bias), 8),
            "bar": self.bar,
            "examples": dict(self.examples),
            "validation": dict(self.validation),
            "fitted_at": self.fitted_at,
        }


def fit_no_die(
    x: NDArray[np.float64], struck: NDArray[np.bool_], *, table_id: str, fitted_at: str | None = None
) -> NoDieFilter:
    """The filter of feature rows `x` and their labels (True: struck out, no die)."""
    mean = x.mean(axis=0)
    scale = np.maximum(x.std(axis=0), 1e-6)
    weight, bias = _fit_logistic((x - mean) / scale, struck.astype(np.float64))
    return NoDieFilter(
        table_id=table_id,
        mean=mean,
        scale=scale,
        weight=weight,
        bias=bias,
        examples={"die": int((~struck).sum()), "no_die": int(struck.sum())},
        fitted_at=fitted_at,
    )


@dataclass(frozen=True)
class NoDieValidation:
    """Cross-validated by frame: the dice and the struck boxes held out, and how many were at the bar."""

    dice: int
    struck: int
    dice_at_bar: int  # dice a person confirmed that the filter would have set aside
    struck_at_bar: int
    bar: float = BAR

    @property
    def proves_itself(self) -> bool:
        return self.dice_at_bar == 0 and self.struck_at_bar >= MIN_RECALL * self.struck > 0

    def refusal(self) -> str:
        """Why it was not stored, in words ("" when it proves itself)."""
        if self.proves_itself:
            return ""
        if self.dice_at_bar:
            return (
                f"it would have set aside {self.dice_at_bar} of {self.dice} confirmed dice held out of its "
                f"fit (at p >= {self.bar:g})"
            )
        return (
            f"it set aside {self.struck_at_bar} of {self.struck} struck-out boxes held out of its fit "
            f"(at least {MIN_RECALL:.0%} needed)"
        )

    def document(self) -> dict[str, Any]:
        return {
            "folds": FOLDS,
            "dice": self.dice,
            "struck": self.struck,
            "dice_at_bar": self.dice_at_bar,
            "struck_at_bar": self.struck_at_bar,
            "bar": self.bar,
            "proves_itself": self.proves_itself,
        }


def cross_validate(
    x: NDArray[np.float64], struck: NDArray[np.bool_], frame_of: NDArray[np.int64], *, table_id: str
) -> NoDieValidation:
    """Each fold of frames held out of a fit and read by it (`FOLDS` folds; a frame's boxes stay together)."""
    frames = np.unique(frame_of)
    fold = {int(f): k % FOLDS for k, f in enumerate(np.random.default_rng(0).permutation(frames))}
    folds = np.array([fold[int(f)] for f in frame_of])
    p = np.zeros(len(x))
    for k in range(FOLDS):
        held = folds == k
        if not held.any() or held.all():
            continue
        fit = fit_no_die(x[~held], struck[~held], table_id=table_id)
        p[held] = fit.probabilities(x[held])
    at_bar = p >= BAR
    return NoDieValidation(
        dice=int((~struck).sum()),
        struck=int(struck.sum()),
        dice_at_bar=int((at_bar & ~struck).sum()),
        struck_at_bar=int((at_bar & struck).sum()),
    )


def set_struck_aside(
    image: NDArray[np.uint8], candidates: Sequence[DieCandidate], no_die: NoDieFilter, expected_dice: int
) -> tuple[tuple[DieCandidate, ...], tuple[SetAside, ...]]:
    """(the boxes kept, those set aside as the table's people struck out boxes like them): only where there
    are more boxes than `expected_dice`, those at the filter's bar or above, the surest first, never more
    than the surplus."""
    surplus = len(candidates) - expected_dice
    if surplus <= 0:
        return tuple(candidates), ()
    p = no_die.p_no_die(image, [c.box_xyxy for c in candidates])
    ranked = sorted(range(len(candidates)), key=lambda i: -p[i])[:surplus]
    out = {i for i in ranked if p[i] >= no_die.bar}
    aside = tuple(
        SetAside(box_xyxy=c.box_xyxy, score=c.score, p_no_die=float(p[i]), reason="table_no_die")
        for i, c in enumerate(candidates)
        if i in out
    )
    return tuple(c for i, c in enumerate(candidates) if i not in out), aside


def too_few(struck: NDArray[np.bool_]) -> str:
    """Why a table's labelled boxes are too few for a filter ("" when enough)."""
    dice, no_die = int((~struck).sum()), int(struck.sum())
    if dice < MIN_DICE or no_die < MIN_STRUCK:
        return (
            f"{dice} confirmed dice and {no_die} struck-out boxes; a no-die filter needs {MIN_DICE} and "
            f"{MIN_STRUCK}"
        )
    return ""


# --- the record ----------------------------------------------------------------------------------------


def no_die_path(data_dir: Path, table_id: str) -> Path:
    return data_dir / f"{check_table_id(table_id)}.no-die.json"


def save_no_die(fitted: NoDieFilter, data_dir: Path) -> NoDieFilter:
    """Write atomically; the filter with its checksum."""
    body = fitted.body()
    checksum = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    doc = {"format": NO_DIE_FORMAT, "version": NO_DIE_VERSION, "checksum": f"sha256:{checksum}", "body": body}
    path = no_die_path(data_dir, fitted.table_id)
    write_whole(path, (json.dumps(doc, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
    saved = load_no_die(data_dir, fitted.table_id)
    if saved is None:  # pragma: no cover - written just above
        raise NoDieError(f"{path}: not found after writing it")
    return saved


def delete_no_die(data_dir: Path, table_id: str) -> bool:
    """Remove the table's filter; False when it had none."""
    try:
        no_die_path(data_dir, table_id).unlink()
    except FileNotFoundError:
        return False
    return True


def load_no_die(data_dir: Path, table_id: str) -> NoDieFilter | None:
    """The table's filter, or None when it has none; `NoDieError` for a damaged file."""
    path = no_die_path(data_dir, table_id)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NoDieError(f"{path}: not readable JSON ({exc})") from exc
    if (
        not isinstance(doc, dict)
        or doc.get("format") != NO_DIE_FORMAT
        or doc.get("version") != NO_DIE_VERSION
    ):
        raise NoDieError(f"{path}: not a {NO_DIE_FORMAT} file of version {NO_DIE_VERSION}")
    body = doc.get("body")
    if not isinstance(body, dict):
        raise NoDieError(f"{path}: no body")
    actual = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if doc.get("checksum") != f"sha256:{actual}":
        raise NoDieError(f"{path}: checksum mismatch: the file was edited or damaged")
    try:
        fitted = NoDieFilter(
            table_id=str(body["table_id"]),
            mean=np.asarray(body["mean"], np.float64),
            scale=np.asarray(body["scale"], np.float64),
            weight=np.asarray(body["weight"], np.float64),
            bias=float(body["bias"]),
            examples={str(k): int(v) for k, v in body["examples"].items()},
            validation=dict(body.get("validation") or {}),
            bar=float(body["bar"]),
            fitted_at=None if body.get("fitted_at") is None else str(body["fitted_at"]),
            checksum=actual,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise NoDieError(f"{path}: malformed body ({exc!r})") from exc
    shapes = {fitted.mean.shape, fitted.scale.shape, fitted.weight.shape}
    if list(body.get("hist_bins") or []) != list(HIST_BINS) or shapes != {(N_FEATURES,)}:
        raise NoDieError(
            f"{path}: features of another shape ({sorted(shapes)}, bins {body.get('hist_bins')})"
        )
    if not 0.5 <= fitted.bar < 1.0 or not np.all(fitted.scale > 0):
        raise NoDieError(f"{path}: bar {fitted.bar} or scale out of range")
    return fitted
