"""`lab.layout_eval.score_moves`: the figures of `throwbox lab eval --layout-moves` (593.4(e))."""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.layout_eval import MoveOutcome, score_moves
from vision.judge.layout_check import DOUBT_CODES


def _move(
    sid: str, error: str, expected: tuple[str, ...], named: tuple[str, ...], box: int = 3
) -> MoveOutcome:
    accused = any(code not in DOUBT_CODES for code in named)
    return MoveOutcome(sid, error, expected, named, in_winner_box=box, truly_in_winner_box=3, accused=accused)


def test_false_alarms_misses_and_exact_reports_are_counted_per_move_kind() -> None:
    rows = [
        _move("ok", "none", (), ()),  # a right move, no alert
        _move("false", "none", (), ("extra_dice",), box=4),  # a right move accused: a false alarm
        _move("look", "none", (), ("count_unsure",), box=2),  # a right move the reader cannot vouch for
        _move("caught", "wrong_box", ("wrong_box", "missing_match"), ("missing_match", "wrong_box"), box=0),
        _move("half", "missing", ("missing_match", "match_left_behind"), ("missing_match",), box=2),
        _move("through", "extra", ("wrong_face", "extra_dice"), ()),  # a wrong move let through
    ]
    s = score_moves(rows)
    assert s["moves"] == 6
    assert s["right_moves_dealer_error"] == 1 and s["scenes_right_move_dealer_error"] == ["false"]
    assert s["right_moves_alerted"] == 2 and s["right_moves_alerted_pct"] == round(100 * 2 / 3, 2)
    assert s["scenes_right_move_alerted"] == ["false", "look"]
    assert s["right_move_false_alarm_codes"] == {"extra_dice": 1, "count_unsure": 1}
    assert s["wrong_moves_dealer_error"] == 2 and s["wrong_moves_dealer_error_pct"] == round(100 * 2 / 3, 2)
    assert s["wrong_moves_not_alerted"] == 1 and s["scenes_wrong_move_not_alerted"] == ["through"]
    assert s["wrong_moves_alerted_pct"] == round(100 * 2 / 3, 2)
    # exact: the right move with no alert and the wrong box named in another order (2 of 6)
    assert s["exact_pct"] == round(100 * 2 / 6, 2)
    assert s["by_kind"]["none"] == {
        "moves": 3,
        "alerts": 2,
        "alert_pct": round(100 * 2 / 3, 2),
        "dealer_errors": 1,
        "dealer_error_pct": round(100 / 3, 2),
        "exact": 1,
        "exact_pct": round(100 / 3, 2),
        "winner_box_count_right": 1,
    }
    assert s["by_kind"]["missing"]["alerts"] == 1 and s["by_kind"]["missing"]["exact"] == 0
    assert set(s["by_kind"]) == {"none", "wrong_box", "missing", "extra"}
    assert score_moves([])["right_moves_alerted_pct"] is None  # no moves: no rate


def test_extra_rolls_are_counted_settled_right_wrong_or_left_to_a_person() -> None:
    from lab.layout_eval import ExtraRollOutcome, score_extra_rolls

    rows = [
        ExtraRollOutcome("right", "valid", True, None),
        ExtraRollOutcome("wrong", "valid", False, None),  # posted valid with other rethrown faces
        ExtraRollOutcome("left", "no_decision", False, "layout_unverified"),
        ExtraRollOutcome("accused", "no_decision", False, "dealer_error"),
        ExtraRollOutcome("sent back", "invalid", False, None),
    ]
    s = score_extra_rolls(rows)
    assert (s["extra_rolls"], s["settled_right"], s["settled_wrong"]) == (5, 1, 1)
    assert (s["left_to_a_person"], s["sent_back"]) == (2, 1)  # no_decision; invalid is a rethrow, no look
    assert s["settled_right_pct"] == 20.0 and s["left_to_a_person_pct"] == 40.0 and s["sent_back_pct"] == 20.0
    assert s["posted_verdicts"] == {"invalid": 1, "no_decision": 2, "valid": 2}
    assert s["alerts"] == {"layout_unverified": 1, "dealer_error": 1}
    assert s["scenes_settled_wrong"] == ["wrong"] and s["scenes_sent_back"] == ["sent back"]
    assert s["dealer_errors"] == [{"scene_id": "accused", "problems": []}]


