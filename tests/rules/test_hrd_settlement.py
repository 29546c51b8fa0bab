"""Settlement of roll one and the Extra Roll through the settle document: every worked example of 593.4 and
675a.4, the 593.5 / 675a.6 odds, the settings, and "never pays twice"."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.games import DocumentRefusedError, settle
from rules.hrd.dice import DiceCount, classify
from rules.hrd.paytable import default_paytable, parse_odds
from rules.hrd.round import (
    no_more_bets,
    open_round,
    place_wagers,
    record_roll,
    settle_extra_roll,
    settle_first_roll,
)
from rules.hrd.settings import ExtraRollReach, PayoutRounding, Settings
from rules.hrd.settlement import Result, payout
from rules.hrd.wagers import Wager, WagerKind

FOUR_FIVES = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]  # 593.4(e): four 5s, three 6s, two 1s and one 4


def w(kind: str, amount: str = "5.00", seat: int = 1, **spot: Any) -> dict[str, Any]:
    return {"seat": seat, "kind": kind, "amount": amount, **spot}


def outcome(answer: dict[str, Any]) -> list[tuple[str, Any, str, str, int | None]]:
    return [
        (s["kind"], s.get("face", s.get("count")), s["result"], s["win"], s["roll"])
        for s in answer["settlements"]
    ]


def test_issue_example_answer() -> None:
    answer = settle(
        {
            "game": "hrd10",
            "wagers": [
                w("pip_street", face=5),
                w("like_kind", count=4),
                w("extra_roll"),
                w("millionaire_row", "1.00", seat=2, count=9),
            ],
            "rolls": [FOUR_FIVES, [5, 5, 2, 3, 4, 6]],
        }
    )
    assert answer["first_roll"] == {"faces": FOUR_FIVES, "winner": 5, "match_count": 4}
    assert answer["extra_roll"] == {
        "kept": 4,
        "faces": [5, 5, 2, 3, 4, 6],
        "new_matches": 2,
        "final_count": 6,
    }
    assert outcome(answer) == [
        ("pip_street", 5, "win", "20.00", 1),  # 4 to 1 (593.5(a))
        ("like_kind", 4, "win", "5.00", 1),  # 1 to 1 (593.5(b)); not paid again on roll two
        ("extra_roll", None, "collected", "0.00", 1),  # collected at no more bets (593.4(a))
        ("millionaire_row", 9, "lose", "0.00", 1),
    ]
    assert answer["seats"]["1"] == {"staked": "15.00", "won": "25.00", "lost": "5.00", "net": "20.00"}
    assert answer["seats"]["2"] == {"staked": "1.00", "won": "0.00", "lost": "1.00", "net": "-1.00"}


def test_593_4_f_1_pay_pip_street_on_five_collect_on_two() -> None:
    answer = settle(
        {"game": "hrd10", "wagers": [w("pip_street", face=5), w("pip_street", face=2)], "rolls": [FOUR_FIVES]}
    )
    assert outcome(answer) == [("pip_street", 5, "win", "20.00", 1), ("pip_street", 2, "lose", "0.00", 1)]


def test_593_4_f_2_i_without_extra_roll_only_the_four_circle_is_paid() -> None:
    wagers = [w("pip_street", face=1)] + [w("like_kind", count=n) for n in range(2, 9)]
    answer = settle({"game": "hrd10", "wagers": wagers, "rolls": [FOUR_FIVES]})
    like = [(s["count"], s["result"], s["win"]) for s in answer["settlements"][1:]]
    assert like == [
        (2, "lose", "0.00"),
        (3, "lose", "0.00"),
        (4, "win", "5.00"),
        (5, "lose", "0.00"),
        (6, "lose", "0.00"),
        (7, "lose", "0.00"),
        (8, "lose", "0.00"),
    ]
    assert answer["extra_roll"] is None


def test_593_4_f_2_ii_with_extra_roll_pay_four_collect_three_leave_five() -> None:
    r = open_round("hrd10")
    five = Decimal("5.00")
    r = place_wagers(
        r,
        [
            Wager(seat=1, kind=WagerKind.PIP_STREET, face=5, amount=five),
            Wager(seat=1, kind=WagerKind.LIKE_KIND, count=3, amount=five),
            Wager(seat=1, kind=WagerKind.LIKE_KIND, count=4, amount=five),
            Wager(seat=1, kind=WagerKind.LIKE_KIND, count=5, amount=five),
            Wager(seat=1, kind=WagerKind.EXTRA_ROLL, amount=five),
        ],
    )
    r = settle_first_roll(record_roll(no_more_bets(r), FOUR_FIVES))
    three, four, five_circle = r.settlement_for(1), r.settlement_for(2), r.settlement_for(3)
    assert three is not None and three.result is Result.LOSE and three.roll == 1
    assert four is not None and four.result is Result.WIN and four.win == Decimal("5.00")
    assert five_circle is None  # left on the layout until the Extra Roll (593.4(g))
    assert r.pending == (3,)


def test_593_4_f_3_nine_of_a_kind_pays_the_nine_circle_only() -> None:
    wagers = [
        w("pip_street", "1.00", face=3),
        w("millionaire_row", "1.00", count=9),
        w("millionaire_row", "1.00", count=10),
    ]
    answer = settle({"game": "hrd10", "wagers": wagers, "rolls": [[3] * 9 + [2]]})
    assert outcome(answer)[1:] == [
        ("millionaire_row", 9, "win", "50000.00", 1),
        ("millionaire_row", 10, "lose", "0.00", 1),
    ]


def test_593_5_c_ten_of_a_kind_pays_a_million_on_one_dollar() -> None:
    answer = settle(
        {"game": "hrd10", "wagers": [w("millionaire_row", "1.00", count=10)], "rolls": [[1] * 10]}
    )
    assert outcome(answer) == [("millionaire_row", 10, "win", "1000000.00", 1)]


def test_593_4_g_675a_4_g_the_three_6s_stay_and_seven_dice_are_rethrown() -> None:
    # 593.4(g) / 675a.4(g): three 6s, three 4s, two 2s, two 1s: the 6s stay, seven dice are rethrown.
    doc = {
        "game": "hrd10",
        "wagers": [w("pip_street", face=6), w("like_kind", count=5), w("extra_roll")],
        "rolls": [[6, 6, 6, 4, 4, 4, 2, 2, 1, 1], [6, 6, 1, 2, 3, 4, 5]],
    }
    answer = settle(doc)
    assert answer["extra_roll"]["kept"] == 3
    short = dict(doc, rolls=[doc["rolls"][0], [6, 6, 1, 2, 3, 4]])
    with pytest.raises(DocumentRefusedError) as err:
        settle(short)
    assert [p.clause for p in err.value.problems] == ["593.4(g)"]


def test_593_4_h_675a_4_h_three_6s_plus_two_6s_is_five_of_a_kind_at_extra_roll_odds() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [w("pip_street", face=6), w("like_kind", count=5), w("extra_roll")],
        "rolls": [[6, 6, 6, 4, 4, 4, 2, 2, 1, 1], [6, 6, 1, 2, 3, 4, 5]],
    }
    answer = settle(doc)
    assert answer["extra_roll"]["final_count"] == 5
    assert outcome(answer)[1] == ("like_kind", 5, "win", "10.00", 2)  # 2 to 1 (593.5(d))
    assert answer["settlements"][1]["clause"] == "593.5(d)"


def test_593_4_h_675a_4_h_no_double_pay_four_of_a_kind_not_paid_again_on_the_extra_roll() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [w("pip_street", face=5), w("like_kind", count=4), w("extra_roll")],
        "rolls": [FOUR_FIVES, [1, 2, 3, 4, 6, 6]],
    }
    answer = settle(doc)
    assert answer["extra_roll"]["final_count"] == 4
    assert outcome(answer)[1] == ("like_kind", 4, "win", "5.00", 1)  # once, at 1 to 1, on roll one
    assert sum(1 for s in answer["settlements"] if s["result"] == "win" and s["kind"] == "like_kind") == 1


def test_final_count_of_nine_pays_no_like_kind() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [w("pip_street", face=2)]
        + [w("like_kind", count=n) for n in range(2, 9)]
        + [w("extra_roll")],
        "rolls": [[2] * 8 + [1, 3], [2, 5]],
    }
    answer = settle(doc)
    assert answer["extra_roll"]["final_count"] == 9
    like = [(s["count"], s["result"], s["roll"]) for s in answer["settlements"] if s["kind"] == "like_kind"]
    assert like == [(n, "lose", 1) for n in range(2, 8)] + [(8, "win", 1)]  # eight paid on roll one only


def test_millionaire_row_only_on_roll_one() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [
            w("pip_street", "1.00", face=4),
            w("like_kind", "1.00", count=8),
            w("extra_roll", "1.00"),
            w("millionaire_row", "1.00", count=9),
        ],
        "rolls": [[4] * 8 + [1, 2], [4, 3]],
    }
    answer = settle(doc)
    assert answer["extra_roll"]["final_count"] == 9
    assert outcome(answer)[3] == ("millionaire_row", 9, "lose", "0.00", 1)


def test_extra_roll_reach_all_circles_covers_every_circle_above_the_count() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [
            w("pip_street", face=5),
            w("like_kind", count=5),
            w("like_kind", count=6),
            w("extra_roll"),
        ],
        "rolls": [FOUR_FIVES, [5, 5, 1, 2, 3, 4]],
    }
    answer = settle(doc)
    assert outcome(answer)[1:3] == [("like_kind", 5, "lose", "0.00", 2), ("like_kind", 6, "win", "20.00", 2)]


def test_extra_roll_reach_one_circle_covers_only_its_circle() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [
            w("pip_street", face=5),
            w("like_kind", count=5),
            w("like_kind", count=6),
            w("extra_roll", count=5),
        ],
        "rolls": [FOUR_FIVES, [5, 5, 1, 2, 3, 4]],
        "settings": {"extra_roll_reach": "one_circle"},
    }
    answer = settle(doc)
    assert outcome(answer)[1:3] == [("like_kind", 5, "lose", "0.00", 2), ("like_kind", 6, "lose", "0.00", 1)]
    assert answer["settings"]["extra_roll_reach"] == "one_circle"


def test_675a_6_i_six_dice_pip_street_and_like_kind_at_675a_6_j_k_odds() -> None:
    doc = {
        "game": "hrd6",
        "wagers": [
            w("pip_street", face=5),
            w("pip_street", face=6),
            w("like_kind", count=3),
            w("like_kind", count=2),
        ],
        "rolls": [[5, 5, 5, 6, 6, 4]],
    }
    answer = settle(doc)
    assert outcome(answer) == [
        ("pip_street", 5, "win", "20.00", 1),  # 4 to 1 (675a.6(j))
        ("pip_street", 6, "lose", "0.00", 1),
        ("like_kind", 3, "win", "10.00", 1),  # 2 to 1 (675a.6(k))
        ("like_kind", 2, "lose", "0.00", 1),
    ]
    assert answer["extra_roll"] is None


def test_675a_6_k_no_match_pays_60_to_1_and_ace_wins_pip_street_by_default() -> None:
    doc = {
        "game": "hrd6",
        "wagers": [w("pip_street", face=1), w("like_kind", count="no_match")],
        "rolls": [[1, 2, 3, 4, 5, 6]],
    }
    answer = settle(doc)
    assert answer["first_roll"]["match_count"] == "no_match"
    assert outcome(answer) == [
        ("pip_street", 1, "win", "10.00", 1),
        ("like_kind", "no_match", "win", "300.00", 1),
    ]
    doc["settings"] = {"no_match_pip_street": "none"}
    answer = settle(doc)
    assert answer["first_roll"]["winner"] is None
    assert outcome(answer)[0] == ("pip_street", 1, "lose", "0.00", 1)


def test_675a_6_k_two_of_a_kind_pays_1_to_2() -> None:
    doc = {
        "game": "hrd6",
        "wagers": [w("pip_street", face=3), w("like_kind", count=2)],
        "rolls": [[3, 3, 1, 2, 4, 5]],
    }
    assert outcome(settle(doc))[1] == ("like_kind", 2, "win", "2.50", 1)


@pytest.mark.parametrize(
    ("amount", "odds", "rounding", "expected"),
    [
        ("5.00", "3 to 5", PayoutRounding.DOWN, "3.00"),  # 593.5(b) three of a kind
        ("0.25", "3 to 5", PayoutRounding.DOWN, "0.15"),
        ("0.01", "3 to 5", PayoutRounding.DOWN, "0.00"),  # 0.006: the fraction of a cent is not paid
        ("0.01", "3 to 5", PayoutRounding.HALF_UP, "0.01"),
        ("0.05", "1 to 2", PayoutRounding.DOWN, "0.02"),  # 0.025
        ("0.05", "1 to 2", PayoutRounding.HALF_UP, "0.03"),
        ("2.00", "2.5 to 1", PayoutRounding.DOWN, "5.00"),
    ],
)
def test_payout_rounding(amount: str, odds: str, rounding: PayoutRounding, expected: str) -> None:
    assert payout(Decimal(amount), parse_odds(odds), rounding=rounding) == Decimal(expected)


def test_593_5_b_three_of_a_kind_pays_3_to_5() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [w("pip_street", face=4), w("like_kind", count=3)],
        "rolls": [[4, 4, 4, 1, 1, 2, 2, 3, 5, 6]],
    }
    assert outcome(settle(doc))[1] == ("like_kind", 3, "win", "3.00", 1)


def test_593_5_d_extra_roll_three_of_a_kind_pays_8_to_1() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [w("pip_street", face=1), w("like_kind", count=3), w("extra_roll")],
        "rolls": [[1, 1, 2, 2, 3, 3, 4, 4, 5, 6], [1, 2, 3, 4, 5, 6, 6, 5]],
    }
    assert outcome(settle(doc))[1] == ("like_kind", 3, "win", "40.00", 2)


# --- never pays twice -----------------------------------------------------------------------------------

TEN = st.lists(st.integers(1, 6), min_size=10, max_size=10)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=TEN,
    rethrow=TEN,
    circles=st.sets(st.integers(2, 8), min_size=1),
    reach=st.sampled_from(list(ExtraRollReach)),
)
def test_settlement_never_pays_a_wager_twice(
    first: list[int], rethrow: list[int], circles: set[int], reach: ExtraRollReach
) -> None:
    five = Decimal("5.00")
    wagers = [Wager(seat=1, kind=WagerKind.PIP_STREET, face=f, amount=five) for f in range(1, 7)]
    wagers += [Wager(seat=1, kind=WagerKind.LIKE_KIND, count=c, amount=five) for c in sorted(circles)]
    if reach is ExtraRollReach.ALL_CIRCLES:
        wagers.append(Wager(seat=1, kind=WagerKind.EXTRA_ROLL, amount=five))
    else:
        wagers += [Wager(seat=1, kind=WagerKind.EXTRA_ROLL, count=c, amount=five) for c in sorted(circles)]
    r = open_round("hrd10", settings=Settings(extra_roll_reach=reach))
    r = settle_first_roll(record_roll(no_more_bets(place_wagers(r, wagers)), first))
    if r.extra_roll is None:
        r = settle_extra_roll(record_roll(r, rethrow[: r.dice_to_rethrow]))
    indices = [s.wager_index for s in r.settlements]
    assert sorted(indices) == list(range(len(wagers)))  # every wager decided exactly once
    roll = classify(first, dice=DiceCount.TEN)
    assert r.extra_roll is not None
    final = r.extra_roll.final_count
    like_wins = [s for s in r.settlements if s.wager.kind is WagerKind.LIKE_KIND and s.result is Result.WIN]
    # A circle wins at most once, on roll one at its count or on roll two at the final count.
    for s in like_wins:
        assert (s.roll == 1 and s.wager.count == roll.match_count) or (
            s.roll == 2 and s.wager.count == final and s.wager.count > roll.match_count
        )
    assert len({s.wager.count for s in like_wins}) == len(like_wins) <= 2
    pips = [s for s in r.settlements if s.wager.kind is WagerKind.PIP_STREET and s.result is Result.WIN]
    assert [s.wager.face for s in pips] == [roll.winner]
    assert pips[0].win == five * int(default_paytable("hrd10").pip_street[roll.winner].win)
