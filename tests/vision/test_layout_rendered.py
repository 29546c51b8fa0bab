"""The dealer's move into the layout box (58 Pa. Code 593.4(e)) checked on rendered frames, right and wrong.

Four committed frames (tests/fixtures/layout, seed 820: see its LICENSE) show the table after the dealer's
move: the right move, the winning dice in another face's box, one winning die left in the throw area, and
a die of another face moved in too. Each label's `layout_move` records the first roll and the move, so the
problems `vision.judge.layout_check.check_layout_move` must find are worked out here from the record (by
593.4(e): exactly the first roll's winning dice, in the winner's box), not from the check itself.

Three levels, each on the same frames:
- the table geometry alone: readings with the true faces, placed by the calibration from the true die
  boxes (tests `TableGeometry` and the check; no model);
- the face and die-state models and the judge on the true die boxes (the detector stands aside);
- the whole reader (`vision.reader.Reader` with the committed models).
Where the models' accuracy makes a case fail, the case is xfail(strict=True) with what was measured, so a
better model that passes it fails the run until the mark is lifted.

The new generator scenarios are also checked in physics (no rendering): each stages what it records.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from calibration.layout import LAYOUT_LABELS, ThrowBoxLayout
from datasets.format import (
    FormatError,
    LayoutMoveTruth,
    SceneTruth,
    read_scene,
    scene_from_dict,
    scene_to_dict,
)
from datasets.synth.generator import GeneratorConfig, simulate_scene
from datasets.synth.truth import physical_truth
from lab.layout_eval import expected_problems
from vision.judge.layout_check import LayoutCheck, check_layout_move
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, Frame

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "layout"
CASES: tuple[tuple[str, str], ...] = (  # fixture, the dealer's error it shows
    ("correct", "none"),
    ("wrong_box", "wrong_box"),
    ("missing", "missing"),
    ("extra", "extra"),
)
Expected = dict[str, tuple[int, ...]]  # problem code -> the scene's die ids it concerns


def load_case(case: str) -> tuple[SceneTruth, np.ndarray, LayoutMoveTruth]:
    scene = read_scene(FIXTURES / f"{case}.json")
    image = cv2.imread(str(FIXTURES / scene.image), cv2.IMREAD_COLOR)
    assert image is not None, scene.image
    assert scene.layout_move is not None, f"{case}: the label records no layout_move"
    return scene, np.asarray(image, np.uint8), scene.layout_move


def geometry_of(scene: SceneTruth) -> TableGeometry:
    """The table calibration of a rendered frame: its camera over the generator's default throw box."""
    return TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())


def found(check: LayoutCheck, to_scene: list[int | None]) -> Expected:
    """The check's problems with the reader's die indices turned into the scene's die ids."""
    out: Expected = {}
    for p in check.problems:
        ids = [to_scene[i] for i in p.die_ids]
        out[p.reason] = tuple(sorted(-1 if i is None else i for i in ids))
    return out


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match_to_scene(dice: tuple[DieReading, ...], scene: SceneTruth) -> list[int | None]:
    """Each read die's scene die id (best box overlap, IoU >= 0.3), or None for a die that is not there."""
    out: list[int | None] = []
    for d in dice:
        best = max(scene.dice, key=lambda t: _iou(d.candidate.box_xyxy, t.box_xyxy))
        out.append(best.id if _iou(d.candidate.box_xyxy, best.box_xyxy) >= 0.3 else None)
    return out


# ------------------------------------------------------------------------------------ labels and physics
@pytest.mark.parametrize(("case", "error"), CASES, ids=[c[0] for c in CASES])
def test_fixture_label_records_the_move_the_frame_shows(case: str, error: str) -> None:
    scene, image, move = load_case(case)
    assert move.error == error
    assert image.shape == (scene.camera.intrinsics.height_px, scene.camera.intrinsics.width_px, 3)
    assert scene.verdict == "valid" and len(scene.dice) == scene.expected_dice == 10
    assert move.match_count == len(move.right_dice) >= 2
    # Where each die lies after the move (the physics' truth) is what the record says the dealer did.
    for d in scene.dice:
        assert d.layout_box == (move.moved_to if d.id in move.moved else None), d.id
        assert d.face == move.first_faces[d.id] and not d.cocked  # moved dice keep the face they showed
    assert (move.moved_to != move.winner) == (error == "wrong_box")


