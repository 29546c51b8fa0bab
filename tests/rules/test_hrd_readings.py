"""The clauses with two readings, each a setting, both readings settled and priced; and the clauses of
the map (docs/regulations.md) that had no test of their own."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from rules.games import DocumentRefusedError, MathOptions, math_report, settle
from rules.hrd.math import game_math
from rules.hrd.paytable import default_paytable
from rules.hrd.settings import MillionaireRowCircles, Settings
from rules.hrd.wagers import HRD10

NINE_FIVES = [5, 5, 5, 5, 5, 5, 5, 5, 5, 6]
TEN_FIVES = [5] * 10
EIGHT_FIVES = [5, 5, 5, 5, 5, 5, 5, 5, 6, 1]


def w(kind: str, amount: str = "1.00", seat: int = 1, **spot: Any) -> dict[str, Any]:
    return {"seat": seat, "kind": kind, "amount": amount, **spot}


def problems(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
    with pytest.raises(DocumentRefusedError) as err:
        settle(doc)
    return [(p.clause, p.field) for p in err.value.problems]


def results(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["result"], s["win"], s["clause"]) for s in answer["settlements"]]


def roll_with_count(count: int) -> list[int]:
    """Ten dice whose most matching face (the ace, first by rank) shows `count` times."""
    others = [f for f in (2, 3, 4, 5, 6) for _ in range(min(count, 2))]
    return [1] * count + others[: 10 - count]


@pytest.mark.parametrize("seat", [0, 6])
def test_593_1_a_a_seat_outside_the_five_betting_positions_is_refused(seat: int) -> None:
    doc = {"game": "hrd10", "wagers": [w("pip_street", seat=seat, face=5)], "rolls": [NINE_FIVES]}
    assert ("593.1(a)", "wagers[0].seat") in problems(doc)


def test_593_2_e_4_593_4_f_3_separate_circles_pay_only_their_own_count() -> None:
    wagers = [w("millionaire_row", count=9), w("millionaire_row", count=10)]
    nine = settle({"game": "hrd10", "wagers": wagers, "rolls": [NINE_FIVES]})
    assert results(nine) == [("win", "50000.00", "593.5(c)"), ("lose", "0.00", "593.4(f)(3)")]
    ten = settle({"game": "hrd10", "wagers": wagers, "rolls": [TEN_FIVES]})
    assert results(ten) == [("lose", "0.00", "593.4(f)(3)"), ("win", "1000000.00", "593.5(c)")]
    assert ten["settings"]["millionaire_row_circles"] == "separate"
    # Two circles are two wagers: each at most $1, and a wager must name its circle.
    assert problems({"game": "hrd10", "wagers": [w("millionaire_row")], "rolls": [NINE_FIVES]}) == [
        ("593.1(b)(2)(ii)", "wagers[0].count")
    ]


def test_593_2_e_4_593_4_f_3_one_stake_pays_on_either_count() -> None:
    settings = {"millionaire_row_circles": "one_stake"}
    stake = [w("millionaire_row", "0.50")]
    for roll, expected in [
        (NINE_FIVES, ("win", "25000.00", "593.5(c)")),
        (TEN_FIVES, ("win", "500000.00", "593.5(c)")),
        (EIGHT_FIVES, ("lose", "0.00", "593.4(f)(3)")),
    ]:
        answer = settle({"game": "hrd10", "wagers": stake, "rolls": [roll], "settings": settings})
        assert results(answer) == [expected]
        assert answer["settings"]["millionaire_row_circles"] == "one_stake"
        assert "count" not in answer["settlements"][0]
    refused = [
        # the one stake names no circle
        ([w("millionaire_row", count=9)], [("settings", "wagers[0].count")]),
        # one stake per seat, at most $1
        ([w("millionaire_row"), w("millionaire_row")], [("document", "wagers[1]")]),
        ([w("millionaire_row", "1.01")], [("593.2(e)(4)", "wagers[0].amount")]),
    ]
    for wagers, expected_problems in refused:
        doc = {"game": "hrd10", "wagers": wagers, "rolls": [NINE_FIVES], "settings": settings}
        assert problems(doc) == expected_problems


@pytest.mark.parametrize("reading", list(MillionaireRowCircles))
def test_593_5_c_math_of_both_readings_equals_settling_every_count(reading: MillionaireRowCircles) -> None:
    """The figure of each reading is the settlement code's own payout, weighted by every match count."""
    settings = Settings(millionaire_row_circles=reading)
    paytable = default_paytable("hrd10")
    assert paytable is not None
    m = game_math(rules=HRD10, paytable=paytable, settings=settings)
    lines = [v for v in m.wagers if v.kind == "millionaire_row"]
    spots: list[int | None] = [9, 10] if reading is MillionaireRowCircles.SEPARATE else [None]
    assert len(lines) == len(spots)
    for line, spot in zip(lines, spots, strict=True):
        wager = w("millionaire_row") if spot is None else w("millionaire_row", count=spot)
        ev = Fraction(0)
        for count, p in m.first.match_count.items():
            doc = {"game": "hrd10", "wagers": [wager], "rolls": [roll_with_count(count)]}
            answer = settle({**doc, "settings": settings.as_dict()})
            assert answer["first_roll"]["match_count"] == count
            s = answer["settlements"][0]
            ev += p * (Fraction(Decimal(s["win"])) if s["result"] == "win" else Fraction(-1))
        assert line.expected_value == ev
        assert line.reading == f"millionaire_row_circles={reading.value}"
        assert line.clause == "593.2(e)(4), 593.5(c)"
    if reading is MillionaireRowCircles.ONE_STAKE:
        # one stake on both is worth exactly the two circles' winnings on one unit
        assert lines[0].expected_value == Fraction(-6577645, 10077696)


