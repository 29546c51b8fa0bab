"""`vision.judge.evaluate.score`: what `throwbox eval --verdicts` counts as a cocked die read by rule."""

from __future__ import annotations

import pytest

from tests.vision.fakes import one_hot
from tests.vision.test_judge_rules import FLAT, _box_at, _overhead_geometry, _state
from vision.judge.evaluate import SceneRecord, TrueDie, score
from vision.judge.state import COCKED
from vision.judge.state import FLAT as FLAT_STATE
from vision.types import DieCandidate, FaceReading
from vision.validity import ValidityConfig


def _record(cocked_face_p: float) -> SceneRecord:
    geo = _overhead_geometry()
    boxes = [_box_at(geo, 250.0, 200.0), _box_at(geo, 350.0, 200.0)]
    cands = tuple(
        DieCandidate(box_xyxy=b, top_quad=((b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])), score=0.9)
        for b in boxes
    )
    reads = (
        FaceReading(face_probs=tuple(one_hot(2, 0.99)), pip_count=2),
        FaceReading(face_probs=tuple(one_hot(5, cocked_face_p)), pip_count=None),
    )
    return SceneRecord(
        scene_id="s",
        truth_verdict="valid",
        truth_reasons=("cocked",),
        expected_dice=2,
        candidates=cands,
        readings=reads,
        states=(FLAT, _state("cocked", tilt=30.0)),
        geometry=geo,
        true_dice=(TrueDie(boxes[0], 2, FLAT_STATE), TrueDie(boxes[1], 5, COCKED)),
    )


@pytest.mark.parametrize(("face_p", "read_by_rule"), [(0.99, 100.0), (0.93, 0.0)])
def test_a_cocked_die_counts_as_read_by_rule_only_when_the_judge_read_it(
    face_p: float, read_by_rule: float
) -> None:
    """A cocked call the judge left to a person keeps its face and mark, but is no reading by rule."""
    s = score([_record(face_p)], ValidityConfig())
    assert s["support"]["cocked_dice"] == 1
    assert s["recall_pct"]["cocked_read_by_rule"] == read_by_rule
    assert s["valid_no_decision_pct"] == (0.0 if read_by_rule else 100.0)
