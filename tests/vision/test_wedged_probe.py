"""The second look for a wedged die within a box called no die (vision/state/probe.py; 675a.4(c): void).

Hand-made detections and a fake die-state classifier that answers by where its crop is centred, no models:
the probe runs only where the count needs a detection called no die, asks at a grid within that box, and
replaces the detection by a die of the frame's typical size at the surest wedged centre, which the judge
then calls void, naming the second look. Nothing else moves. The whole reader on the committed wedged
frame is in tests/vision/test_judge_frames.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import cast

import numpy as np
import pytest

from tests.vision.fakes import one_hot
from vision.judge.config import JudgeConfig
from vision.judge.validity import ValidityConfig, judge
from vision.state.model import STATE_LABELS, DieState, DieStateClassifier
from vision.state.probe import (
    grid_centres,
    look_again,
    probe_wedged,
    read_by_state,
    reread_cocked,
)
from vision.types import DieCandidate, FaceReading, Verdict

ON = JudgeConfig(wedged_probe_min=0.99)
IMAGE = np.zeros((300, 600, 3), np.uint8)


def _cand(x: float, edge: float = 20.0, y: float = 100.0) -> DieCandidate:
    return DieCandidate(
        box_xyxy=(x, y, x + edge, y + edge),
        top_quad=((x, y), (x + edge, y), (x + edge, y + edge), (x, y + edge)),
        score=0.8,
    )


def _state(label: str, p: float) -> DieState:
    rest = (1.0 - p) / (len(STATE_LABELS) - 1)
    return DieState(probs=tuple(p if k == label else rest for k in STATE_LABELS), tilt_deg=40.0)


class FakeStates:
    """Answers 'wedged' (p_wedged) for crops centred within `radius` px of `wedged_at`, 'no_die' elsewhere."""

    def __init__(self, wedged_at: tuple[float, float], p_wedged: float = 0.999, radius: float = 4.0) -> None:
        self.wedged_at, self.p_wedged, self.radius = wedged_at, p_wedged, radius
        self.asked: list[list[tuple[float, float]]] = []

    def at_centres(
        self, image_bgr: np.ndarray, centres: Sequence[tuple[float, float]], *, ref_px: float
    ) -> tuple[DieState, ...]:
        self.asked.append(list(centres))
        wx, wy = self.wedged_at
        return tuple(
            _state("wedged", self.p_wedged)
            if np.hypot(x - wx, y - wy) <= self.radius
            else _state("no_die", 0.99)
            for x, y in centres
        )


def _roll(extra_no_die: int = 0) -> tuple[tuple[DieCandidate, ...], tuple[DieState, ...]]:
    """Three flat dice and a detection at x=200 (box 200..230, larger: it slid onto a chip stack) called no
    die; `extra_no_die` more no-die detections further right."""
    cands = [_cand(10.0), _cand(50.0), _cand(90.0), _cand(200.0, edge=30.0)]
    states = [_state("flat", 0.99)] * 3 + [_state("no_die", 0.99)]
    for k in range(extra_no_die):
        cands.append(_cand(300.0 + 40 * k))
        states.append(_state("no_die", 0.99))
    return tuple(cands), tuple(states)


def _probe(
    fake: FakeStates, *, expected: int | None = 4, config: JudgeConfig = ON, extra_no_die: int = 0
) -> tuple[tuple[DieCandidate, ...], tuple[DieState, ...]]:
    cands, states = _roll(extra_no_die)
    return probe_wedged(
        IMAGE,
        cands,
        states,
        expected_dice=expected,
        classifier=cast(DieStateClassifier, fake),
        config=config,
    )


def test_grid_covers_the_box_corners_included_and_a_small_box_by_its_centre() -> None:
    pts = grid_centres((200.0, 100.0, 230.0, 130.0), 5.0)
    assert len(pts) == 7 * 7
    assert (200.0, 100.0) in pts and (230.0, 130.0) in pts
    assert grid_centres((10.0, 10.0, 12.0, 13.0), 5.0) == [(11.0, 11.5)]


def test_a_needed_no_die_box_hiding_a_wedged_die_becomes_that_die_and_the_roll_is_void() -> None:
    fake = FakeStates(wedged_at=(220.0, 110.0))
    cands, states = _probe(fake)
    assert len(fake.asked) == 1  # one box probed: the no-die one
    # the frame's typical die is 20 px (median long side of 20, 20, 20, 30): a 20-px box at the grid point
    # (step 0.25 x 20 = 5 px from the box's corner) nearest the wedged die
    assert cands[3].box_xyxy == pytest.approx((210.0, 100.0, 230.0, 120.0))
    assert states[3].probed and states[3].label == "wedged"
    assert cands[:3] == _roll()[0][:3] and states[:3] == _roll()[1][:3]
    readings = tuple(FaceReading(face_probs=one_hot(f), pip_count=None) for f in (1, 2, 3, 4))
    j = judge(cands, readings, expected_dice=4, config=ValidityConfig(judge=ON), states=states)
    assert j.verdict is Verdict.VOID
    (void,) = [f for f in j.findings if f.reason == "cocked_multi_side"]
    assert void.die_ids == (4,) and "second look" in void.detail


def test_without_the_probe_the_same_roll_is_left_to_a_person() -> None:
    cands, states = _roll()
    readings = tuple(FaceReading(face_probs=one_hot(f), pip_count=None) for f in (1, 2, 3, 4))
    j = judge(cands, readings, expected_dice=4, config=ValidityConfig(), states=states)
    assert j.verdict is Verdict.NO_DECISION
    assert any(f.reason == "object_unclear" for f in j.findings)


@pytest.mark.parametrize(
    ("why", "kwargs", "fake"),
    [
        ("off", {"config": JudgeConfig(wedged_probe_min=None)}, FakeStates((220.0, 110.0))),
        ("no count to need it", {"expected": None}, FakeStates((220.0, 110.0))),
        ("the count is met without it", {"expected": 3}, FakeStates((220.0, 110.0))),
        ("nothing wedged in the box", {}, FakeStates((400.0, 250.0))),
        ("wedged, but under the bar", {}, FakeStates((220.0, 110.0), p_wedged=0.98)),
    ],
)
def test_nothing_changes(why: str, kwargs: dict[str, object], fake: FakeStates) -> None:
    cands, states = _probe(fake, **kwargs)  # type: ignore[arg-type]
    assert (cands, states) == _roll(), why


def test_no_die_boxes_are_probed_only_while_the_count_needs_one() -> None:
    # 3 flat dice and 2 no-die detections for a game of 4: 3 < 4, the count needs one: both are probed
    fake = FakeStates(wedged_at=(220.0, 110.0))
    _, states = _probe(fake, expected=4, extra_no_die=1)
    assert len(fake.asked) == 2 and states[3].probed and not states[4].probed
    # ... and with 3 flat dice + 2 no-die boxes for a game of 3, none is needed: nothing is asked
    fake = FakeStates(wedged_at=(220.0, 110.0))
    assert _probe(fake, expected=3, extra_no_die=1) == _roll(1)
    assert fake.asked == []


def test_config_refuses_a_bad_bar_or_step() -> None:
    with pytest.raises(ValueError, match="wedged_probe_min"):
        JudgeConfig(wedged_probe_min=1.5)
    with pytest.raises(ValueError, match="wedged_probe_step"):
        JudgeConfig(wedged_probe_step=0.0)
    assert replace(ON, wedged_probe_min=None).wedged_probe_min is None


def test_one_wedged_die_seen_from_two_boxes_is_found_once() -> None:
    # a second no-die box overlapping the first: both grids reach the wedged die at (220, 110)
    cands, states = _roll()
    cands = (*cands, _cand(215.0, edge=30.0))
    states = (*states, _state("no_die", 0.99))
    fake = FakeStates(wedged_at=(220.0, 110.0))
    out_c, out_s = probe_wedged(
        IMAGE, cands, states, expected_dice=5, classifier=cast(DieStateClassifier, fake), config=ON
    )
    assert len(fake.asked) == 2
    assert [s.probed for s in out_s] == [False, False, False, True, False]
    assert out_c[4] == cands[4] and out_s[4] == states[4]


def test_the_face_of_a_die_found_by_the_second_look_is_read_from_its_new_box() -> None:
    """`look_again` reads the faces after the second look: the die it found is read from its new box, not
    from the box that slid onto the chip stack, and every die is read once."""
    fake = FakeStates(wedged_at=(220.0, 110.0))
    cands, states = _roll()
    asked: list[tuple[DieCandidate, ...]] = []

    def read_faces(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        asked.append(cs)
        return tuple(FaceReading(face_probs=one_hot(1 + len(asked)), pip_count=None) for _ in cs)

    common = {"expected_dice": 4, "classifier": cast(DieStateClassifier, fake), "config": ON}
    new_c, new_s, new = look_again(IMAGE, cands, states, read_faces=read_faces, **common)
    assert new_s[3].probed and new_c[3] != cands[3]
    assert asked == [new_c]  # one call: the three flat dice and the wedged die by its new box
    assert [r.learned_face for r in new] == [2, 2, 2, 2]
    # with a face model for cocked dice, the wedged die found is read by it, the flat dice by the other
    asked.clear()
    by_cocked: list[tuple[DieCandidate, ...]] = []

    def read_cocked(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        by_cocked.append(cs)
        return tuple(FaceReading(face_probs=one_hot(6), pip_count=None) for _ in cs)

    _, _, again = look_again(IMAGE, cands, states, read_faces=read_faces, read_cocked=read_cocked, **common)
    assert asked == [new_c[:3]] and by_cocked == [(new_c[3],)]
    assert [r.learned_face for r in again] == [2, 2, 2, 6]


def test_read_by_state_reads_each_die_once_by_the_model_its_state_calls_for() -> None:
    cands = tuple(_cand(10.0 + 40 * k) for k in range(5))
    states = (
        _state("flat", 0.99),
        _state("cocked", 0.95),
        _state("flat", 0.99),
        _state("wedged", 0.9),
        _state("stacked", 0.9),
    )
    calls: list[tuple[str, tuple[DieCandidate, ...]]] = []

    def reader(name: str, face: int) -> Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]]:
        def read(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
            calls.append((name, cs))
            return tuple(FaceReading(face_probs=one_hot(face), pip_count=None) for _ in cs)

        return read

    got = read_by_state(cands, states, read_faces=reader("main", 1), read_cocked=reader("cocked", 6))
    assert [r.learned_face for r in got] == [1, 6, 1, 6, 1]
    assert calls == [("main", (cands[0], cands[2], cands[4])), ("cocked", (cands[1], cands[3]))]
    # no face model for cocked dice, or no states: every die by the main one, in one call
    calls.clear()
    assert [r.learned_face for r in read_by_state(cands, states, read_faces=reader("main", 2))] == [2] * 5
    assert [
        r.learned_face
        for r in read_by_state(cands, None, read_faces=reader("main", 3), read_cocked=reader("cocked", 6))
    ] == [3] * 5
    assert calls == [("main", cands), ("main", cands)]
    # every die called cocked: the main reader is not asked; no dice: nobody is
    calls.clear()
    all_cocked = (_state("cocked", 0.95),) * 5
    read_by_state(cands, all_cocked, read_faces=reader("main", 1), read_cocked=reader("cocked", 6))
    assert calls == [("cocked", cands)]
    assert read_by_state((), (), read_faces=reader("main", 1), read_cocked=reader("cocked", 6)) == ()
    assert len(calls) == 1
    with pytest.raises(ValueError, match="die states"):
        read_by_state(cands, states[:2], read_faces=reader("main", 1), read_cocked=reader("cocked", 6))
    with pytest.raises(ValueError, match="read 0 dice of 3"):
        read_by_state(cands, states, read_faces=lambda cs: (), read_cocked=reader("cocked", 6))


def test_a_wedged_box_too_big_for_one_die_is_looked_in_only_when_asked() -> None:
    # four dice of 20 px and a detection of 34 px (1.7 times) called wedged: the size guard would stop it
    cands = (_cand(10.0), _cand(50.0), _cand(90.0), _cand(130.0), _cand(200.0, edge=34.0))
    states = (*(_state("flat", 0.99),) * 4, _state("wedged", 0.999))
    fake = FakeStates(wedged_at=(225.0, 110.0))
    probe = cast(DieStateClassifier, fake)
    not_asked = replace(ON, wedged_probe_oversized=False)
    assert probe_wedged(IMAGE, cands, states, expected_dice=5, classifier=probe, config=not_asked) == (
        cands,
        states,
    )
    oversized = replace(ON, wedged_probe_oversized=True)
    out_c, out_s = probe_wedged(IMAGE, cands, states, expected_dice=5, classifier=probe, config=oversized)
    assert out_s[4].probed and out_c[4].box_xyxy == pytest.approx((215.0, 100.0, 235.0, 120.0))
    readings = tuple(FaceReading(face_probs=one_hot(f), pip_count=None) for f in (1, 2, 3, 4, 5))
    before = judge(cands, readings, expected_dice=5, config=ValidityConfig(judge=oversized), states=states)
    after = judge(out_c, readings, expected_dice=5, config=ValidityConfig(judge=oversized), states=out_s)
    assert before.verdict is Verdict.NO_DECISION and after.verdict is Verdict.VOID
    # a box of one die's size called wedged is left alone: the judge calls it void as it is
    small = (*cands[:4], _cand(200.0))
    assert probe_wedged(IMAGE, small, states, expected_dice=5, classifier=probe, config=oversized) == (
        small,
        states,
    )


def test_a_die_called_cocked_is_read_again_turned_and_only_it() -> None:
    """`reread_cocked` (the closer look at a cocked die): the face stage reads again, turned, each die the
    die-state model calls cocked (one side resting or more) and no other; off, nothing is read again."""
    cands = (_cand(10.0), _cand(50.0), _cand(90.0))
    states = (_state("flat", 0.99), _state("cocked", 0.9), _state("wedged", 0.9))
    old = tuple(FaceReading(face_probs=one_hot(f, 0.98), pip_count=None) for f in (1, 2, 3))
    asked: list[tuple[DieCandidate, ...]] = []

    def read_turned(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        asked.append(cs)
        return tuple(FaceReading(face_probs=one_hot(6, 0.7), pip_count=None) for _ in cs)

    on = JudgeConfig(cocked_turned_looks=True)
    new = reread_cocked(cands, states, old, read_turned=read_turned, config=on)
    assert asked == [(cands[1], cands[2])]
    assert new[0] == old[0] and new[1].learned_face == 6 and new[2].learned_face == 6
    off = JudgeConfig(cocked_turned_looks=False)
    assert reread_cocked(cands, states, old, read_turned=read_turned, config=off) == old and len(asked) == 1


def test_the_closer_look_can_send_a_cocked_die_read_surely_once_to_a_person() -> None:
    """A cocked die read 0.98 from its crop as it lies but less surely turned goes to a person, not read by
    rule (675a.4(c)); read as surely turned, it is read by rule."""
    cands = (_cand(10.0), _cand(50.0), _cand(90.0))
    states = (_state("flat", 0.99), _state("flat", 0.99), replace(_state("cocked", 0.95), tilt_deg=25.0))
    first = (
        FaceReading(face_probs=one_hot(1, 0.98), pip_count=1),
        FaceReading(face_probs=one_hot(2, 0.98), pip_count=2),
        FaceReading(face_probs=one_hot(4, 0.98), pip_count=None),
    )

    on = JudgeConfig(cocked_turned_looks=True)
    config = ValidityConfig(judge=on)
    # read once, at 0.98: by rule
    once = judge(cands, first, expected_dice=3, config=config, states=states)
    assert once.verdict is Verdict.VALID and [f.reason for f in once.findings] == ["cocked_read_by_rule"]

    def turned_at(p: float) -> tuple[FaceReading, ...]:
        return reread_cocked(
            cands,
            states,
            first,
            read_turned=lambda cs: tuple(FaceReading(face_probs=one_hot(4, p), pip_count=None) for _ in cs),
            config=on,
        )

    unsure = judge(cands, turned_at(0.93), expected_dice=3, config=config, states=states)
    assert unsure.verdict is Verdict.NO_DECISION
    assert [f.reason for f in unsure.findings] == ["cocked_unclear"]
    sure = judge(cands, turned_at(0.99), expected_dice=3, config=config, states=states)
    assert sure.verdict is Verdict.VALID and sure.dice[2].face == 4 and sure.dice[2].cocked
    assert [f.reason for f in sure.findings] == ["cocked_read_by_rule"]


def test_look_again_takes_the_closer_look_only_when_given_the_turned_reader() -> None:
    """The reader and `throwbox lab eval --verdicts` both call `look_again`: with `read_turned` the dice
    called cocked are read again turned; without it (the oracle) they are not."""
    cands = (_cand(10.0), _cand(50.0), _cand(90.0))
    states = (_state("flat", 0.99), _state("flat", 0.99), _state("cocked", 0.95))
    fake = FakeStates(wedged_at=(999.0, 999.0))
    asked: list[tuple[DieCandidate, ...]] = []

    def read_faces(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        return tuple(FaceReading(face_probs=one_hot(1, 0.98), pip_count=None) for _ in cs)

    def read_turned(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        asked.append(cs)
        return tuple(FaceReading(face_probs=one_hot(5, 0.9), pip_count=None) for _ in cs)

    on = JudgeConfig(cocked_turned_looks=True)
    common = {"expected_dice": 3, "classifier": cast(DieStateClassifier, fake), "config": on}
    _, _, new = look_again(IMAGE, cands, states, read_faces=read_faces, read_turned=read_turned, **common)
    assert asked == [(cands[2],)] and [r.learned_face for r in new] == [1, 1, 5]
    _, _, same = look_again(IMAGE, cands, states, read_faces=read_faces, **common)
    assert [r.learned_face for r in same] == [1, 1, 1] and len(asked) == 1


def test_reread_cocked_refuses_states_that_do_not_match_the_dice() -> None:
    cands = (_cand(10.0), _cand(50.0))
    old = tuple(FaceReading(face_probs=one_hot(f), pip_count=None) for f in (1, 2))
    with pytest.raises(ValueError, match="die states"):
        reread_cocked(
            cands,
            (_state("cocked", 0.9),),
            old,
            read_turned=lambda cs: (),
            config=JudgeConfig(cocked_turned_looks=True),
        )


def test_look_again_reads_the_dice_called_cocked_with_the_face_model_for_them() -> None:
    """With `read_cocked` (the manifest's `pips_cocked`) each die called cocked, one side resting or more, is
    read by it and not by the main face model, before the closer look; the flat dice by the main one.
    Without it every die is read by the main one."""
    cands = (_cand(10.0), _cand(50.0), _cand(90.0))
    states = (_state("flat", 0.99), _state("cocked", 0.95), _state("wedged", 0.9))
    fake = FakeStates(wedged_at=(999.0, 999.0))
    asked: list[tuple[DieCandidate, ...]] = []
    by_main: list[tuple[DieCandidate, ...]] = []

    def read_faces(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        by_main.append(cs)
        return tuple(FaceReading(face_probs=one_hot(1, 0.98), pip_count=None) for _ in cs)

    def read_cocked(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        asked.append(cs)
        return tuple(FaceReading(face_probs=one_hot(6, 0.99), pip_count=None) for _ in cs)

    common = {"expected_dice": 3, "classifier": cast(DieStateClassifier, fake), "config": JudgeConfig()}
    _, _, new = look_again(IMAGE, cands, states, read_faces=read_faces, read_cocked=read_cocked, **common)
    assert asked == [cands[1:]] and by_main == [cands[:1]]
    assert [r.learned_face for r in new] == [1, 6, 6]
    _, _, same = look_again(IMAGE, cands, states, read_faces=read_faces, **common)
    assert [r.learned_face for r in same] == [1, 1, 1] and by_main[-1] == cands and len(asked) == 1
    # With the closer look on too, the cocked dice are read by the cocked model first, then turned.
    order: list[str] = []

    def turned(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        order.append("turned")
        return tuple(FaceReading(face_probs=one_hot(5, 0.99), pip_count=None) for _ in cs)

    def cocked_first(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
        order.append("cocked")
        return read_cocked(cs)

    both = {**common, "config": JudgeConfig(cocked_turned_looks=True)}
    _, _, last = look_again(
        IMAGE, cands, states, read_faces=read_faces, read_turned=turned, read_cocked=cocked_first, **both
    )
    assert order == ["cocked", "turned"] and [r.learned_face for r in last] == [1, 5, 5]