@pytest.mark.parametrize("reach", ["all_circles", "one_circle"])
def test_593_2_e_3_math_names_the_extra_roll_reading_of_each_line(reach: str) -> None:
    report = math_report("hrd10", MathOptions(settings={"extra_roll_reach": reach}))
    data = report.data
    er_lines = data["extra_roll"]["lines"]
    assert er_lines and all(line["reading"] == f"extra_roll_reach={reach}" for line in er_lines)
    assert all("593.5(d)" in line["clause"] and "593.4(h)" in line["clause"] for line in er_lines)
    by_kind = {line["kind"]: line for line in data["wagers"]}
    assert by_kind["pip_street"]["clause"] == "593.2(e)(1), 593.5(a)"
    assert by_kind["pip_street"]["reading"] is None  # ten dice always have a winner
    assert by_kind["like_kind"]["clause"] == "593.2(e)(2), 593.5(b)"
    assert by_kind["millionaire_row"]["reading"] == "millionaire_row_circles=separate"
    assert any(note.startswith(f"Reading extra_roll_reach={reach} (593.2(e)(3)") for note in report.notes)
    six = math_report("hrd6", MathOptions(settings={"no_match_pip_street": "none"}))
    pip = [line for line in six.data["wagers"] if line["kind"] == "pip_street"]
    assert {line["reading"] for line in pip} == {"no_match_pip_street=none"}
    assert {line["clause"] for line in pip} == {"675a.6(d), 675a.6(j)"}


def test_675a_6_b_2_a_pip_street_face_outside_1_to_6_is_refused() -> None:
    doc = {"game": "hrd6", "wagers": [w("pip_street", face=0)], "rolls": [[1, 2, 3, 4, 5, 6]]}
    assert problems(doc) == [("675a.6(b)(2)", "wagers[0].face")]


@pytest.mark.parametrize(
    ("faces", "winner"),
    [
        ([2, 2, 6, 6, 3, 4], 6),  # two 2s, two 6s: the 6 ranks higher
        ([1, 1, 6, 6, 5, 5], 1),  # three pairs: the ace ranks highest
        ([3, 3, 2, 2, 4, 5], 3),  # a 3 over a 2, the lowest
    ],
)
def test_675a_6_c_six_dice_ties_go_to_the_higher_rank(faces: list[int], winner: int) -> None:
    doc = {"game": "hrd6", "wagers": [w("pip_street", face=winner)], "rolls": [faces]}
    answer = settle(doc)
    assert (answer["first_roll"]["winner"], answer["first_roll"]["match_count"]) == (winner, 2)
    assert answer["settlements"][0]["result"] == "win"


def test_675a_6_e_a_six_dice_roll_has_six_faces() -> None:
    assert problems({"game": "hrd6", "wagers": [], "rolls": [NINE_FIVES]}) == [("675a.6(e)", "rolls[0]")]
    assert problems({"game": "hrd10", "wagers": [], "rolls": [[1, 2, 3, 4, 5, 6]]}) == [
        ("593.3(a)", "rolls[0]")
    ]