def _extra_roll_scene() -> Any:
    """The committed valid judge frame's label made an Extra Roll: the dice showing die 0's face kept in
    that face's box (only the label changes; the stub reader below never looks at the picture)."""
    from dataclasses import replace
    from pathlib import Path

    from datasets.format import read_scene

    scene = read_scene(Path(__file__).resolve().parents[1] / "vision" / "fixtures" / "judge" / "valid.json")
    winner = scene.dice[0].face
    dice = tuple(
        replace(d, kept=d.face == winner, layout_box=winner if d.face == winner else None) for d in scene.dice
    )
    return replace(scene, dice=dice)


class _StubReader:
    """Reads every frame as the scene's true dice (the kept ones in the winner's box), one face changed."""

    def __init__(self, scene: Any, wrong_face_at: int | None = None) -> None:
        self.scene, self.wrong = scene, wrong_face_at

    def read(self, frame: Any, *, expected_dice: int | None = None, geometry: Any = None) -> Any:
        from calibration.layout import LAYOUT_LABELS
        from tests.vision.test_layout_check import die
        from vision.types import Roll, Verdict

        dice = []
        for i, t in enumerate(self.scene.dice):
            face = (t.face % 6) + 1 if i == self.wrong else t.face
            dice.append(die(face, LAYOUT_LABELS[t.layout_box] if t.layout_box else None, x=30.0 * i))
        faces = tuple(d.face for d in dice)
        return Roll(tuple(dice), Verdict.VALID, (), expected_dice, faces, "f", None, {}, {})


def test_an_extra_roll_scene_is_decided_as_the_live_loop_and_checked_against_the_rethrown_truth() -> None:
    from lab.layout_eval import check_extra_roll_scene, right_extra_roll

    scene = _extra_roll_scene()
    winner = scene.dice[0].face
    assert right_extra_roll(scene) == winner
    image = np.zeros((48, 64, 3), np.uint8)
    right = check_extra_roll_scene(_StubReader(scene), scene, image)  # type: ignore[arg-type]
    assert right is not None and right.posted == "valid" and right.settled_right and right.alert is None
    thrown = next(i for i, d in enumerate(scene.dice) if not d.kept)
    stub = _StubReader(scene, wrong_face_at=thrown)
    wrong = check_extra_roll_scene(stub, scene, image)  # type: ignore[arg-type]
    assert wrong is not None and wrong.posted == "valid" and not wrong.settled_right  # a wrong settlement
    # a kept die outside the winner's box, or a rethrown die in a box: no right Extra Roll to score
    from dataclasses import replace

    dice = list(scene.dice)
    dice[0] = replace(dice[0], layout_box=None)
    assert right_extra_roll(replace(scene, dice=tuple(dice))) is None
    assert right_extra_roll(replace(scene, verdict="invalid")) is None


class _UnfitReader(_StubReader):
    """The stub's read, with the frame found washed out (the reader's `frame_exposure` finding)."""

    def read(self, frame: Any, *, expected_dice: int | None = None, geometry: Any = None) -> Any:
        from dataclasses import replace

        from vision.types import Finding, Verdict

        unfit = Finding(Verdict.NO_DECISION, "frame_exposure", (), "the frame is washed out")
        roll = super().read(frame, expected_dice=expected_dice, geometry=geometry)
        return replace(roll, verdict=Verdict.NO_DECISION, findings=(unfit,))


def test_a_dealer_s_move_read_from_an_unfit_frame_accuses_no_one_as_the_live_loop() -> None:
    from dataclasses import replace

    from datasets.format import LayoutMoveTruth
    from lab.layout_eval import check_scene

    scene = _extra_roll_scene()
    winner = scene.dice[0].face
    kept = tuple(i for i, d in enumerate(scene.dice) if d.kept)
    # The dealer left one of the winning dice behind: a dealer_error when the frame can be read.
    move = LayoutMoveTruth(
        first_faces=tuple(d.face for d in scene.dice),
        winner=winner,
        match_count=len(kept),
        moved_to=winner,
        moved=kept[:-1],
        error="missing",
    )
    dice = list(scene.dice)
    dice[kept[-1]] = replace(dice[kept[-1]], layout_box=None, kept=False)
    scene = replace(scene, dice=tuple(dice), layout_move=move)
    image = np.zeros((48, 64, 3), np.uint8)
    seen = check_scene(_StubReader(scene), scene, image)  # type: ignore[arg-type]
    assert seen is not None and seen.accused and "frame_exposure" not in seen.named
    unfit = check_scene(_UnfitReader(scene), scene, image)  # type: ignore[arg-type]
    assert unfit is not None and not unfit.accused and unfit.named == ("frame_exposure",) and unfit.alerted
