"""The round state machine: phases, rethrows, nothing settled twice, and its docstring example."""

from __future__ import annotations

import doctest
from decimal import Decimal

import pytest

import rules.hrd.round as round_module
from rules.hrd.round import (
    Phase,
    RollRefusedError,
    RollVerdict,
    RoundStateError,
    WagerRefusedError,
    no_more_bets,
    open_round,
    place_wager,
    place_wagers,
    record_roll,
    seat_totals,
    settle_extra_roll,
    settle_first_roll,
    withdraw_wager,
)
from rules.hrd.settlement import Result
from rules.hrd.wagers import Wager, WagerKind

D5 = Decimal("5.00")


def pip(face: int, seat: int = 1, amount: Decimal = D5) -> Wager:
    return Wager(seat=seat, kind=WagerKind.PIP_STREET, face=face, amount=amount)


def like(count: int, seat: int = 1, amount: Decimal = D5) -> Wager:
    return Wager(seat=seat, kind=WagerKind.LIKE_KIND, count=count, amount=amount)


def extra(seat: int = 1, amount: Decimal = D5) -> Wager:
    return Wager(seat=seat, kind=WagerKind.EXTRA_ROLL, amount=amount)


def test_docstring_example_runs() -> None:
    result = doctest.testmod(round_module)
    assert result.attempted > 5
    assert result.failed == 0


def test_round_without_extra_roll_completes_after_roll_one() -> None:
    r = place_wagers(open_round("hrd10"), [pip(5), like(4)])
    r = no_more_bets(r)
    assert r.phase is Phase.NO_MORE_BETS
    assert r.settlements == ()
    r = record_roll(r, [5, 5, 5, 5, 6, 6, 6, 1, 1, 4])
    assert r.phase is Phase.FIRST_ROLL
    r = settle_first_roll(r)
    assert r.phase is Phase.COMPLETE
    assert [(s.result, s.win) for s in r.settlements_in_wager_order()] == [
        (Result.WIN, Decimal("20.00")),
        (Result.WIN, Decimal("5.00")),
    ]


def test_593_4_b_675a_4_b_invalid_roll_is_rethrown_in_the_same_round() -> None:
    r = no_more_bets(place_wager(open_round("hrd10"), pip(1)))
    r = record_roll(r, [1, 1, 2], verdict=RollVerdict.INVALID, reason="a die went off the table")
    assert r.phase is Phase.NO_MORE_BETS
    assert r.first_roll is None
    assert r.rethrows[0].verdict is RollVerdict.INVALID
    assert r.rethrows[0].reason == "a die went off the table"
    r = record_roll(r, [1, 1, 1, 2, 3, 4, 5, 6, 2, 3])
    assert r.phase is Phase.FIRST_ROLL


def test_675a_6_g_675a_4_c_void_roll_is_rethrown_in_the_same_round_six_dice() -> None:
    r = no_more_bets(place_wager(open_round("hrd6"), pip(1)))
    r = record_roll(r, [], verdict="void", reason="cocked die on two sides")
    assert r.phase is Phase.NO_MORE_BETS
    assert [t.verdict for t in r.rethrows] == [RollVerdict.VOID]


def test_593_4_c_675a_4_c_void_first_roll_then_void_extra_roll_both_rethrown() -> None:
    r = no_more_bets(place_wagers(open_round("hrd10"), [pip(5), like(6), extra()]))
    r = record_roll(r, [5, 5], verdict=RollVerdict.VOID, reason="a die cocked on two sides against the chips")
    r = settle_first_roll(record_roll(r, [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]))
    r = record_roll(r, [], verdict=RollVerdict.VOID, reason="cocked again")
    assert r.phase is Phase.AWAITING_EXTRA_ROLL
    assert [(t.roll, t.verdict) for t in r.rethrows] == [(1, RollVerdict.VOID), (2, RollVerdict.VOID)]
    r = settle_extra_roll(record_roll(r, [5, 5, 1, 2, 3, 4]))
    six = r.settlement_for(1)
    assert six is not None and six.result is Result.WIN and six.win == Decimal("20.00")


def test_593_4_a_extra_roll_stake_collected_at_no_more_bets() -> None:
    r = no_more_bets(place_wagers(open_round("hrd10"), [pip(5), like(6), extra()]))
    assert [(s.wager_index, s.result, s.roll) for s in r.settlements] == [(2, Result.COLLECTED, 1)]


