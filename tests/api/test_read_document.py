"""The read document at the api edge: the reader's `Roll` with the rules engine's Pip Street winner and Like
Kind count (`api.read_document`; vision/ imports no rules/)."""

from __future__ import annotations

import json

import pytest

from api.read_document import classify_faces, read_document, winner_and_count
from vision.types import DieCandidate, DieReading, Roll, Verdict


@pytest.mark.parametrize(
    ("faces", "winner", "match_count"),
    [
        ((5, 5, 5, 5, 6, 6, 6, 1, 1, 4), 5, 4),  # docs/architecture.md's example
        ((1, 1, 6, 6, 2, 3, 4, 5, 2, 3), 1, 2),  # ties go to the higher rank: the ace
        ((1, 2, 3, 4, 5, 6), 1, "no match"),  # six dice, all different (675a.6(d)(2))
        ((3, 3, 2), 3, 2),  # a photo of three dice: same rule
        ((), None, None),
    ],
)
def test_classify_faces_uses_the_rules_engine(
    faces: tuple[int, ...], winner: int | None, match_count: int | str | None
) -> None:
    assert classify_faces(faces) == (winner, match_count)


def _roll(faces: tuple[int, ...], verdict: Verdict) -> Roll:
    dice = tuple(
        DieReading(
            candidate=DieCandidate(
                box_xyxy=(30.0 * i, 0.0, 30.0 * i + 20.0, 20.0),
                top_quad=((30.0 * i, 0.0), (30.0 * i + 20.0, 0.0), (30.0 * i + 20.0, 20.0), (30.0 * i, 20.0)),
                score=0.9,
            ),
            face=f,
            face_probs=tuple(1.0 if k == f else 0.0 for k in range(1, 7)),
        )
        for i, f in enumerate(faces)
    )
    return Roll(
        dice=dice,
        verdict=verdict,
        reasons=() if verdict is Verdict.VALID else ("made up for the test",),
        expected_dice=len(faces),
        faces=faces,
        frame_id="f",
        table_id=None,
        models={},
        timing_ms={"total": 1.0},
    )


def test_the_document_has_the_winner_and_count_after_the_faces_in_the_contracts_order() -> None:
    doc = read_document(_roll((1, 2, 3, 4, 5, 6), Verdict.VALID))
    keys = list(doc)
    assert keys[keys.index("faces") + 1 : keys.index("faces") + 4] == ["winner", "match_count", "frame_id"]
    assert (doc["winner"], doc["match_count"]) == (1, "no match")
    # Everything else is the roll's own form, unchanged.
    assert {k: v for k, v in doc.items() if k not in ("winner", "match_count")} == _roll(
        (1, 2, 3, 4, 5, 6), Verdict.VALID
    ).as_dict()
    assert json.loads(json.dumps(doc)) == doc


@pytest.mark.parametrize("verdict", [Verdict.INVALID, Verdict.VOID, Verdict.NO_DECISION])
def test_only_a_valid_roll_is_classified(verdict: Verdict) -> None:
    roll = _roll((5, 5, 5, 5, 6, 6, 6, 1, 1, 4), verdict)
    assert winner_and_count(roll) == (None, None)
    doc = read_document(roll)
    assert (doc["winner"], doc["match_count"]) == (None, None)
