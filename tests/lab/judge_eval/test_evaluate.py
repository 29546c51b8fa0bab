"""`lab.judge_eval.evaluate.score`: what `throwbox lab eval --verdicts` counts (cocked dice read by rule,
wrong dice in rolls read valid, the split by camera)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.camera import Camera, CameraPose
from lab.judge_eval.evaluate import (
    SWEEPS,
    VALIDITY_SWEEPS,
    SceneRecord,
    TrueDie,
    camera_kind,
    frame_kind,
    plot_sweep,
    score,
    score_by_camera,
    score_by_camera_and_frame,
    score_by_scenario,
    sweep,
    sweep_default,
)
from tests.vision.fakes import one_hot
from tests.vision.test_judge_rules import FLAT, _box_at, _overhead_geometry, _state
from vision.judge.validity import ValidityConfig
from vision.state.model import COCKED, STACKED, UNDER
from vision.state.model import FLAT as FLAT_STATE
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, FaceReading


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
    assert s["recall_pct"]["cocked_flagged"] == 100.0  # marked cocked either way
    assert s["valid_no_decision_pct"] == (0.0 if read_by_rule else 100.0)


def _flat_pair(second_face_read: int, second_face_true: int | None) -> SceneRecord:
    """Two flat dice read 2 and `second_face_read` at 0.99; the second one truly `second_face_true`."""
    rec = _record(0.99)
    reads = (rec.readings[0], FaceReading(face_probs=tuple(one_hot(second_face_read, 0.99)), pip_count=None))
    truth = (rec.true_dice[0], TrueDie(rec.true_dice[1].box_xyxy, second_face_true, FLAT_STATE))
    return replace(rec, readings=reads, states=(FLAT, FLAT), true_dice=truth, truth_reasons=())


def test_a_roll_read_valid_with_a_wrong_face_is_counted() -> None:
    right, wrong = _flat_pair(5, 5), replace(_flat_pair(6, 5), scene_id="wrong")
    s = score([right, wrong], ValidityConfig())
    assert s["rolls_read_valid"] == 2
    assert s["rolls_read_valid_with_a_wrong_die"] == 1
    assert s["wrong_dice_in_rolls_read_valid"] == 1
    assert s["scenes_read_valid_with_a_wrong_die"] == [wrong.scene_id]
    # what went wrong, for a person to look at: die 2 read 6 (at 0.99, called flat), truly a flat 5
    (detail,) = s["wrong_dice_in_rolls_read_valid_detail"]
    assert detail == {
        "scene_id": "wrong",
        "die": 2,
        "read_face": 6,
        "face_p": 0.99,
        "state_called": "flat",
        "true_face": 5,
        "true_state": "flat",
        "iou": 1.0,
    }


def test_a_die_with_no_face_or_no_die_read_into_a_valid_roll_is_wrong() -> None:
    no_face = _flat_pair(5, None)  # a wedged die has no face by the rules
    far = _flat_pair(5, 5)
    far = replace(far, true_dice=(far.true_dice[0], TrueDie((0.0, 0.0, 5.0, 5.0), 5, FLAT_STATE)))
    s = score([no_face, far], ValidityConfig())
    assert s["rolls_read_valid"] == 2
    assert s["wrong_dice_in_rolls_read_valid"] == 2
    unmatched = s["wrong_dice_in_rolls_read_valid_detail"][1]
    assert (unmatched["true_face"], unmatched["true_state"], unmatched["iou"]) == (None, None, 0.0)


def test_a_roll_settles_wrong_by_its_faces_not_by_which_die_shows_them() -> None:
    """The wagers are settled on how many dice show each face: a roll read valid with the right faces on
    swapped or badly boxed dice is a wrong die but a right settlement; a wrong face, a die with no face by
    the rules, or a roll that was not valid settle wrong."""
    right = replace(_flat_pair(5, 5), true_faces=(2, 5))
    swapped = replace(_flat_pair(2, 5), scene_id="swapped", true_faces=(2, 5))  # read 5, 2 on dice 2, 5
    swapped = replace(swapped, readings=(FaceReading(face_probs=tuple(one_hot(5, 0.99)), pip_count=5),))
    swapped = replace(swapped, readings=(*swapped.readings, FaceReading(tuple(one_hot(2, 0.99)), None)))
    far = replace(_flat_pair(5, 5), scene_id="far", true_faces=(2, 5))
    far = replace(far, true_dice=(far.true_dice[0], TrueDie((0.0, 0.0, 5.0, 5.0), 5, FLAT_STATE)))
    wrong = replace(_flat_pair(6, 5), scene_id="wrong", true_faces=(2, 5))
    no_face = replace(_flat_pair(5, None), scene_id="no_face", true_faces=(2, None))
    not_valid = replace(_flat_pair(5, 5), scene_id="not_valid", truth_verdict="invalid", true_faces=(2, 5))
    s = score([right, swapped, far, wrong, no_face, not_valid], ValidityConfig())
    assert s["rolls_read_valid"] == 6
    # per die, a roll that was not valid but whose dice are right is no wrong die (it is in the confusion)
    assert s["scenes_read_valid_with_a_wrong_die"] == ["swapped", "far", "wrong", "no_face"]
    assert s["scenes_read_valid_settled_wrong"] == ["wrong", "no_face", "not_valid"]
    assert s["rolls_read_valid_settled_wrong"] == 3
    # records without their true faces (kept before the field existed) give no settlement figure
    assert score([_flat_pair(5, 5)], ValidityConfig())["rolls_read_valid_settled_wrong"] is None


def _tilted(rec: SceneRecord, tilt_deg: float) -> SceneRecord:
    cam = rec.geometry.camera
    dy = 900.0 * np.tan(np.radians(tilt_deg))
    pose = CameraPose.look_at(
        eye_mm=(300.0, 225.0 - dy, 900.0), target_mm=(300.0, 225.0, 0.0), up=(0.0, 1.0, 0.0)
    )
    geo = TableGeometry(camera=Camera(cam.intrinsics, pose), layout=rec.geometry.layout)
    return replace(rec, geometry=geo)


def test_scores_split_by_camera_tilt() -> None:
    top = _flat_pair(6, 5)  # a wrong face, seen from straight above
    oblique = _tilted(_flat_pair(5, 5), 30.0)
    assert camera_kind(top) == "top_down" and camera_kind(oblique) == "oblique"
    assert _tilted(top, 5.0).geometry.camera.pose.tilt_deg == pytest.approx(5.0, abs=1e-6)
    split = score_by_camera([top, oblique], ValidityConfig())
    assert split["top_down"]["scenes"] == 1 and split["oblique"]["scenes"] == 1
    assert split["top_down"]["wrong_dice_in_rolls_read_valid"] == 1
    assert split["oblique"]["wrong_dice_in_rolls_read_valid"] == 0
    assert list(score_by_camera([top], ValidityConfig())) == ["top_down"]  # no empty group


def test_the_sweep_shows_wrong_settlements_per_threshold() -> None:
    """A threshold that leaves a wrongly read die to a person stops a wrong settlement: the sweep shows it.

    Two rolls: one read right, one with a die read 6 (truly 5) whose flat call is only 0.6 sure, so
    `min_state_confidence` above 0.6 makes that roll `state_uncertain` instead of a wrong settlement.
    """
    right = _flat_pair(5, 5)
    wrong = replace(_flat_pair(6, 5), scene_id="wrong", states=(FLAT, _state("flat", p=0.6)))
    rows = {
        r["min_state_confidence"]: r for r in sweep([right, wrong], ValidityConfig())["min_state_confidence"]
    }
    assert rows[0.5]["rolls_read_valid_with_a_wrong_die"] == 1
    assert rows[0.5]["read_valid_wrong_pct"] == 50.0  # 1 wrong of the 2 rolls read valid
    assert rows[0.7]["rolls_read_valid_with_a_wrong_die"] == 0
    assert rows[0.7]["read_valid_wrong_pct"] == 0.0  # the right roll is still read valid


def _short_count(geo: TableGeometry) -> SceneRecord:
    """A roll of two dice with one left the table: one die found."""
    box = _box_at(geo, 300.0, 200.0)
    quad = ((box[0], box[1]), (box[2], box[1]), (box[2], box[3]), (box[0], box[3]))
    cand = DieCandidate(box_xyxy=box, top_quad=quad, score=0.9)
    return SceneRecord(
        scene_id="off",
        truth_verdict="invalid",
        truth_reasons=("missing",),
        expected_dice=2,
        candidates=(cand,),
        readings=(FaceReading(face_probs=tuple(one_hot(2, 0.99)), pip_count=None),),
        states=(FLAT,),
        geometry=geo,
        true_dice=(TrueDie(box, 2, FLAT_STATE),),
    )


def test_off_table_recall_is_also_given_where_the_throw_box_is_wholly_in_view() -> None:
    """675a.4(b); issue 5: a short count means a die left the table only with the throw box fully visible."""
    seen = _overhead_geometry()
    assert seen.box_in_view()
    # The same camera lowered over the box's middle: part of the box floor leaves the frame.
    pose = CameraPose.look_at(eye_mm=(300.0, 225.0, 300.0), target_mm=(300.0, 225.0, 0.0), up=(0.0, 1.0, 0.0))
    cut = TableGeometry(camera=Camera(seen.camera.intrinsics, pose), layout=seen.layout)
    assert not cut.box_in_view()
    s = score([_short_count(seen), replace(_short_count(cut), scene_id="cut")], ValidityConfig())
    assert s["confusion_truth_rows_read_cols"]["invalid"] == {
        "valid": 0,
        "invalid": 1,
        "void": 0,
        "no_decision": 1,
    }
    assert s["recall_pct"]["die_off_table"] == 50.0
    assert s["support"]["die_off_table"] == 2
    assert s["recall_pct"]["die_off_table_box_in_view"] == 100.0
    assert s["support"]["die_off_table_box_in_view"] == 1


def test_rolls_are_also_scored_by_camera_and_frame() -> None:
    """A frame blurred by camera shake is scored apart from the still frames (`throwbox lab eval
    --verdicts`)."""
    still = replace(_flat_pair(5, 5), motion_blur_px=0)
    shaken = replace(_flat_pair(5, 5), scene_id="shaken", motion_blur_px=6)
    assert (frame_kind(still), frame_kind(shaken)) == ("still", "motion_blur")
    assert frame_kind(_flat_pair(5, 5)) == "unknown"  # a record whose label did not say
    by = score_by_camera_and_frame([still, shaken, replace(still, scene_id="still 2")], ValidityConfig())
    assert sorted(by) == ["top_down/motion_blur", "top_down/still"]
    assert by["top_down/still"]["valid_rolls"] == 2
    assert by["top_down/motion_blur"]["valid_rolls"] == 1


def test_rolls_are_also_scored_by_scenario_in_the_generators_order() -> None:
    """Where good rolls go to a person: each scenario scored apart, in `SCENARIOS` order, a record whose
    label named none as "unknown"; a short count counts under its own scenario, not the others."""
    geo = _overhead_geometry()
    normal = replace(_flat_pair(5, 5), scenario="normal")
    gone = replace(_short_count(geo), scenario="off_table")
    cocked = replace(_flat_pair(6, 5), scene_id="cocked", scenario="cocked")
    by = score_by_scenario(
        [gone, cocked, normal, replace(normal, scene_id="old", scenario="")], ValidityConfig()
    )
    assert list(by) == ["normal", "cocked", "off_table", "unknown"]
    assert by["normal"]["valid_rolls"] == 1 and by["unknown"]["valid_rolls"] == 1
    assert by["off_table"]["valid_rolls"] == 0 and by["off_table"]["support"]["die_off_table"] == 1
    assert (
        by["cocked"]["wrong_dice_in_rolls_read_valid"] == 1
        and by["normal"]["wrong_dice_in_rolls_read_valid"] == 0
    )


def test_the_sweep_shows_the_cocked_face_bar() -> None:
    """675a.4(c): a cocked die read by rule settles on its face, so the sweep shows what each bar for that
    face lets through. A cocked die read 5 at 0.975 (truly 2) is read by rule at the shipped 0.97 and left to
    a person from 0.98; a right one at 0.99 is read by rule up to 0.99."""
    right = replace(_record(0.99), true_faces=(2, 5))
    wrong = replace(
        _record(0.975),
        scene_id="wrong",
        true_faces=(2, 2),
        true_dice=(right.true_dice[0], replace(right.true_dice[1], face=2)),
    )
    s = score([right, wrong], ValidityConfig())
    assert s["cocked_read_by_rule_wrong"] == 1 and s["cocked_value_right_pct"] == 50.0
    rows = {
        r["min_cocked_face_confidence"]: r
        for r in sweep([right, wrong], ValidityConfig())["min_cocked_face_confidence"]
    }
    assert rows[0.97]["cocked_read_by_rule_wrong"] == 1
    assert rows[0.97]["cocked_value_wrong_pct"] == 50.0
    assert rows[0.97]["rolls_read_valid_settled_wrong"] == 1
    assert rows[0.98]["cocked_read_by_rule_wrong"] == 0
    assert rows[0.98]["cocked_value_wrong_pct"] == 0.0  # the right one, read alone
    assert rows[0.98]["recall_cocked_read_by_rule_pct"] == 50.0
    assert rows[0.98]["rolls_read_valid"] == 1 and rows[0.98]["rolls_read_valid_settled_wrong"] == 0
    assert rows[0.995]["recall_cocked_read_by_rule_pct"] == 0.0
    assert rows[0.995]["cocked_value_wrong_pct"] is None  # none read by rule: no rate to give


def test_die_on_die_recall_is_also_given_where_the_die_beneath_is_in_view() -> None:
    """675a.4(b): a die resting on another die. A die beneath that hardly shows is missed, which leaves a
    short count (the judge says die_off_table, invalid either way); the recall of the reason die_on_die is
    also given over the rolls whose die beneath is in view, where two dice can be seen one on the other."""
    geo = _overhead_geometry()
    low, high = _box_at(geo, 300.0, 200.0), _box_at(geo, 303.0, 201.0)
    cands = tuple(
        DieCandidate(box_xyxy=b, top_quad=((b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])), score=0.9)
        for b in (low, high)
    )
    both_seen = SceneRecord(
        scene_id="both seen",
        truth_verdict="invalid",
        truth_reasons=("stacked",),
        expected_dice=2,
        candidates=cands,
        readings=tuple(FaceReading(face_probs=tuple(one_hot(f, 0.99)), pip_count=None) for f in (3, 4)),
        states=(_state("under"), _state("stacked")),
        geometry=geo,
        true_dice=(TrueDie(low, 3, UNDER), TrueDie(high, 4, STACKED)),
    )
    # The die beneath wholly hidden: one die in view, taken for flat, and the count short by one.
    hidden = replace(
        _short_count(geo),
        scene_id="hidden",
        truth_reasons=("stacked",),
        true_dice=(TrueDie(low, 2, STACKED),),
    )
    # Both dice in view, but seen as two flat dice apart in a game of three: a short count, invalid for a die
    # gone (die_off_table), not die_on_die: it counts against this recall though the roll is called invalid.
    missed = replace(
        both_seen,
        scene_id="missed",
        expected_dice=3,
        states=(FLAT, FLAT),
        candidates=(cands[0], _far_cand(geo)),
    )
    s = score([both_seen, hidden], ValidityConfig())
    assert s["confusion_truth_rows_read_cols"]["invalid"]["invalid"] == 2
    assert s["recall_pct"]["die_on_die"] == 50.0
    assert s["recall_pct"]["die_on_die_invalid_any_reason"] == 100.0
    assert s["support"]["die_on_die"] == 2
    assert s["recall_pct"]["die_on_die_beneath_in_view"] == 100.0
    assert s["support"]["die_on_die_beneath_in_view"] == 1
    s = score([both_seen, hidden, missed], ValidityConfig())
    assert s["confusion_truth_rows_read_cols"]["invalid"]["invalid"] == 3
    assert s["recall_pct"]["die_on_die_invalid_any_reason"] == 100.0
    assert s["recall_pct"]["die_on_die_beneath_in_view"] == 50.0
    assert s["support"]["die_on_die_beneath_in_view"] == 2


def test_the_sweep_shows_the_reader_face_bar() -> None:
    """The reader's certainty bar for any face (`ValidityConfig.min_confidence`, 0.90) is swept too: a die
    read under it is uncertain and its roll `no_decision` (face_uncertain), above it the face settles the
    roll. A right 5 read at 0.85 and a wrong 6 (truly 5) at 0.75: both left to a person at 0.9, the right
    one settled once the bar is under 0.85, the wrong one too once it is under 0.75."""

    def unsure(face_read: int, p: float, name: str) -> SceneRecord:
        rec = _flat_pair(face_read, 5)
        second = FaceReading(face_probs=tuple(one_hot(face_read, p)), pip_count=None)
        return replace(rec, scene_id=name, readings=(rec.readings[0], second), true_faces=(2, 5))

    records = [unsure(5, 0.85, "right"), unsure(6, 0.75, "wrong")]
    rows = {r["min_confidence"]: r for r in sweep(records, ValidityConfig())["min_confidence"]}
    assert sweep_default("min_confidence") == 0.9
    assert rows[0.9]["rolls_read_valid"] == 0 and rows[0.9]["valid_no_decision_pct"] == 100.0
    assert rows[0.8]["rolls_read_valid"] == 1 and rows[0.8]["rolls_read_valid_settled_wrong"] == 0
    assert rows[0.7]["rolls_read_valid"] == 2 and rows[0.7]["rolls_read_valid_settled_wrong"] == 1
    assert rows[0.7]["valid_no_decision_pct"] == 0.0


def _far_cand(geo: TableGeometry) -> DieCandidate:
    """A die's box well apart from the others of `test_die_on_die_recall...`."""
    b = _box_at(geo, 400.0, 300.0)
    return DieCandidate(
        box_xyxy=b, top_quad=((b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])), score=0.9
    )


def test_the_sweep_plot_has_a_panel_for_every_swept_bar(tmp_path: Path) -> None:
    """`throwbox lab eval --verdicts` draws one panel per swept bar, the reader's face bar among them."""
    curves = sweep([_flat_pair(5, 5)], ValidityConfig())
    assert set(curves) == set(SWEEPS) | set(VALIDITY_SWEEPS)
    path = tmp_path / "sweep.png"
    plot_sweep(curves, path, "two dice")
    image = cv2.imread(str(path))
    assert image is not None
    assert image.shape[0] == 400 * ((len(curves) + 1) // 2)  # 4 inches a row of two panels, at 100 dpi