def test_593_2_a_no_wager_after_no_more_bets() -> None:
    r = no_more_bets(place_wager(open_round("hrd10"), pip(5)))
    with pytest.raises(WagerRefusedError) as err:
        place_wager(r, like(4))
    assert [p.clause for p in err.value.problems] == ["593.2(a)"]


def test_675a_6_g_no_wager_after_no_more_bets() -> None:
    r = no_more_bets(place_wager(open_round("hrd6"), pip(5)))
    with pytest.raises(WagerRefusedError) as err:
        place_wager(r, pip(4))
    assert [p.clause for p in err.value.problems] == ["675a.6(g)"]


def test_nothing_settled_twice_transitions_refuse_a_second_call() -> None:
    r = no_more_bets(place_wagers(open_round("hrd10"), [pip(5), like(6), extra()]))
    with pytest.raises(RoundStateError):
        no_more_bets(r)
    r = settle_first_roll(record_roll(r, [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]))
    with pytest.raises(RoundStateError):
        settle_first_roll(r)
    r = settle_extra_roll(record_roll(r, [5, 5, 2, 3, 4, 6]))
    with pytest.raises(RoundStateError):
        settle_extra_roll(r)
    with pytest.raises(RoundStateError):
        record_roll(r, [1] * 10)
    assert len({s.wager_index for s in r.settlements}) == len(r.settlements) == 3


def test_roll_before_no_more_bets_is_refused() -> None:
    with pytest.raises(RoundStateError, match="record a roll"):
        record_roll(open_round("hrd10"), [1] * 10)


@pytest.mark.parametrize(
    ("game", "faces", "clause"),
    [
        ("hrd10", [1] * 9, "593.3(a)"),  # nine dice in a ten-dice game
        ("hrd6", [1] * 7, "675a.6(e)"),  # seven dice in the six-dice game
        ("hrd10", [1, 2, 3, 4, 5, 6, 7, 1, 2, 3], "document"),  # a 7 is no die face
    ],
)
def test_record_roll_refuses_a_bad_roll(game: str, faces: list[int], clause: str) -> None:
    r = no_more_bets(place_wager(open_round(game), pip(1)))
    with pytest.raises(RollRefusedError) as err:
        record_roll(r, faces)
    assert clause in [p.clause for p in err.value.problems]


def test_593_4_g_extra_roll_must_rethrow_exactly_the_unmatched_dice() -> None:
    r = no_more_bets(place_wagers(open_round("hrd10"), [pip(5), like(6), extra()]))
    r = settle_first_roll(record_roll(r, [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]))
    assert r.dice_to_rethrow == 6
    with pytest.raises(RollRefusedError) as err:
        record_roll(r, [5, 5, 5, 5, 5, 5, 5])
    assert [p.clause for p in err.value.problems] == ["593.4(g)"]


def test_ten_of_a_kind_with_extra_roll_has_nothing_to_rethrow() -> None:
    r = no_more_bets(place_wagers(open_round("hrd10"), [pip(3), like(8), extra()]))
    r = settle_first_roll(record_roll(r, [3] * 10))
    assert r.phase is Phase.COMPLETE
    assert r.extra_roll is not None
    assert r.extra_roll.final_count == 10
    assert r.extra_roll.faces == ()
    # The 8 circle lost on roll one (below the count of 10).
    eight = r.settlement_for(1)
    assert eight is not None
    assert eight.result is Result.LOSE


def test_withdraw_keeps_the_rest_valid() -> None:
    r = place_wagers(open_round("hrd10"), [pip(5), like(4)])
    with pytest.raises(WagerRefusedError) as err:
        withdraw_wager(r, 0)  # the Like Kind wager still needs the Pip Street wager
    assert [p.clause for p in err.value.problems] == ["593.2(e)(1)"]
    r = withdraw_wager(r, 1)
    assert r.wagers == (pip(5),)


def test_seat_totals_of_the_issue_example() -> None:
    r = place_wagers(
        open_round("hrd10"),
        [pip(5), like(4), extra(), Wager(seat=2, kind=WagerKind.PIP_STREET, face=2, amount=Decimal("1.00"))],
    )
    r = settle_first_roll(record_roll(no_more_bets(r), [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]))
    r = settle_extra_roll(record_roll(r, [5, 5, 2, 3, 4, 6]))
    totals = seat_totals(r)
    assert totals[1].staked == Decimal("15.00")
    assert totals[1].won == Decimal("25.00")
    assert totals[1].lost == Decimal("5.00")
    assert totals[1].net == Decimal("20.00")
    assert totals[2].net == Decimal("-1.00")