@pytest.mark.parametrize(("case", "error"), CASES, ids=[c[0] for c in CASES])
def test_593_4_e_layout_move_from_the_table_geometry(case: str, error: str) -> None:
    """True faces, placed in a layout box by the calibration from each die's box in the frame."""
    scene, _, move = load_case(case)
    geometry = geometry_of(scene)
    dice = tuple(
        DieReading(
            candidate=DieCandidate(box_xyxy=t.box_xyxy, top_quad=t.top_quad, score=1.0),
            face=t.face,
            face_probs=tuple(1.0 if t.face == k else 0.0 for k in range(1, 7)),
            layout_box=geometry.layout_label(*geometry.centre_mm(t.box_xyxy)),
        )
        for t in scene.dice
    )
    assert [d.layout_box for d in dice] == [
        None if t.layout_box is None else LAYOUT_LABELS[t.layout_box] for t in scene.dice
    ]
    check = check_layout_move(dice=dice, winner=move.winner, match_count=move.match_count)
    assert found(check, list(range(len(dice)))) == expected_problems(move)
    assert check.ok is (error == "none")
    assert check.in_winner_box == sum(1 for t in scene.dice if t.layout_box == move.winner)


SCENARIOS = ("layout", "layout_wrong_box", "layout_missing", "layout_extra")


@pytest.mark.parametrize("n_dice", [10, 6])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_stages_the_move_it_records(scenario: str, n_dice: int) -> None:
    layout = ThrowBoxLayout()
    for index in range(3):
        outcome = simulate_scene(GeneratorConfig(seed=31, n_dice=n_dice, mix={scenario: 1.0}), index)
        move = outcome.layout_move
        if move is None:  # a staging that failed is a plain throw, and says so
            assert "staging failed" in outcome.note or scenario == "layout", outcome.note
            continue
        assert move.error == {"layout": "none"}.get(scenario, scenario.removeprefix("layout_"))
        result = outcome.result
        truths = [physical_truth(p, c, layout) for p, c in zip(result.poses, result.contacts, strict=True)]
        assert len(move.first_faces) == len(truths) == n_dice
        in_boxes = {i: t.layout_box for i, t in enumerate(truths) if t.layout_box is not None}
        assert in_boxes == dict.fromkeys(move.moved, move.moved_to), outcome.note
        right, moved = set(move.right_dice), set(move.moved)
        if move.error == "none":
            assert moved == right
        elif move.error == "wrong_box":
            assert moved == right and move.moved_to != move.winner
        elif move.error == "missing":
            assert moved < right and len(right - moved) == 1
        else:
            assert moved > right and len(moved - right) == 1
        for i, t in enumerate(truths):  # every die shows the face it showed on the first roll
            assert t.face == move.first_faces[i] and not (t.cocked or t.stacked or t.off_table)


def test_layout_move_round_trips_and_old_labels_still_read() -> None:
    doc: dict[str, Any] = json.loads((FIXTURES / "missing.json").read_text(encoding="utf-8"))
    scene = scene_from_dict(doc)
    assert scene_from_dict(scene_to_dict(scene)) == scene
    old = {k: v for k, v in doc.items() if k != "layout_move"}  # a label written before the field
    assert scene_from_dict(old).layout_move is None
    assert "layout_move" not in scene_to_dict(scene_from_dict(old))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"winner": 7}, "winner and moved_to must be 1..6"),  # not a face
        ({"match_count": 1}, "match_count 1 is not how many"),  # disagrees with first_faces
        ({"error": "late"}, "error must be one of"),  # unknown error kind
        ({"moved": [10]}, "moved names a die"),  # no die 10 among ten dice
        ({"moved_to": 1}, "moved_to differs from winner exactly when"),  # "missing" into another box
        ({"winner": None}, "malformed layout_move"),  # not a number
    ],
)
def test_malformed_layout_move_is_a_format_error(change: dict[str, Any], message: str) -> None:
    doc: dict[str, Any] = json.loads((FIXTURES / "missing.json").read_text(encoding="utf-8"))
    doc["layout_move"] = {**doc["layout_move"], **change}
    with pytest.raises(FormatError, match=message):
        scene_from_dict(doc)


