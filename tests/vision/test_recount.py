"""The pip count's recount: a count against the learned face is an opinion only if it holds when the crop
is cut again from the die's box scaled by `PipCountConfig.recount_scales` (vision/pips/classical.py,
`steady_count`; the face stage, vision/pips/classifier.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vision.pips.classical
import vision.pips.classifier as classifier_module
from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeFaceSession, factory, one_hot, write_manifest
from vision.onnx_session import load_model
from vision.pips.classical import PipCountConfig, steady_count
from vision.pips.classifier import FaceReader
from vision.pips.crops import crop_die, scaled_box
from vision.types import DieCandidate, ImageArray


def never(scale: float) -> int | None:
    raise AssertionError(f"recounted at {scale}, but a count that agrees or gives none needs no recount")


@pytest.mark.parametrize(("count", "face"), [(3, 3), (None, 5)])
def test_a_count_that_agrees_or_gives_none_is_kept_without_a_recount(count: int | None, face: int) -> None:
    assert steady_count(count, face, never, (0.94, 1.06)) == count


def test_a_count_against_the_face_stands_when_every_recount_gives_it() -> None:
    seen: list[float] = []

    def recount(scale: float) -> int | None:
        seen.append(scale)
        return 2

    assert steady_count(2, 6, recount, (0.94, 1.06)) == 2
    assert seen == [0.94, 1.06]


@pytest.mark.parametrize("other", [None, 3, 6])
def test_a_count_against_the_face_that_changes_on_a_recount_is_no_opinion(other: int | None) -> None:
    assert steady_count(2, 6, {0.94: 2, 1.06: other}.__getitem__, (0.94, 1.06)) is None


def test_no_scales_is_no_recount() -> None:
    assert steady_count(2, 6, never, ()) == 2


@pytest.mark.parametrize("bad", [(0.0,), (3.0,), (float("nan"),), [0.94, 1.06]])
def test_recount_scales_are_checked(bad: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="recount_scales"):
        PipCountConfig(recount_scales=bad)  # a list is refused too: the config is frozen and hashable


def test_scaled_box_keeps_the_centre() -> None:
    assert scaled_box((10.0, 20.0, 30.0, 60.0), 1.5) == (5.0, 10.0, 35.0, 70.0)
    # At scale 1 the box itself, to the last bit (the centre plus half-side would move 1236.7 by one).
    assert scaled_box((1236.7, 705.1, 1414.0, 883.1), 1.0) == (1236.7, 705.1, 1414.0, 883.1)


def _three(tmp_path: Path, face_read: int) -> tuple[FaceReader, ImageArray, tuple[DieCandidate, ...]]:
    """A drawn three (a real pip count, clear at every crop) and a fake face model reading `face_read`."""
    image = plain(240, 240)
    box = draw_die(image, face=3, centre_xy=(120, 120), edge_px=60)
    candidate = DieCandidate(
        box_xyxy=box,
        top_quad=((box[0], box[1]), (box[2], box[1]), (box[2], box[3]), (box[0], box[3])),
        score=0.9,
    )
    session = FakeFaceSession([one_hot(face_read, 0.97)])
    manifest = write_manifest(tmp_path)
    model = load_model("pips", manifest_path=manifest, session_factory=factory(session, session))
    return FaceReader(model), image, (candidate,)


def test_a_clear_count_against_the_face_still_vetoes(tmp_path: Path) -> None:
    reader, image, candidates = _three(tmp_path, face_read=5)
    (reading,) = reader(image, candidates)
    assert reading.learned_face == 5
    assert reading.pip_count == 3  # a clear three at every crop: the veto stands (the die will be uncertain)


def test_a_count_that_moves_with_the_crop_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader, image, candidates = _three(tmp_path, face_read=5)
    real = vision.pips.classical.count_pips
    calls: list[int | None] = []
    crops: list[ImageArray] = []

    def flaky(crop: ImageArray, *, config: PipCountConfig | None = None) -> int | None:
        # The reader's own crop counts as the real counter does; the rescaled crops count one pip fewer.
        n = real(crop, config=config)
        calls.append(n)
        crops.append(crop)
        return n if len(calls) == 1 else 2

    monkeypatch.setattr(classifier_module, "count_pips", flaky)
    (reading,) = reader(image, candidates)
    assert calls[0] == 3 and len(calls) == 2  # the first count, then recounts until one differs
    assert reading.pip_count is None
    # The recount reads the crop cut from the box scaled by the first recount scale, not the same crop.
    scale = PipCountConfig().recount_scales[0]
    np.testing.assert_array_equal(crops[1], crop_die(image, scaled_box(candidates[0].box_xyxy, scale)))
    assert not np.array_equal(crops[1], crops[0])


def test_a_count_that_agrees_is_counted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader, image, candidates = _three(tmp_path, face_read=3)
    real = vision.pips.classical.count_pips
    calls: list[np.ndarray] = []

    def spy(crop: ImageArray, *, config: PipCountConfig | None = None) -> int | None:
        calls.append(crop)
        return real(crop, config=config)

    monkeypatch.setattr(classifier_module, "count_pips", spy)
    (reading,) = reader(image, candidates)
    assert reading.pip_count == 3
    assert len(calls) == 1
