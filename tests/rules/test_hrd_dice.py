"""Die ranking and roll classification: the worked examples of 593.2, 593.4(e), 675a.6(d), (h), and the
winner property."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.hrd.dice import (
    NO_MATCH,
    DiceCount,
    classify,
    face_counts,
    new_matches,
    rank,
    winner_of_counts,
)
from rules.hrd.settings import NoMatchPipStreet


def test_593_2_d_ace_highest_then_six_down_to_two() -> None:
    assert sorted((1, 2, 3, 4, 5, 6), key=rank, reverse=True) == [1, 6, 5, 4, 3, 2]


def test_rank_refuses_a_face_outside_1_to_6() -> None:
    with pytest.raises(ValueError, match=r"1\.\.6"):
        rank(7)


# (roll, winner, match count, what the clause says)
WORKED_EXAMPLES = [
    pytest.param([6, 6, 6, 4, 4, 4, 4, 2, 3, 5], 4, 4, id="593_2_e_1_i_three_6s_four_4s_the_4s_win"),
    pytest.param([6, 6, 6, 1, 1, 1, 2, 3, 4, 5], 1, 3, id="593_2_e_1_ii_three_6s_three_1s_the_ace_wins"),
    pytest.param([6, 6, 6, 1, 1, 1, 1, 2, 3, 5], 1, 4, id="593_2_e_2_i_three_6s_four_1s_four_of_a_kind"),
    pytest.param([2, 2, 2, 2, 2, 1, 1, 1, 3, 4], 2, 5, id="593_2_e_2_ii_five_2s_three_1s_five_of_a_kind"),
    pytest.param([5, 5, 5, 5, 6, 6, 6, 1, 1, 4], 5, 4, id="593_4_e_four_fives_move_to_five_box"),
    pytest.param([5, 5, 5, 5, 6, 6, 6, 1, 1, 4], 5, 4, id="675a_4_e_four_fives_move_to_five_box"),
    pytest.param([6, 6, 6, 4, 4, 4, 2, 2, 1, 1], 6, 3, id="593_4_g_three_6s_three_4s_the_6s_stay"),
    pytest.param([6, 6, 6, 4, 4, 4, 2, 2, 1, 1], 6, 3, id="675a_4_g_three_6s_three_4s_the_6s_stay"),
]


@pytest.mark.parametrize(("faces", "winner", "count"), WORKED_EXAMPLES)
def test_worked_examples_ten_dice(faces: list[int], winner: int, count: int) -> None:
    roll = classify(faces, dice=DiceCount.TEN)
    assert (roll.winner, roll.match_count) == (winner, count)
    assert not roll.no_match


def test_593_2_e_3_two_more_1s_on_the_extra_roll_make_six_of_a_kind() -> None:
    first = classify([6, 6, 1, 1, 1, 1, 2, 3, 4, 5], dice=DiceCount.TEN)
    assert (first.winner, first.match_count) == (1, 4)
    assert first.match_count + new_matches(winner=1, rethrown=[1, 1, 2, 3, 4, 5]) == 6


def test_593_4_h_675a_4_h_three_6s_kept_two_more_6s_make_five_of_a_kind() -> None:
    assert 3 + new_matches(winner=6, rethrown=[6, 6, 1, 2, 3, 4, 5]) == 5


def test_675a_6_d_1_two_6s_four_1s_four_of_a_kind() -> None:
    roll = classify([6, 6, 1, 1, 1, 1], dice=DiceCount.SIX)
    assert (roll.winner, roll.match_count) == (1, 4)


def test_675a_6_d_2_all_numbers_1_to_6_no_match() -> None:
    roll = classify([3, 1, 6, 2, 5, 4], dice=DiceCount.SIX)
    assert roll.no_match
    assert roll.match_count == NO_MATCH
    assert roll.winner == 1  # default setting: the ace, by rank


def test_675a_6_d_no_match_winner_setting_none() -> None:
    roll = classify([3, 1, 6, 2, 5, 4], dice=DiceCount.SIX, no_match_pip_street=NoMatchPipStreet.NONE)
    assert roll.winner is None
    assert roll.no_match


def test_675a_6_h_three_5s_two_6s_one_4_move_to_five_box() -> None:
    roll = classify([5, 5, 5, 6, 6, 4], dice=DiceCount.SIX)
    assert (roll.winner, roll.match_count) == (5, 3)


@pytest.mark.parametrize(
    ("faces", "dice", "message"),
    [
        ([1] * 9, DiceCount.TEN, "10 dice"),  # one die short
        ([1] * 7, DiceCount.SIX, "6 dice"),  # one die too many
        ([1, 2, 3, 4, 5, 0], DiceCount.SIX, r"1\.\.6"),  # no face 0
        ([1, 2, 3, 4, 5, True], DiceCount.SIX, r"1\.\.6"),  # a bool is no face
    ],
)
def test_classify_refuses_bad_rolls(faces: list[int], dice: DiceCount, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        classify(faces, dice=dice)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([DiceCount.TEN, DiceCount.SIX]).flatmap(
        lambda n: st.lists(st.integers(1, 6), min_size=int(n), max_size=int(n)).map(lambda f: (n, f))
    )
)
def test_winner_has_the_greatest_count_and_the_highest_rank_among_ties(
    case: tuple[DiceCount, list[int]],
) -> None:
    dice, faces = case
    roll = classify(faces, dice=dice)
    counts = face_counts(faces)
    assert roll.winner is not None
    top = max(counts)
    assert counts[roll.winner - 1] == top == roll.match_count
    tied = [f for f in range(1, 7) if counts[f - 1] == top]
    assert all(rank(roll.winner) >= rank(f) for f in tied)
    # Shuffling the dice changes nothing.
    again = classify(list(reversed(faces)), dice=dice)
    assert (again.winner, again.match_count) == (roll.winner, roll.match_count)


@given(st.lists(st.integers(0, 10), min_size=6, max_size=6).filter(lambda c: sum(c) > 0))
def test_winner_of_counts_is_never_a_face_with_fewer_dice(counts: list[int]) -> None:
    winner = winner_of_counts(counts)
    assert counts[winner - 1] == max(counts)