# ----------------------------------------------------------------------------------------------- models
# Where the committed models fail these frames, and why (measured 20:46 UTC, detector 2026-11-29T20:42Z,
# pips 2026-11-29T20:41Z, die_state 2026-11-29T20:11Z). Layout boxes and the judge's geometry are not the
# cause: on the true boxes every die gets its true layout box and face, and all four cases pass. (Detectors
# trained without dice in layout boxes, up to 20:16Z, found none of the 15 boxed dice here; 20:42Z, trained
# with layout scenes too, finds 10, one twice, which is not yet enough for any case.)
MODEL_XFAIL: dict[str, dict[str, str]] = {
    "true_boxes": {},
    # Detector 21:16Z (trained with the layout scenes twice over) reads all four cases right.
    "whole_reader": {},
}


def _cases(level: str) -> list[Any]:
    return [
        pytest.param(
            case,
            marks=[pytest.mark.xfail(strict=True, reason=MODEL_XFAIL[level][case])]
            if case in MODEL_XFAIL[level]
            else [],
            id=case,
        )
        for case, _ in CASES
    ]


@pytest.fixture
def reader(committed_reader: Any) -> Any:
    return committed_reader


@pytest.mark.parametrize("case", _cases("true_boxes"))
def test_593_4_e_layout_move_with_the_face_models_on_the_true_boxes(case: str, reader: Any) -> None:
    from vision.judge.validity import judge

    scene, image, move = load_case(case)
    cands = tuple(DieCandidate(box_xyxy=t.box_xyxy, top_quad=t.top_quad, score=1.0) for t in scene.dice)
    out = judge(
        cands,
        reader.faces(image, cands),
        expected_dice=None,
        config=reader.config.validity,
        states=reader.die_state(image, cands),
        geometry=geometry_of(scene),
    )
    check = check_layout_move(dice=out.dice, winner=move.winner, match_count=move.match_count)
    assert found(check, list(range(len(cands)))) == expected_problems(move), [
        (i, t.face, d.face, d.layout_box) for i, (t, d) in enumerate(zip(scene.dice, out.dice, strict=True))
    ]
    assert check.in_winner_box == sum(1 for t in scene.dice if t.layout_box == move.winner)


@pytest.mark.parametrize("case", _cases("whole_reader"))
def test_593_4_e_layout_move_read_by_the_whole_reader(case: str, reader: Any) -> None:
    scene, image, move = load_case(case)
    roll = reader.read(Frame(image=image, frame_id=case), expected_dice=None, geometry=geometry_of(scene))
    check = check_layout_move(dice=roll.dice, winner=move.winner, match_count=move.match_count)
    to_scene = match_to_scene(roll.dice, scene)
    assert found(check, to_scene) == expected_problems(move), [
        (to_scene[i], d.face, d.layout_box) for i, d in enumerate(roll.dice)
    ]
    assert check.in_winner_box == sum(1 for t in scene.dice if t.layout_box == move.winner)


@pytest.mark.parametrize("case", [c for c, _ in CASES])
def test_the_move_evaluation_reads_and_checks_as_the_live_loop(case: str, reader: Any) -> None:
    """`lab.layout_eval.check_scene` (behind `throwbox lab eval --layout-moves`) reads the frame as the live
    loop does (no expected count, the frame's calibration), checks it with the table's dice count, and records
    what the check named, right or not."""
    from lab.layout_eval import check_scene

    scene, image, move = load_case(case)
    roll = reader.read(Frame(image=image, frame_id=case), expected_dice=None, geometry=geometry_of(scene))
    check = check_layout_move(
        dice=roll.dice, winner=move.winner, match_count=move.match_count, dice_on_table=scene.expected_dice
    )
    outcome = check_scene(reader, scene, image)
    assert outcome is not None
    assert outcome.scene_id == scene.scene_id and outcome.error == move.error
    assert outcome.named == tuple(p.reason for p in check.problems)
    assert outcome.expected == tuple(expected_problems(move))
    assert outcome.in_winner_box == check.in_winner_box and outcome.accused is check.dealer_error
    assert outcome.truly_in_winner_box == sum(1 for t in scene.dice if t.layout_box == move.winner)
    assert check_scene(reader, replace(scene, layout_move=None), image) is None  # a plain throw: no move
