"""The judge: count check and the low-confidence / disagreement rule -> no_decision, never a guess."""

from __future__ import annotations

import pytest

from tests.vision.fakes import one_hot
from vision.judge.validity import ValidityConfig, judge
from vision.types import DieCandidate, FaceReading, Verdict


def _cand(x: float) -> DieCandidate:
    return DieCandidate(
        box_xyxy=(x, 10.0, x + 20.0, 30.0),
        top_quad=((x, 10.0), (x + 20, 10.0), (x + 20, 30.0), (x, 30.0)),
        score=0.9,
    )


CFG = ValidityConfig()


@pytest.mark.parametrize(
    ("readings", "expected", "verdict", "faces", "reason"),
    [
        # all sure, classical agrees or abstains: valid
        ([(one_hot(5), 5), (one_hot(2), None)], 2, Verdict.VALID, (5, 2), None),
        # one die fewer than the game needs
        ([(one_hot(5), 5)], 2, Verdict.NO_DECISION, (5,), "expected 2 dice, found 1"),
        # no count given: any number is fine
        ([(one_hot(5), 5)], None, Verdict.VALID, (5,), None),
        # the learned classifier is unsure
        ([(one_hot(3, 0.6), 3)], None, Verdict.NO_DECISION, (), "low confidence 0.60"),
        # the two opinions disagree
        ([(one_hot(4), 6)], None, Verdict.NO_DECISION, (), "classifier reads 4 but the pip count is 6"),
        # nothing on the table
        ([], None, Verdict.NO_DECISION, (), "no dice found"),
    ],
)
def test_judge(
    readings: list[tuple[list[float], int | None]],
    expected: int | None,
    verdict: Verdict,
    faces: tuple[int, ...],
    reason: str | None,
) -> None:
    cands = tuple(_cand(30.0 * i) for i in range(len(readings)))
    reads = tuple(FaceReading(face_probs=tuple(p), pip_count=c) for p, c in readings)
    out = judge(cands, reads, expected_dice=expected, config=CFG)
    assert out.verdict is verdict
    assert tuple(d.face for d in out.dice if d.face is not None) == faces
    if reason is None:
        assert out.reasons == ()
    else:
        assert any(reason in r for r in out.reasons), out.reasons


def test_veto_can_be_limited_to_unsure_reads() -> None:
    cfg = ValidityConfig(veto_below_confidence=0.95)
    reads = (FaceReading(face_probs=tuple(one_hot(4, 0.99)), pip_count=6),)
    assert judge((_cand(0),), reads, expected_dice=1, config=cfg).verdict is Verdict.VALID
    reads = (FaceReading(face_probs=tuple(one_hot(4, 0.93)), pip_count=6),)
    assert judge((_cand(0),), reads, expected_dice=1, config=cfg).verdict is Verdict.NO_DECISION


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_confidence": 1.5}, "min_confidence"),
        ({"veto_below_confidence": -0.1}, "veto_below_confidence"),
    ],
)
def test_config_is_validated(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ValidityConfig(**kwargs)


def test_mismatched_lengths_are_an_error() -> None:
    with pytest.raises(ValueError, match="1 candidates but 0"):
        judge((_cand(0),), (), expected_dice=None, config=CFG)
