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


class RecordingSession:
    """A fake face model: reads each crop with `read_crop` and keeps every batch it is given."""

    def __init__(self) -> None:
        self.batches: list[np.ndarray] = []

    def get_inputs(self) -> list[Any]:
        return [FakeInput("crops")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        (x,) = input_feed.values()
        self.batches.append(np.array(x))
        return [np.asarray([self.read_crop(crop) for crop in x], np.float32)]

    def read_crop(self, crop: np.ndarray) -> list[float]:
        raise NotImplementedError


class CornerSession(RecordingSession):
    """A face model whose answer depends on where a crop is bright: so a turn changes what it says.

    Crops that are bright all over are read `SURE`; crops bright in the top-left quadrant only are read
    `UNSURE`; any other crop `TURNED`.
    """

    def read_crop(self, crop: np.ndarray) -> list[float]:
        if crop.mean() > 0.9:
            return SURE
        if crop[:, :32, :32].mean() > 0.9:
            return UNSURE
        return TURNED


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


def test_turned_reads_every_die_again_however_sure_it_was(tmp_path: Path) -> None:
    """`turned=True` (the judge's closer look at a cocked die): every crop goes through the turns, the sure
    one too, and each reading is the merge of its four looks."""
    session = CornerSession()
    # A crop bright on its left half: the fake reads it UNSURE upright and in the one turn that puts the
    # bright half at the top (both cover the top-left quadrant), TURNED in the other two.
    half = np.zeros((64, 64, 3), np.uint8)
    half[:, :32] = 255
    sure = np.full((64, 64, 3), 255, np.uint8)
    probs = reader(tmp_path, session).probabilities([sure, half], turned=True)
    _, second = session.batches
    assert second.shape[0] == 6  # both dice, three turns each
    np.testing.assert_allclose(probs[0], SURE, atol=1e-5)  # all four looks of a uniform crop agree
    looks = np.array([UNSURE, TURNED, TURNED, UNSURE])
    expected = np.exp(np.log(looks).mean(axis=0))
    np.testing.assert_allclose(probs[1], expected / expected.sum(), atol=1e-5)
    # Without `turned` the sure die is read once and only the unsure one goes again.
    session.batches.clear()
    reader(tmp_path, session).probabilities([sure, half])
    assert [b.shape[0] for b in session.batches] == [2, 3]


def test_the_mirrored_looks_are_the_four_turns_of_the_mirror_image(tmp_path: Path) -> None:
    """`second_look_mirror`: eight looks, the square's whole symmetry group (a d6 face mirrored is the same
    face turned), merged as the four are."""
    session = CornerSession()
    probs = reader(tmp_path, session, second_look_mirror=True).probabilities([corner_crop()])
    first, second = session.batches
    assert second.shape[0] == 7
    mirrored = np.flip(first[0], axis=2)
    for k in (0, 1, 2, 3):
        np.testing.assert_array_equal(second[3 + k], np.rot90(mirrored, k, axes=(1, 2)))
    # The bright corner comes back to the top left in one mirrored look (the transpose): UNSURE twice.
    looks = np.array([UNSURE, *(TURNED,) * 3, TURNED, UNSURE, TURNED, TURNED])
    expected = np.exp(np.log(looks).mean(axis=0))
    np.testing.assert_allclose(probs[0], expected / expected.sum(), atol=1e-5)
    assert FaceReader.__init__.__kwdefaults__["second_look_mirror"] is False  # off until judged


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
    from vision.judge.validity import ValidityConfig

    # Every die the reader would leave uncertain for low confidence gets its second look.
    assert ValidityConfig().min_confidence <= SECOND_LOOK_BELOW


class FixedSession(RecordingSession):
    """A second (wide) face model that reads every crop as `row`."""

    def __init__(self, row: list[float]) -> None:
        super().__init__()
        self.row = row

    def read_crop(self, crop: np.ndarray) -> list[float]:
        return self.row


WIDE = one_hot(4, 0.95)


def with_second(
    tmp_path: Path, session: CornerSession, wide: FixedSession, weight: float, accept: float | None = None
) -> FaceReader:
    manifest = write_manifest(tmp_path)
    model = load_model("pips", manifest_path=manifest, session_factory=factory(session, session))
    second = load_model("pips", manifest_path=manifest, session_factory=factory(wide, wide))
    return FaceReader(model, second_model=second, second_weight=weight, second_accept=accept)


def test_with_a_second_model_at_full_weight_an_unsure_die_is_read_by_it_alone(tmp_path: Path) -> None:
    session, wide = CornerSession(), FixedSession(WIDE)
    sure = np.full((64, 64, 3), 255, np.uint8)
    probs = with_second(tmp_path, session, wide, 1.0).probabilities([sure, corner_crop(), sure])
    # The small net reads every die once and turns nothing; the wide one reads only the unsure die.
    assert [b.shape[0] for b in session.batches] == [3]
    assert [b.shape[0] for b in wide.batches] == [1]
    np.testing.assert_array_equal(wide.batches[0][0], session.batches[0][1])
    np.testing.assert_allclose(probs[1], WIDE, atol=1e-5)
    np.testing.assert_allclose(probs[[0, 2]], [SURE, SURE], atol=1e-6)


def test_with_a_second_model_at_half_weight_the_two_are_merged(tmp_path: Path) -> None:
    session, wide = CornerSession(), FixedSession(WIDE)
    probs = with_second(tmp_path, session, wide, 0.5).probabilities([corner_crop()])
    assert [b.shape[0] for b in session.batches] == [1, 3]  # the small net's turned looks still run
    small = np.log(np.array([UNSURE, TURNED, TURNED, TURNED])).mean(axis=0)
    expected = np.exp(0.5 * small + 0.5 * np.log(WIDE))
    np.testing.assert_allclose(probs[0], expected / expected.sum(), atol=1e-5)


def test_sure_dice_never_reach_the_second_model(tmp_path: Path) -> None:
    session, wide = CornerSession(), FixedSession(WIDE)
    sure = np.full((64, 64, 3), 255, np.uint8)
    with_second(tmp_path, session, wide, 1.0).probabilities([sure, sure])
    assert wide.batches == []


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_a_second_weight_outside_zero_to_one_is_refused(tmp_path: Path, weight: float) -> None:
    with pytest.raises(ValueError, match="second_weight"):
        with_second(tmp_path, CornerSession(), FixedSession(WIDE), weight)


def turned_looks() -> np.ndarray:
    """The small net's four looks at the corner crop, merged as the reader merges them."""
    merged = np.exp(np.log(np.array([UNSURE, TURNED, TURNED, TURNED])).mean(axis=0))
    return np.asarray(merged / merged.sum())


def test_a_wide_reading_under_its_accept_bar_leaves_the_turned_looks(tmp_path: Path) -> None:
    session, wide = CornerSession(), FixedSession(WIDE)  # the wide net says 4 at 0.95
    probs = with_second(tmp_path, session, wide, 1.0, accept=0.97).probabilities([corner_crop()])
    # Under the bar the wide net's reading is dropped, so the turned looks must have been read.
    assert [b.shape[0] for b in session.batches] == [1, 3]
    assert [b.shape[0] for b in wide.batches] == [1]
    np.testing.assert_allclose(probs[0], turned_looks(), atol=1e-5)
    assert int(np.argmax(probs[0])) + 1 == 5


def test_a_wide_reading_over_its_accept_bar_stands(tmp_path: Path) -> None:
    session, wide = CornerSession(), FixedSession(WIDE)
    probs = with_second(tmp_path, session, wide, 1.0, accept=0.94).probabilities([corner_crop()])
    np.testing.assert_allclose(probs[0], WIDE, atol=1e-5)


class MarkSession(FixedSession):
    """A wide model sure (0.99) of crops marked in their bottom-right quadrant, unsure (0.9) of others."""

    def read_crop(self, crop: np.ndarray) -> list[float]:
        return one_hot(4, 0.99) if crop[:, 32:, 32:].mean() > 0.05 else one_hot(4, 0.9)


def test_the_accept_bar_is_decided_die_by_die(tmp_path: Path) -> None:
    marked = corner_crop()
    marked[48:56, 48:56] = 255  # the small net still reads it as the corner crop (UNSURE, then TURNED)
    session, wide = CornerSession(), MarkSession(WIDE)
    probs = with_second(tmp_path, session, wide, 1.0, accept=0.95).probabilities([corner_crop(), marked])
    assert [b.shape[0] for b in wide.batches] == [2]
    np.testing.assert_allclose(probs[0], turned_looks(), atol=1e-5)  # the wide net at 0.9: dropped
    np.testing.assert_allclose(probs[1], one_hot(4, 0.99), atol=1e-5)  # at 0.99: it stands


def test_without_a_second_model_an_accept_bar_changes_nothing_bit_for_bit(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    crops = [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(5)] + [corner_crop()]
    plain = reader(tmp_path, CornerSession()).probabilities(crops)
    barred = reader(tmp_path, CornerSession(), second_accept=0.95).probabilities(crops)
    assert plain.dtype == barred.dtype == np.float32
    assert np.array_equal(plain, barred)


def test_the_accept_bar_applies_to_the_merged_reading_at_half_weight(tmp_path: Path) -> None:
    session, wide = CornerSession(), FixedSession(WIDE)
    merged = np.exp(0.5 * np.log(turned_looks()) + 0.5 * np.log(WIDE))
    merged /= merged.sum()
    bar = float(merged.max())
    just_over = with_second(tmp_path, session, wide, 0.5, accept=bar - 1e-4).probabilities([corner_crop()])
    np.testing.assert_allclose(just_over[0], merged, atol=1e-5)
    session, wide = CornerSession(), FixedSession(WIDE)
    just_under = with_second(tmp_path, session, wide, 0.5, accept=bar + 1e-4).probabilities([corner_crop()])
    np.testing.assert_allclose(just_under[0], turned_looks(), atol=1e-5)


@pytest.mark.parametrize("accept", [0.0, 1.2])
def test_an_accept_bar_outside_zero_to_one_is_refused(tmp_path: Path, accept: float) -> None:
    with pytest.raises(ValueError, match="second_accept"):
        with_second(tmp_path, CornerSession(), FixedSession(WIDE), 1.0, accept)


def test_the_reader_uses_the_second_model_the_manifest_lists(tmp_path: Path) -> None:
    import json

    from tests.vision.fakes import FakeDetectorSession
    from vision.reader import Reader
    from vision.types import Frame

    manifest = write_manifest(tmp_path)
    raw = json.loads(manifest.read_text(encoding="utf-8"))
    (tmp_path / "pips_second_fake_2026nov.onnx").write_bytes(b"pips")  # same bytes: same SHA-256
    raw["models"]["pips_second"] = dict(raw["models"]["pips"], file="pips_second_fake_2026nov.onnx")
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    session, wide = CornerSession(), FixedSession(WIDE)
    detector = FakeDetectorSession([(100, 100, 164, 164)])

    def make(path: Path, threads: int, providers: tuple[str, ...]) -> Any:
        if path.name.startswith("detector"):
            return detector
        return wide if path.name.startswith("pips_second") else session

    image = np.zeros((480, 640, 3), np.uint8)
    image[60:133, 60:133] = 255  # the die's crop is bright in its top-left quarter: the small net is unsure
    roll = Reader(manifest_path=manifest, session_factory=make).read(Frame(image=image))
    assert "pips_second" in roll.models
    assert len(wide.batches) == 1
    np.testing.assert_allclose(roll.dice[0].face_probs, WIDE, atol=1e-5)


@pytest.mark.parametrize(("weight", "accept"), [(None, None), (0.5, None), (1.0, 0.95)])
def test_the_manifest_says_how_the_second_model_is_merged(
    tmp_path: Path, weight: float | None, accept: float | None
) -> None:
    """A `pips_second` entry carries the weight and accept bar it was judged with (absent: the module's
    defaults), and only the main face reader merges it: dice called cocked keep their own model's looks."""
    import json

    from tests.vision.fakes import FakeDetectorSession
    from vision.pips.classifier import SECOND_MODEL_ACCEPT, SECOND_MODEL_WEIGHT
    from vision.reader import Reader

    manifest = write_manifest(tmp_path)
    raw = json.loads(manifest.read_text(encoding="utf-8"))
    (tmp_path / "pips_second_fake_2026nov.onnx").write_bytes(b"pips")
    (tmp_path / "state_fake_2026nov.onnx").write_bytes(b"pips")
    second = dict(raw["models"]["pips"], file="pips_second_fake_2026nov.onnx")
    if weight is not None:
        second["second_weight"] = weight
    if accept is not None:
        second["second_accept"] = accept
    raw["models"]["pips_second"] = second
    raw["models"]["pips_cocked"] = dict(raw["models"]["pips"])
    raw["models"]["die_state"] = dict(
        raw["models"]["pips"], file="state_fake_2026nov.onnx", input_size_hw=[64, 64]
    )
    manifest.write_text(json.dumps(raw), encoding="utf-8")

    def make(path: Path, threads: int, providers: tuple[str, ...]) -> Any:
        return FakeDetectorSession([]) if path.name.startswith("detector") else CornerSession()

    reader = Reader(manifest_path=manifest, session_factory=make)
    assert reader.faces.second_model is reader.onnx_models["pips_second"]
    assert reader.faces.second_weight == (SECOND_MODEL_WEIGHT if weight is None else weight)
    assert reader.faces.second_accept == (SECOND_MODEL_ACCEPT if accept is None else accept)
    assert reader.cocked_faces is not None and reader.cocked_faces.second_model is None


@pytest.mark.parametrize(
    ("field", "value"), [("second_weight", 1.5), ("second_weight", "0.5"), ("second_accept", 0.0)]
)
def test_a_second_models_merge_values_out_of_range_are_refused(
    tmp_path: Path, field: str, value: object
) -> None:
    import json

    from vision.onnx_session import ManifestError, load_manifest

    manifest = write_manifest(tmp_path)
    raw = json.loads(manifest.read_text(encoding="utf-8"))
    raw["models"]["pips_second"] = dict(raw["models"]["pips"], **{field: value})
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ManifestError, match=f"{field} must be a number in"):
        load_manifest(manifest)
