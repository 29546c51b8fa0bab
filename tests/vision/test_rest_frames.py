"""Frames of the same rest must agree before a face is sure (vision/judge/rest_frames.py, issue 55)."""

from __future__ import annotations

import pytest

from vision.judge.rest_frames import agree_over_frames
from vision.types import DieCandidate, DieReading, Roll, Verdict


def _die(x: float, face: int | None) -> DieReading:
    probs = tuple(0.95 if k + 1 == face else 0.01 for k in range(6))
    cand = DieCandidate(
        box_xyxy=(x, 0.0, x + 40.0, 40.0), top_quad=((x, 0), (x + 40, 0), (x + 40, 40), (x, 40)), score=0.9
    )
    return DieReading(candidate=cand, face=face, face_probs=probs, uncertain=face is None)


def _roll(*dice: DieReading, verdict: Verdict = Verdict.VALID) -> Roll:
    return Roll(
        dice=dice, verdict=verdict, reasons=(), expected_dice=len(dice),
        faces=tuple(d.face for d in dice if d.face is not None), frame_id="f", table_id=None, models={},
        timing_ms={"total": 1.0},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("later", "faces", "verdict"),
    [
        ([], (3, 5), Verdict.VALID),  # one frame: nothing to agree with
        ([_roll(_die(2, 3), _die(101, 5))], (3, 5), Verdict.VALID),  # a pixel's shift, the same faces
        ([_roll(_die(0, 3), _die(100, 6))], (3,), Verdict.NO_DECISION),  # the second frame reads a 6
        ([_roll(_die(0, 3))], (3,), Verdict.NO_DECISION),  # the second die not found again
        ([_roll(_die(0, 3), _die(100, 5)), _roll(_die(0, 4), _die(100, 5))], (5,), Verdict.NO_DECISION),
    ],
)
def test_a_face_stays_sure_only_where_every_frame_of_the_rest_reads_it(
    later: list[Roll], faces: tuple[int, ...], verdict: Verdict
) -> None:
    out = agree_over_frames([_roll(_die(0, 3), _die(100, 5)), *later])
    assert out.faces == faces and out.verdict is verdict
    assert all(d.uncertain == (d.face is None) for d in out.dice)


def test_a_roll_already_left_to_a_person_or_sent_back_keeps_its_verdict() -> None:
    invalid = _roll(_die(0, 3), _die(100, 5), verdict=Verdict.INVALID)
    assert agree_over_frames([invalid, _roll(_die(0, 4), _die(100, 5))]).verdict is Verdict.INVALID
    with pytest.raises(ValueError, match="no roll"):
        agree_over_frames([])
