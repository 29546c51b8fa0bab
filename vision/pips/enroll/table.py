"""`enroll_table`: one table's correction fitted from labelled dice, with its cross-validation."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np
from numpy.typing import NDArray

from vision.onnx_session import OnnxModel
from vision.pips.enroll.correction import (
    RIDGE,
    STEPS,
    EnrollDataError,
    Progress,
    embed,
    fit_correction,
    symmetries,
)
from vision.pips.enroll.validation import FOLDS, Validation, cross_validate
from vision.pips.enrolled import Enrollment

EMBED_SHARE = 0.8  # of the progress: running the face model; the rest, the fits


@dataclass(frozen=True)
class EnrollResult:
    enrollment: Enrollment
    dice: int
    seconds: float
    train_accuracy_before: float
    train_accuracy_after: float
    validation: Validation


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
