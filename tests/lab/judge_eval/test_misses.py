"""The miss analysis (lab/judge_eval/misses.py): why a labelled-valid roll was not read valid, counted.

Hand-made model outputs on the committed valid frame (tests/vision/fixtures/judge, seed 700): each case
breaks one thing the judge reacts to and checks the cause the analysis measures against the truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.layout import ThrowBoxLayout
from datasets.format import SceneTruth, read_scene
from lab.judge_eval.evaluate import MIN_VISIBLE, SceneRecord, one_hot, true_dice_of
from lab.judge_eval.misses import Miss, contact_sheet, find_misses, tally
from tests.vision.test_judge_rules import FLAT, _state
from vision.judge.validity import ValidityConfig
from vision.state.model import DieState
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, FaceReading

FIXTURES = Path(__file__).resolve().parents[2] / "vision" / "fixtures" / "judge"


@pytest.fixture(scope="module")
def scene() -> SceneTruth:
    return read_scene(FIXTURES / "valid.json")


def _record(scene: SceneTruth, keep: list[int], states: Sequence[DieState] | None = None) -> SceneRecord:
    """The true boxes and faces of the scene's dice `keep` (indices into the visible dice), flat states."""
    seen = [d for d in scene.dice if d.in_image and d.visible_fraction >= MIN_VISIBLE]
    cands = tuple(DieCandidate(box_xyxy=seen[i].box_xyxy, top_quad=seen[i].top_quad, score=0.9) for i in keep)
    reads = tuple(FaceReading(face_probs=one_hot(seen[i].face or 1), pip_count=None) for i in keep)
    return SceneRecord(
        scene_id=scene.scene_id,
        truth_verdict=scene.verdict,
        truth_reasons=scene.reasons,
        expected_dice=scene.expected_dice,
        candidates=cands,
        readings=reads,
        states=tuple(states) if states is not None else (FLAT,) * len(keep),
        geometry=TableGeometry(camera=scene.camera, layout=ThrowBoxLayout()),
        true_dice=true_dice_of(scene),
    )


def _misses(scene: SceneTruth, rec: SceneRecord) -> list[Miss]:
    return find_misses([rec], {scene.scene_id: scene}, ValidityConfig())


def test_a_valid_roll_read_valid_has_no_miss(scene: SceneTruth) -> None:
    assert scene.verdict == "valid" and scene.expected_dice == 10
    assert _misses(scene, _record(scene, list(range(10)))) == []


def test_a_die_the_detector_missed_is_counted_as_seen_but_not_found(scene: SceneTruth) -> None:
    (miss,) = _misses(scene, _record(scene, list(range(9))))
    assert miss.reason in ("die_off_table", "count_mismatch") and miss.die_ids == ()
    assert miss.cause == "short count: 1 seen but not found"


def test_a_die_found_twice_is_named(scene: SceneTruth) -> None:
    misses = _misses(scene, _record(scene, [*range(10), 3]))
    assert misses and all(m.scene_id == scene.scene_id for m in misses)
    causes = {m.cause for m in misses}
    assert causes & {"same die twice", "0 found where no die is, 1 dice found twice"}, causes


def test_a_weak_state_call_names_the_true_state_of_the_die(scene: SceneTruth) -> None:
    states = [FLAT] * 10
    states[4] = _state("outside", p=0.6)  # below min_rethrow_confidence: state_uncertain
    (miss,) = _misses(scene, _record(scene, list(range(10)), states))
    assert (miss.reason, miss.die_ids, miss.read_verdict) == ("state_uncertain", (5,), "no_decision")
    assert miss.cause.startswith("flat")
    summary = tally([miss, replace(miss, scene_id="other")])
    assert summary["rolls_by_read_verdict"] == {"no_decision": 2}
    assert summary["findings_by_cause"] == {f"state_uncertain: {miss.cause}": 2}


def test_contact_sheet_draws_one_tile_per_miss(scene: SceneTruth) -> None:
    read = cv2.imread(str(FIXTURES / scene.image), cv2.IMREAD_COLOR)
    assert read is not None
    image = np.asarray(read, np.uint8)
    misses = _misses(scene, _record(scene, list(range(9))))
    states = [FLAT] * 10
    states[4] = _state("outside", p=0.6)
    misses += _misses(scene, _record(scene, list(range(10)), states))
    sheet = contact_sheet(misses, lambda _: image, columns=2)
    assert sheet.shape == (196, 320, 3) and sheet.dtype == np.uint8
    # The second tile is a crop around the named die, its box drawn in red.
    assert np.any(np.all(sheet[:160, 160:] == (0, 0, 255), axis=-1))
    with pytest.raises(ValueError, match="columns"):
        contact_sheet(misses, lambda _: image, columns=0)
