"""The fast colour statistics equal numpy's general-purpose versions bit for bit (the reader's outputs
must not change when they replace them), and refuse input they cannot handle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision.colour import colour_distance, median_colour, percentile_below


def _image(seed: int, h: int, w: int, levels: int) -> np.ndarray:
    """Random 3-channel uint8 image; few `levels` make many ties (the hard case for medians)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, levels, (h, w, 3)) * (255 // max(1, levels - 1))).astype(np.uint8)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    h=st.integers(1, 40),
    w=st.integers(1, 40),
    levels=st.sampled_from([2, 3, 17, 256]),
)
def test_median_colour_equals_numpy(seed: int, h: int, w: int, levels: int) -> None:
    img = _image(seed, h, w, levels)
    want = np.median(img.reshape(-1, 3).astype(np.float32), axis=0)
    got = median_colour(img)
    assert got.dtype == np.float32
    assert np.array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), h=st.integers(1, 40), w=st.integers(1, 40))
def test_colour_distance_equals_numpy_norm(seed: int, h: int, w: int) -> None:
    img = _image(seed, h, w, 256)
    colour = median_colour(img[: max(1, h // 2)])  # a multiple of 0.5, as in the reader
    want = np.linalg.norm(img.astype(np.float32) - colour, axis=2)
    got = colour_distance(img, colour)
    assert got.shape == (h, w) and got.dtype == np.float32
    assert np.array_equal(got, want)


def test_colour_distance_of_a_view_into_a_larger_image() -> None:
    big = _image(7, 60, 80, 256)
    view = big[5:45, 10:70]  # not contiguous, as a crop of a frame is
    colour = np.array([100.5, 128.0, 3.0], np.float32)
    want = np.linalg.norm(view.astype(np.float32) - colour, axis=2)
    assert np.array_equal(colour_distance(view, colour), want)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.integers(0, 40), min_size=1, max_size=300),
    percentile=st.sampled_from([0.0, 50.0, 90.0, 99.0, 100.0]),
    limit=st.sampled_from([0.0, 0.5, 10.0, 18.0, 18.5, 30.0, 41.0]),
)
def test_percentile_below_equals_numpy(values: list[int], percentile: float, limit: float) -> None:
    # Integers and halves make ties and exact hits on the limit: the boundary cases of the counting.
    arr = np.asarray(values, np.float32) * np.float32(0.5)
    want = bool(float(np.percentile(arr, percentile)) < limit)
    assert percentile_below(arr, percentile=percentile, limit=limit) is want


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: median_colour(np.zeros((0, 3), np.uint8)), "non-empty"),  # nothing to take a median of
        (lambda: median_colour(np.zeros((4, 4, 3), np.float32)), "uint8"),  # float image
        (lambda: median_colour(np.zeros((4, 4), np.uint8)), "uint8"),  # grey image
        (lambda: colour_distance(np.zeros((4, 4), np.uint8), np.zeros(3, np.float32)), "uint8"),  # grey
        (lambda: percentile_below(np.zeros(0, np.float32), percentile=99, limit=1.0), "no values"),
    ],
)
def test_bad_input_is_refused(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=message):
        call()
