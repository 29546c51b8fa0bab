"""The face stage's second look: unsure dice are read again turned by 90, 180 and 270 degrees."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.vision.fakes import FakeInput, factory, one_hot, write_manifest
from vision.onnx_session import load_model
from vision.pips.classifier import SECOND_LOOK_BELOW, FaceReader
from vision.types import ImageArray

UNSURE = one_hot(2, 0.6)  # what the fake says when the bright corner is at the top left
TURNED = one_hot(5, 0.9)  # and otherwise
SURE = one_hot(3, 0.99)


class CornerSession:
    """A face model whose answer depends on where a crop is bright: so a turn changes what it says.

    Crops that are bright all over are read `SURE`; crops bright in the top-left quadrant only are read
    `UNSURE`; any other crop `TURNED`. Every batch it is given is kept.
    """

    def __init__(self) -> None:
        self.batches: list[np.ndarray] = []

    def get_inputs(self) -> list[Any]:
        return [FakeInput("crops")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        (x,) = input_feed.values()
        self.batches.append(np.array(x))
        rows = []
        for crop in x:
            if crop.mean() > 0.9:
                rows.append(SURE)
            elif crop[:, :32, :32].mean() > 0.9:
                rows.append(UNSURE)
            else:
                rows.append(TURNED)
        return [np.asarray(rows, np.float32)]


def corner_crop() -> ImageArray:
    crop = np.zeros((64, 64, 3), np.uint8)
    crop[:32, :32] = 255
    return crop


def reader(tmp_path: Path, session: CornerSession, **kwargs: Any) -> FaceReader:
    manifest = write_manifest(tmp_path)
    model = load_model("pips", manifest_path=manifest, session_factory=factory(session, session))
    return FaceReader(model, **kwargs)


def test_an_unsure_die_is_read_again_turned_and_the_readings_merged(tmp_path: Path) -> None:
    session = CornerSession()
    sure = np.full((64, 64, 3), 255, np.uint8)
    probs = reader(tmp_path, session).probabilities([sure, corner_crop()])
    first, second = session.batches
    assert first.shape[0] == 2
    # Only the unsure die goes again, as three exact turns of its crop.
    assert second.shape[0] == 3
    for k in (1, 2, 3):
        np.testing.assert_array_equal(second[k - 1], np.rot90(first[1], k, axes=(1, 2)))
    # The sure die keeps its single reading.
    np.testing.assert_allclose(probs[0], SURE, atol=1e-6)
    # The unsure die: the normalised geometric mean of the four readings.
    looks = np.array([UNSURE, TURNED, TURNED, TURNED])
    expected = np.exp(np.log(looks).mean(axis=0))
    np.testing.assert_allclose(probs[1], expected / expected.sum(), atol=1e-5)
    assert int(np.argmax(probs[1])) + 1 == 5


def test_sure_dice_cost_one_pass(tmp_path: Path) -> None:
    session = CornerSession()
    sure = np.full((64, 64, 3), 255, np.uint8)
    reader(tmp_path, session).probabilities([sure, sure, sure])
    assert [b.shape[0] for b in session.batches] == [3]


@pytest.mark.parametrize("below", [None, 0.5])
def test_the_second_look_can_be_turned_off_or_lowered(tmp_path: Path, below: float | None) -> None:
    session = CornerSession()
    probs = reader(tmp_path, session, second_look_below=below).probabilities([corner_crop()])
    assert len(session.batches) == 1
    np.testing.assert_allclose(probs[0], UNSURE, atol=1e-6)


def test_the_default_bar_is_not_below_the_readers_certainty_bar() -> None:
    from vision.validity import ValidityConfig

    # Every die the reader would leave uncertain for low confidence gets its second look.
    assert ValidityConfig().min_confidence <= SECOND_LOOK_BELOW
