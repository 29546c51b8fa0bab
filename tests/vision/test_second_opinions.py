"""Second opinions before a face is sure (issue 55, item 4): the eight turns of the crop and the pip count,
each a reader option off by default; and the phantom check (item 5): a box must look like a whole die."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from models.data import load_dataset
from vision.image import load_image
from vision.judge.phantom import PhantomConfig, overlaps, whole_dice
from vision.judge.validity import ValidityConfig, judge_die
from vision.onnx_session import manifest_lists
from vision.pips.classifier import FaceReader
from vision.pips.crops import CROP_PX
from vision.reader import Reader, ReaderConfig
from vision.types import DieCandidate, FaceReading, Frame

FIXTURES = Path(__file__).parent / "fixtures"  # three real photos (nellbyler, YOLO labels)
needs_models = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state"),
    reason="models/manifest.json lists no detector, face and die-state models (models/train_*.py)",
)


class LeftHeavyModel:
    """Reads a 1 where the crop's left half is brighter than its right, else a 2, surely: a model whose
    reading changes when the crop turns, as a model unsure of a die it has never seen may."""

    def run(self, batch: NDArray[np.float32]) -> list[NDArray[np.float32]]:
        half = batch.shape[3] // 2
        left = batch[:, :, :, :half].mean(axis=(1, 2, 3)) > batch[:, :, :, half:].mean(axis=(1, 2, 3))
        out = np.full((len(batch), 6), 0.001, np.float32)
        out[left, 0] = 0.995
        out[~left, 1] = 0.995
        return [out]


def _box(x0: float, y0: float, side: float) -> DieCandidate:
    x1, y1 = x0 + side, y0 + side
    return DieCandidate(
        box_xyxy=(x0, y0, x1, y1), top_quad=((x0, y0), (x1, y0), (x1, y1), (x0, y1)), score=0.9
    )


def test_the_turns_disagree_on_a_reading_that_changes_when_the_crop_turns() -> None:
    half_white = np.zeros((CROP_PX, CROP_PX, 3), np.uint8)
    half_white[:, : CROP_PX // 2] = 255
    even = np.full((CROP_PX, CROP_PX, 3), 128, np.uint8)  # the same every way round: reads 2 each time
    reader = FaceReader(LeftHeavyModel(), second_look_below=None, turns_check=True)
    agree = reader.turns_agree([half_white, even], np.array([1, 2]))
    assert agree.tolist() == [False, True]
    frame = np.zeros((200, 200, 3), np.uint8)
    frame[:, :100] = 255
    (reading,) = reader(frame, (_box(60, 60, 80),))
    assert reading.turns_agree is False  # the reader puts it on the die's reading
    (plain,) = FaceReader(LeftHeavyModel(), second_look_below=None)(frame, (_box(60, 60, 80),))
    assert plain.turns_agree is None  # not looked at unless asked


SURE_3 = (0.01, 0.01, 0.95, 0.01, 0.01, 0.01)
PEER = ValidityConfig(require_peer_agree=True, peer_min_confidence=0.95)


@pytest.mark.parametrize(
    ("config", "reading", "whole_die", "face"),
    [
        (ValidityConfig(), FaceReading(SURE_3, None, turns_agree=False), None, 3),  # off: heeds nothing more
        (ValidityConfig(require_turns_agree=True), FaceReading(SURE_3, None, turns_agree=False), None, None),
        (
            ValidityConfig(require_turns_agree=True),
            FaceReading(SURE_3, None, turns_agree=None),
            None,
            3,
        ),  # not looked at
        (ValidityConfig(require_turns_agree=True), FaceReading(SURE_3, None, turns_agree=True), None, 3),
        (ValidityConfig(require_pip_agree=True), FaceReading(SURE_3, None), None, None),  # no count: no say
        (ValidityConfig(require_pip_agree=True), FaceReading(SURE_3, 3), None, 3),
        (ValidityConfig(require_whole_die=True), FaceReading(SURE_3, None), False, None),
        (ValidityConfig(require_whole_die=True), FaceReading(SURE_3, None), None, 3),  # no opinion: given
        # A second face model trained apart: it must read the same face at least its bar surely.
        (
            ValidityConfig(require_peer_agree=False),
            FaceReading(SURE_3, None, peer_face=4, peer_confidence=0.99),
            None,
            3,
        ),  # off
        (PEER, FaceReading(SURE_3, None, peer_face=4, peer_confidence=0.99), None, None),
        (PEER, FaceReading(SURE_3, None, peer_face=3, peer_confidence=0.93), None, None),  # under 0.95
        (PEER, FaceReading(SURE_3, None, peer_face=3, peer_confidence=0.96), None, 3),
        (PEER, FaceReading(SURE_3, None), None, 3),  # not read: no say
        (
            ValidityConfig(require_peer_agree=True),
            FaceReading(SURE_3, None, peer_face=3, peer_confidence=0.89),
            None,
            None,
        ),  # its bar is the first model's when none is named
    ],
)
def test_each_second_opinion_asked_for_must_agree_before_a_face_is_given(
    config: ValidityConfig, reading: FaceReading, whole_die: bool | None, face: int | None
) -> None:
    die = judge_die(_box(0, 0, 40), reading, config=config, whole_die=whole_die)
    assert die.face == face and die.uncertain is (face is None)


def test_a_second_model_reads_every_die_at_its_own_temperature_and_the_judge_says_why() -> None:
    frame = np.zeros((200, 200, 3), np.uint8)
    frame[:, :100] = 255  # left half bright: LeftHeavyModel reads 1
    boxes = (_box(60, 60, 80), _box(110, 20, 60))  # the second box lies on the dark half: reads 2
    peer = FaceReader(LeftHeavyModel(), second_look_below=None, peer_model=LeftHeavyModel())
    readings = peer(frame, boxes)
    assert [r.peer_face for r in readings] == [1, 2]
    assert all(r.peer_confidence is not None and r.peer_confidence > 0.99 for r in readings)
    softened = FaceReader(
        LeftHeavyModel(), second_look_below=None, peer_model=LeftHeavyModel(), peer_temperature=4.0
    )(frame, boxes)
    assert all(r.peer_confidence is not None and r.peer_confidence < 0.9 for r in softened)
    assert all(r.confidence > 0.99 for r in softened)  # the first model's reading is its own
    alone = FaceReader(LeftHeavyModel(), second_look_below=None)(frame, boxes)
    assert all(r.peer_face is None for r in alone)
    disagree = FaceReading(SURE_3, None, peer_face=5, peer_confidence=0.99)
    die = judge_die(_box(0, 0, 40), disagree, config=PEER)
    assert die.face is None and die.reasons == ("the second face model reads 5, not 3",)
    assert die.peer_face == 5  # kept on the die for the lab's records


@pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state", "pips_peer"),
    reason="models/manifest.json lists no second face model (models/faces_lite/README.md)",
)
def test_the_shipped_second_model_loads_with_its_bar_and_only_takes_faces_away() -> None:
    from vision.onnx_session import load_manifest

    spec = load_manifest()["pips_peer"]
    alone = Reader(config=ReaderConfig(peer_check=False))
    paired = Reader()
    assert "pips_peer" in paired.models and "pips_peer" not in alone.models
    assert paired.config.validity.peer_min_confidence == spec.sure_bar
    assert paired.faces.peer_temperature == spec.temperature
    given = {"alone": 0, "paired": 0}
    for item in load_dataset(FIXTURES):
        frame = Frame(image=load_image(item.path), frame_id=item.path.name)
        a = alone.read(frame, expected_dice=len(item.faces))
        b = paired.read(frame, expected_dice=len(item.faces))
        assert all(d.peer_face is None for d in a.dice)
        assert any(d.peer_face is not None for d in b.dice)
        for x, y in zip(a.dice, b.dice, strict=True):
            assert y.face is None or y.face == x.face  # heeding a second model never gives another face
            if y.face is not None and y.peer_face is not None:
                assert y.peer_face == y.face and (y.peer_confidence or 0.0) >= (spec.sure_bar or 0.0)
        given["alone"] += sum(d.face is not None for d in a.dice)
        given["paired"] += sum(d.face is not None for d in b.dice)
    assert 0 < given["paired"] <= given["alone"]


def test_a_bench_candidate_heeds_the_opinions_named() -> None:
    from lab.cli.bench_pair import candidate_config

    plain = candidate_config(opinions=False)
    assert plain == ReaderConfig()
    peer = candidate_config(opinions=False, heeds=("peer_sure", "whole_die"))
    assert peer.validity.require_peer_agree and peer.validity.require_whole_die
    assert not peer.turns_check and not peer.validity.require_turns_agree
    first = candidate_config(opinions=True)
    assert first.turns_check and first.validity.require_turns_agree and first.validity.require_whole_die


@pytest.mark.parametrize(
    ("boxes", "expected"),
    [
        # Five dice of about 40 px and a pip-sized box on the felt: the small one is no whole die.
        (
            [(0, 0, 40), (60, 0, 42), (120, 0, 38), (180, 0, 40), (240, 0, 41), (300, 0, 9)],
            [True] * 5 + [False],
        ),
        # A chip stack twice a die's size among dice.
        ([(0, 0, 40), (60, 0, 42), (120, 0, 38), (180, 0, 90)], [True, True, True, False]),
        # A see-through pip boxed inside a die's top face, whatever the median says.
        ([(0, 0, 40), (12, 12, 14)], [True, False]),
        # Two dice alone: no typical die to judge their size by.
        ([(0, 0, 40), (100, 0, 15)], [True, True]),
    ],
)
def test_a_box_must_look_like_a_whole_die(
    boxes: list[tuple[float, float, float]], expected: list[bool]
) -> None:
    assert list(whole_dice([_box(*b) for b in boxes])) == expected


def test_a_box_across_two_touching_dice_is_not_apart_and_the_judge_says_why() -> None:
    left, right = _box(0, 0, 40), _box(40, 0, 40)  # two dice side by side, touching
    across = _box(20, 0, 40)  # a box across both: each covers half of it
    assert overlaps([left, right]) == (0.0, 0.0)
    assert overlaps([left, right, across]) == (0.5, 0.5, 0.5)
    assert overlaps([left]) == (0.0,)
    config = ValidityConfig(require_apart=True)
    die = judge_die(across, FaceReading(SURE_3, None), config=config, overlap=0.5)
    assert die.face is None and "covers 50%" in die.reasons[0]
    assert judge_die(left, FaceReading(SURE_3, None), config=config, overlap=0.4).face == 3  # at the bound
    off = ValidityConfig(require_apart=False)
    assert judge_die(across, FaceReading(SURE_3, None), config=off, overlap=0.5).face == 3


def test_the_phantom_bounds_are_checked() -> None:
    with pytest.raises(ValueError, match="min_ratio"):
        PhantomConfig(min_ratio=1.2)
    with pytest.raises(ValueError, match="nested_size_ratio"):
        PhantomConfig(nested_size_ratio=1.0)
    with pytest.raises(ValueError, match="max_overlap"):
        PhantomConfig(max_overlap=0.0)


@needs_models
def test_real_photos_every_die_looked_at_and_the_options_only_take_faces_away() -> None:
    plain = Reader()
    checked = Reader(config=ReaderConfig(turns_check=True))
    strict_validity = replace(
        ValidityConfig(), require_turns_agree=True, require_pip_agree=True, require_whole_die=True
    )
    strict = Reader(config=ReaderConfig(turns_check=True, validity=strict_validity))
    given = {"plain": 0, "strict": 0}
    for item in load_dataset(FIXTURES):
        frame = Frame(image=load_image(item.path), frame_id=item.path.name)
        expected = len(item.faces)
        a = plain.read(frame, expected_dice=expected)
        b = checked.read(frame, expected_dice=expected)
        c = strict.read(frame, expected_dice=expected)
        assert [d.face for d in a.dice] == [d.face for d in b.dice]  # looking is not heeding
        assert all(d.turns_agree is not None and d.whole_die is not None for d in b.dice)
        assert all(d.turns_agree is None for d in a.dice)
        given["plain"] += sum(d.face is not None for d in a.dice)
        given["strict"] += sum(d.face is not None for d in c.dice)
        for d in c.dice:
            assert d.face is None or (d.turns_agree and d.pip_count == d.face and d.whole_die)
    # On these clear photos most faces survive every opinion, and none is added.
    assert given["plain"] * 0.3 < given["strict"] <= given["plain"]


@needs_models
def test_rendered_see_through_dice_read_with_their_table_are_whole_dice_and_a_pip_box_is_not() -> None:
    from calibration.layout import ThrowBoxLayout
    from datasets.format import read_scene
    from vision.table.geometry import TableGeometry

    reader = Reader()
    looked = 0
    for path in sorted((FIXTURES / "see_through").glob("s9700-*.json")):
        scene = read_scene(path)
        image = load_image(FIXTURES / "see_through" / scene.image)
        geometry = TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())
        roll = reader.read(Frame(image=image, frame_id=path.name), expected_dice=10, geometry=geometry)
        boxes = [d.candidate for d in roll.dice]
        # Every die found on these clear frames is a whole die by the table's die scale...
        assert all(d.whole_die is True for d in roll.dice), [
            (d.candidate.box_xyxy, d.whole_die) for d in roll.dice
        ]
        # ...and a box a pip's size at a die's centre (a see-through pip taken for a die) is not.
        x0, y0, x1, y1 = boxes[0].box_xyxy
        cx, cy, side = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 5
        pip = _box(cx - side / 2, cy - side / 2, side)
        assert whole_dice([*boxes, pip], geometry=geometry)[-1] is False
        looked += len(roll.dice)
    assert looked >= 36
