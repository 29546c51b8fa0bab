"""`vision.layout_eval.score_moves`: the figures of `throwbox eval --layout-moves` (593.4(e))."""

from __future__ import annotations

from vision.layout_eval import MoveOutcome, score_moves


def _move(
    sid: str, error: str, expected: tuple[str, ...], named: tuple[str, ...], box: int = 3
) -> MoveOutcome:
    return MoveOutcome(sid, error, expected, named, in_winner_box=box, truly_in_winner_box=3)


def test_false_alarms_misses_and_exact_reports_are_counted_per_move_kind() -> None:
    rows = [
        _move("ok", "none", (), ()),  # a right move, no alert
        _move("false", "none", (), ("extra_dice",), box=4),  # a right move alerted: a false alarm
        _move("caught", "wrong_box", ("wrong_box", "missing_match"), ("missing_match", "wrong_box"), box=0),
        _move("half", "missing", ("missing_match", "match_left_behind"), ("missing_match",), box=2),
        _move("through", "extra", ("wrong_face", "extra_dice"), ()),  # a wrong move let through
    ]
    s = score_moves(rows)
    assert s["moves"] == 5
    assert s["right_moves_alerted"] == 1 and s["right_moves_alerted_pct"] == 50.0
    assert s["scenes_right_move_alerted"] == ["false"]
    assert s["right_move_false_alarm_codes"] == {"extra_dice": 1}
    assert s["wrong_moves_not_alerted"] == 1 and s["scenes_wrong_move_not_alerted"] == ["through"]
    assert s["wrong_moves_alerted_pct"] == round(100 * 2 / 3, 2)
    # exact: the right move with no alert and the wrong box named in another order (2 of 5)
    assert s["exact_pct"] == 40.0
    assert s["by_kind"]["none"] == {
        "moves": 2,
        "alerts": 1,
        "alert_pct": 50.0,
        "exact": 1,
        "exact_pct": 50.0,
        "winner_box_count_right": 1,
    }
    assert s["by_kind"]["missing"]["alerts"] == 1 and s["by_kind"]["missing"]["exact"] == 0
    assert set(s["by_kind"]) == {"none", "wrong_box", "missing", "extra"}
    assert score_moves([])["right_moves_alerted_pct"] is None  # no moves: no rate
