"""Detections the die-state classifier calls `no_die` are set aside (vision.judge.validity), not read as dice.

Hand-made dice and die states, no models: a chip stack taken for an eleventh die must not make a good
roll `extra_dice`; a set-aside detection stays visible (JSON and evidence frame); and nothing is set
aside unless the count is over the game's, never more than the surplus, so setting aside never makes a
short count that would call a die off the table (675a.4(b)) on the strength of a misjudged die.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.vision.fakes import one_hot
from vision.annotate import GREY, annotate
from vision.judge.validity import Judgement, ValidityConfig, judge
from vision.state.model import STATE_LABELS, DieState
from vision.types import DieCandidate, FaceReading, Roll, Verdict

CFG = ValidityConfig()


def _cand(x: float, edge: float = 20.0) -> DieCandidate:
    return DieCandidate(
        box_xyxy=(x, 100.0, x + edge, 100.0 + edge),
        top_quad=((x, 100.0), (x + edge, 100.0), (x + edge, 100.0 + edge), (x, 100.0 + edge)),
        score=0.8,
    )


def _state(label: str, p: float) -> DieState:
    rest = (1.0 - p) / (len(STATE_LABELS) - 1)
    return DieState(probs=tuple(p if k == label else rest for k in STATE_LABELS), tilt_deg=0.0)


def _judge(
    p_no_die: float | list[float],
    *,
    n_dice: int,
    expected: int | None,
    config: ValidityConfig = CFG,
) -> Judgement:
    """`n_dice` flat dice read 3, then detections (chip stacks) with p(no_die) = `p_no_die` each."""
    others = p_no_die if isinstance(p_no_die, list) else [p_no_die]
    cands = tuple(_cand(40.0 * i) for i in range(n_dice + len(others)))
    reads = tuple(FaceReading(face_probs=tuple(one_hot(3)), pip_count=3) for _ in cands)
    states = [_state("flat", 0.97)] * n_dice + [_state("no_die", p) for p in others]
    return judge(cands, reads, expected_dice=expected, config=config, states=states)


def test_a_detection_called_no_die_is_set_aside_and_the_roll_is_read() -> None:
    out = _judge(0.95, n_dice=3, expected=3)
    assert out.verdict is Verdict.VALID and len(out.dice) == 3
    assert [a.box_xyxy for a in out.set_aside] == [_cand(120.0).box_xyxy]
    assert out.set_aside[0].p_no_die == pytest.approx(0.95) and out.set_aside[0].score == pytest.approx(0.8)


def test_below_the_threshold_it_stays_but_is_never_read_as_a_die() -> None:
    """Most likely no die but not sure enough to set aside: kept, and a person looks (object_unclear)."""
    out = _judge(CFG.judge.min_no_die - 0.05, n_dice=3, expected=3)
    assert out.set_aside == () and len(out.dice) == 4 and out.verdict is Verdict.NO_DECISION
    assert {(f.reason, f.die_ids) for f in out.findings} == {("extra_dice", ()), ("object_unclear", (4,))}


def test_nothing_is_set_aside_with_the_count_at_or_under_the_games_or_without_a_count() -> None:
    """A real die of a style the classifier never saw may look like no die to it: only a surplus goes.

    What stays and looks like no die makes the roll `object_unclear` (a person looks): never read as a die
    of a valid roll, and never the reason for a die off the table either.
    """
    at = _judge(0.99, n_dice=2, expected=3)  # the "no die" may be the third die, or a chip over it
    assert at.set_aside == () and len(at.dice) == 3 and at.verdict is Verdict.NO_DECISION
    assert [(f.reason, f.die_ids) for f in at.findings] == [("object_unclear", (3,))]
    assert "p=0.99" in at.findings[0].detail
    under = _judge(0.99, n_dice=1, expected=3)  # 675a.4(b) from the count, not from a misjudged die
    assert under.set_aside == () and len(under.dice) == 2 and under.verdict is Verdict.INVALID
    assert [f.reason for f in under.findings] == ["die_off_table", "object_unclear"]
    photo = _judge(0.99, n_dice=3, expected=None)  # an arbitrary photo: every detection is shown
    assert photo.set_aside == () and len(photo.dice) == 4 and photo.verdict is Verdict.NO_DECISION


def test_never_more_than_the_surplus_and_the_surest_first() -> None:
    out = _judge([0.8, 0.99, 0.9], n_dice=2, expected=3)  # five detections, two too many
    assert sorted(a.p_no_die for a in out.set_aside) == pytest.approx([0.9, 0.99])
    # the third chip stays (the count needs it): it is not read as a die of a valid roll
    assert len(out.dice) == 3 and out.verdict is Verdict.NO_DECISION
    assert [(f.reason, f.die_ids) for f in out.findings] == [("object_unclear", (3,))]


def test_threshold_one_keeps_every_detection() -> None:
    keep_all = replace(CFG, judge=replace(CFG.judge, min_no_die=1.0))
    assert _judge(0.999, n_dice=3, expected=3, config=keep_all).set_aside == ()


def test_set_aside_is_in_the_json_and_drawn_grey() -> None:
    out = _judge(0.95, n_dice=3, expected=3)
    roll = Roll(
        dice=out.dice,
        verdict=out.verdict,
        reasons=out.reasons,
        expected_dice=3,
        faces=(3, 3, 3),
        frame_id="f",
        table_id=None,
        models={},
        timing_ms={},
        findings=out.findings,
        set_aside=out.set_aside,
    )
    assert roll.as_dict()["set_aside"] == [
        {
            "box_xyxy": [120.0, 100.0, 140.0, 120.0],
            "score": 0.8,
            "p_no_die": 0.95,
            "reason": "no_die",
            "marker_id": None,
            "likeness": None,
        }
    ]
    drawn = annotate(np.zeros((300, 300, 3), np.uint8), roll)
    edge = drawn[100:121, 120]  # the set-aside box's left side
    assert np.any(np.all(edge == np.array(GREY, np.uint8), axis=-1))


def test_the_dice_after_a_set_aside_detection_keep_their_own_findings() -> None:
    """Die ids in findings are positions among the kept dice: a chip in the middle shifts those after it."""
    cands = tuple(_cand(40.0 * i) for i in range(4))
    reads = (
        FaceReading(face_probs=tuple(one_hot(3)), pip_count=3),
        FaceReading(face_probs=tuple(one_hot(3)), pip_count=3),  # the chip stack (set aside)
        FaceReading(face_probs=tuple(one_hot(3)), pip_count=3),
        FaceReading(face_probs=tuple(one_hot(4, 0.6)), pip_count=None),  # an unsure face
    )
    states = [_state("flat", 0.97), _state("no_die", 0.99), _state("flat", 0.97), _state("flat", 0.97)]
    out = judge(cands, reads, expected_dice=3, config=CFG, states=states)
    assert [a.box_xyxy for a in out.set_aside] == [cands[1].box_xyxy]
    assert [d.candidate for d in out.dice] == [cands[0], cands[2], cands[3]]
    ((reason, (die_id,)),) = [(f.reason, f.die_ids) for f in out.findings]
    assert reason == "face_uncertain" and out.dice[die_id - 1].candidate == cands[3] and die_id == 3
