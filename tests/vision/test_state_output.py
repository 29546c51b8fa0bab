"""`states_from_output` (vectorised for speed) equals the plain row-by-row reading of the model's output."""

from __future__ import annotations

import numpy as np
import pytest

from vision.state.model import STATE_LABELS, states_from_output


def _row_by_row(out: np.ndarray) -> list[tuple[tuple[float, ...], float]]:
    """The definition: clip each row's probabilities to [0, 1], renormalise, clip the tilt to [0, 90]."""
    rows = []
    for row in out.astype(np.float64):
        probs = np.clip(row[: len(STATE_LABELS)], 0.0, 1.0)
        probs = probs / float(probs.sum())
        rows.append((tuple(float(p) for p in probs), float(np.clip(row[-1], 0.0, 90.0))))
    return rows


@pytest.mark.parametrize("seed", range(5))
def test_states_equal_the_row_by_row_reading(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    out = rng.random((n, len(STATE_LABELS) + 1)).astype(np.float32)
    out[:, :-1] /= out[:, :-1].sum(axis=1, keepdims=True)
    out[:, :-1] += rng.normal(0.0, 0.01, (n, len(STATE_LABELS))).astype(np.float32)  # rounding noise
    out[:, -1] = rng.uniform(-10.0, 120.0, n)  # tilts beyond 0..90 are clipped
    states = states_from_output(out)
    assert [(s.probs, s.tilt_deg) for s in states] == _row_by_row(out)


def test_a_row_without_probability_names_itself() -> None:
    out = np.full((3, len(STATE_LABELS) + 1), 0.1, np.float32)
    out[1, :-1] = -1.0  # every probability below zero: nothing left after clipping
    with pytest.raises(ValueError, match=r"no probability mass: \[-1\."):
        states_from_output(out)
