"""The whole reader (detect -> faces -> judge -> JSON, classified at the api edge) with fake sessions on
drawn dice.

The fake detector and classifier stand in for the ONNX models; the classical pip count, the judge, the
rules engine's classification (`api.read_document`) and the JSON contract are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from api.read_document import read_document, winner_and_count
from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from vision.annotate import annotate
from vision.detect.centernet import preprocess
from vision.pips.classifier import SECOND_LOOK_BELOW
from vision.reader import Reader, ReaderConfig
from vision.types import Frame, Verdict

FACES = (6, 6, 2)  # left to right


def _scene() -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    img = plain(480, 640)
    boxes = [draw_die(img, face=f, centre_xy=(120 + 180 * i, 240), edge_px=70) for i, f in enumerate(FACES)]
    return img, boxes


def _reader(
    tmp_path: Path, boxes: list[tuple[float, float, float, float]], rows: list[list[float]]
) -> Reader:
    manifest = write_manifest(tmp_path)
    return Reader(
        manifest_path=manifest, session_factory=factory(FakeDetectorSession(boxes), FakeFaceSession(rows))
    )


def test_reads_a_valid_roll_and_fills_the_json_contract(tmp_path: Path) -> None:
    img, boxes = _scene()
    reader = _reader(tmp_path, boxes, [one_hot(f) for f in FACES])
    roll = reader.read(Frame(image=img, frame_id="f1", table_id="T1"), expected_dice=3)
    assert roll.verdict is Verdict.VALID, roll.reasons
    assert roll.faces == FACES
    assert [d.pip_count for d in roll.dice] == list(FACES)  # the classical count agrees, independently
    assert winner_and_count(roll) == (6, 2)
    doc = json.loads(json.dumps(read_document(roll)))
    assert set(doc) >= {"verdict", "reasons", "dice", "faces", "winner", "match_count", "timing_ms", "models"}
    die = doc["dice"][0]
    assert set(die) >= {"face", "confidence", "box_xyxy", "top_quad", "cocked", "stacked", "layout_box"}
    assert np.allclose(die["box_xyxy"], boxes[0], atol=0.2)
    assert doc["models"] == {"detector": "detector_fake_2026nov", "pips": "pips_fake_2026nov"}
    assert doc["timing_ms"]["total"] >= doc["timing_ms"]["detect"] >= 0


class _Recording(FakeDetectorSession):
    """Keeps the first input the detector net is given (the frame as scaled for it)."""

    def __init__(self, boxes: list[tuple[float, float, float, float]]) -> None:
        super().__init__(boxes)
        self.first: np.ndarray | None = None

    def run(self, output_names: object, input_feed: dict[str, np.ndarray]) -> list[np.ndarray]:  # type: ignore[override]
        if self.first is None:
            (self.first,) = input_feed.values()
        return super().run(None, input_feed)


def test_a_detector_is_given_the_input_blur_its_manifest_entry_gives(tmp_path: Path) -> None:
    img, boxes = _scene()
    rows = [one_hot(f) for f in FACES]
    seen = {}
    for sub, blur in (("a", None), ("b", 0.8)):
        (tmp_path / sub).mkdir()
        session = _Recording(boxes)
        reader = Reader(
            manifest_path=write_manifest(tmp_path / sub, detector_blur=blur),
            session_factory=factory(session, FakeFaceSession(rows)),
        )
        assert reader.detector.config.input_blur_sigma == (blur or 0.0)
        assert reader.config.detector.input_blur_sigma == 0.0  # the reader's own settings are left as given
        roll = reader.read(Frame(image=img), expected_dice=3)
        assert roll.faces == FACES  # the faces are cut from the frame itself, not the blurred input
        seen[sub] = session.first
    # The net is given the frame as `preprocess` scales it, blurred by the entry's sigma or not at all.
    np.testing.assert_array_equal(seen["a"], preprocess(img, input_long_px=640)[0])
    np.testing.assert_array_equal(seen["b"], preprocess(img, input_long_px=640, blur_sigma=0.8)[0])
    assert not np.array_equal(seen["a"], seen["b"])


def test_a_frame_scaled_down_for_the_detector_is_not_blurred_again(tmp_path: Path) -> None:
    # Scaling 1280x960 down to the net's 640 averages it already: the entry's blur is for frames read at
    # their own size (or larger), so the net sees exactly the unblurred scaled frame.
    img, boxes = _scene()
    big = cv2.resize(img, (1280, 960), interpolation=cv2.INTER_LINEAR)
    session = _Recording(boxes)
    reader = Reader(
        manifest_path=write_manifest(tmp_path, detector_blur=0.8),
        session_factory=factory(session, FakeFaceSession([one_hot(f) for f in FACES])),
    )
    reader.read(Frame(image=big), expected_dice=3)
    assert session.first is not None
    np.testing.assert_array_equal(session.first, preprocess(big, input_long_px=640)[0])


def test_a_detector_is_read_at_the_threshold_its_manifest_entry_gives(tmp_path: Path) -> None:
    # A detector whose scores run lower (a distilled student: docs/history/model-detect_centernet.md,
    # stage 10d) carries its own tuned threshold: the reader must use it, and without it keep
    # DetectorConfig's 0.35.
    img, boxes = _scene()
    rows = [one_hot(f) for f in FACES]
    sessions = factory(FakeDetectorSession(boxes, score=0.3), FakeFaceSession(rows))
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    default = Reader(manifest_path=write_manifest(tmp_path / "a"), session_factory=sessions)
    own = Reader(
        manifest_path=write_manifest(tmp_path / "b", detector_threshold=0.28), session_factory=sessions
    )
    assert default.detector.config.score_threshold == 0.35
    assert own.detector.config.score_threshold == 0.28
    assert own.config.detector.score_threshold == 0.35  # the reader's own settings are left as given
    missed = default.read(Frame(image=img), expected_dice=3)
    assert (missed.verdict, len(missed.dice)) == (Verdict.NO_DECISION, 0)
    roll = own.read(Frame(image=img), expected_dice=3)
    assert roll.verdict is Verdict.VALID, roll.reasons
    assert roll.faces == FACES


def test_disagreeing_classifier_gives_no_decision_not_a_guess(tmp_path: Path) -> None:
    img, boxes = _scene()
    reader = _reader(tmp_path, boxes, [one_hot(6), one_hot(5), one_hot(2)])  # the middle die shows 6
    roll = reader.read(Frame(image=img), expected_dice=3)
    assert roll.verdict is Verdict.NO_DECISION
    assert roll.dice[1].face is None and roll.dice[1].uncertain
    assert winner_and_count(roll) == (None, None)
    assert any("classifier reads 5 but the pip count is 6" in r for r in roll.reasons)


def test_missing_die_gives_no_decision(tmp_path: Path) -> None:
    img, boxes = _scene()
    reader = _reader(tmp_path, boxes[:2], [one_hot(6), one_hot(6)])
    roll = reader.read(Frame(image=img), expected_dice=3)
    assert roll.verdict is Verdict.NO_DECISION
    assert "expected 3 dice, found 2" in roll.reasons


def test_annotated_frame_is_drawn_on_a_copy(tmp_path: Path) -> None:
    img, boxes = _scene()
    before = img.copy()
    roll = _reader(tmp_path, boxes, [one_hot(f) for f in FACES]).read(Frame(image=img))
    out = annotate(img, roll)
    assert out.shape == img.shape and np.array_equal(img, before)
    assert not np.array_equal(out, img)


def test_frame_rejects_non_images() -> None:
    with pytest.raises(ValueError, match="uint8 BGR"):
        Frame(image=np.zeros((4, 4), np.uint8))


@pytest.mark.parametrize("below", [None, 0.5, 1.01])
def test_the_second_look_bar_is_a_reader_setting(tmp_path: Path, below: float | None) -> None:
    """`ReaderConfig.second_look_below` reaches the face stage (None: no second look), as `eval` weighs it."""
    _, boxes = _scene()
    manifest = write_manifest(tmp_path)
    sessions = factory(FakeDetectorSession(boxes), FakeFaceSession([one_hot(6)] * 3))
    reader = Reader(
        manifest_path=manifest, session_factory=sessions, config=ReaderConfig(second_look_below=below)
    )
    assert reader.faces.second_look_below == below
    assert Reader(manifest_path=manifest, session_factory=sessions).faces.second_look_below == (
        SECOND_LOOK_BELOW
    )
