"""Exact game math: enumeration against brute force, probabilities summing to exactly 1, known values."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules.games import DocumentRefusedError, MathOptions, math_report
from rules.hrd.dice import winner_of_counts
from rules.hrd.math import compositions, final_count_distribution, first_roll, game_math, multinomial
from rules.hrd.paytable import default_paytable
from rules.hrd.settings import ExtraRollReach, NoMatchPipStreet, Settings
from rules.hrd.wagers import HRD6, HRD10


def test_enumerates_every_multiset() -> None:
    assert sum(1 for _ in compositions(10, 6)) == 3003
    assert sum(1 for _ in compositions(6, 6)) == 462
    assert sum(multinomial(c) for c in compositions(10, 6)) == 6**10


def test_six_dice_enumeration_equals_brute_force_over_all_46656_throws() -> None:
    winners: Counter[int] = Counter()
    counts: Counter[int] = Counter()
    for throw in itertools.product(range(1, 7), repeat=6):
        c = [throw.count(f) for f in range(1, 7)]
        winners[winner_of_counts(c)] += 1
        counts[max(c)] += 1
    m = first_roll(6)
    assert m.winner == {f: Fraction(winners[f], 6**6) for f in range(1, 7)}
    assert m.match_count == {k: Fraction(n, 6**6) for k, n in counts.items()}


@pytest.mark.parametrize("dice", [6, 10])
@pytest.mark.parametrize("no_match", list(NoMatchPipStreet))
def test_first_roll_probabilities_sum_to_exactly_one(dice: int, no_match: NoMatchPipStreet) -> None:
    m = first_roll(dice, no_match_pip_street=no_match)
    assert sum(m.winner.values(), m.no_winner) == 1
    assert sum(m.match_count.values()) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dice=st.integers(1, 9), data=st.data())
def test_probabilities_sum_to_exactly_one_for_any_throw(dice: int, data: st.DataObject) -> None:
    m = first_roll(dice)
    assert sum(m.winner.values(), m.no_winner) == 1
    assert sum(m.match_count.values()) == 1
    kept = data.draw(st.integers(1, dice))
    dist = final_count_distribution(dice=dice, kept=kept)
    assert sum(dist.values()) == 1
    assert min(dist) == kept and max(dist) == dice


def test_known_values_ten_dice() -> None:
    m = first_roll(10)
    assert m.match_count[10] == Fraction(6, 6**10)  # ten of a kind: six ways
    assert m.match_count[9] == Fraction(6 * 5 * 10, 6**10)  # nine of a kind: face, odd face, odd die
    assert min(m.match_count) == 2  # ten dice on six faces always match
    assert final_count_distribution(dice=10, kept=8) == {
        8: Fraction(25, 36),
        9: Fraction(10, 36),
        10: Fraction(1, 36),
    }


def test_known_values_six_dice() -> None:
    m = first_roll(6)
    assert m.match_count[1] == Fraction(720, 46656)  # no match: 6! orders
    assert m.match_count[6] == Fraction(6, 46656)


def test_extra_roll_lines_follow_the_circle_values() -> None:
    m = game_math(rules=HRD10, paytable=default_paytable("hrd10"), settings=Settings())
    circles = {c.circle: c for c in m.circles}
    assert circles[2].gain == 0  # no first count is below 2
    assert all(c.gain > 0 for n, c in circles.items() if n > 2)
    all_line = next(v for v in m.extra_roll_lines if v.spot == "circles 2..8 + one Extra Roll")
    assert all_line.units == 8
    assert all_line.expected_value == sum(c.ev_with for c in m.circles) - 1
    # The same line under one_circle needs seven Extra Roll stakes.
    one = game_math(
        rules=HRD10,
        paytable=default_paytable("hrd10"),
        settings=Settings(extra_roll_reach=ExtraRollReach.ONE_CIRCLE),
    )
    seven = next(v for v in one.extra_roll_lines if v.spot == "circles 2..8 + 7 Extra Rolls")
    assert seven.expected_value == sum(c.ev_with for c in m.circles) - 7


def test_house_edge_is_minus_ev() -> None:
    m = game_math(rules=HRD6, paytable=default_paytable("hrd6"), settings=Settings())
    ace = next(v for v in m.wagers if v.kind == "pip_street" and v.spot == "1")
    assert ace.house_edge == 1 - 3 * m.first.winner[1]  # 2 to 1: EV = 2p - (1 - p)


def test_math_report_data_is_exact_and_sums_to_one() -> None:
    report = math_report("hrd10")
    data = report.data
    assert data["sums"]["winner_and_no_winner"] == "1/1"
    assert data["sums"]["match_count"] == "1/1"
    assert set(data["sums"]["final_count_given_first"].values()) == {"1/1"}
    assert data["first_roll"]["match_count"]["10"] == "1/10077696"
    assert all("/" in line["probability"] for line in data["wagers"])
    six = math_report("hrd6").data
    assert six["first_roll"]["match_count"]["no_match"] == "5/324"
    assert six["extra_roll"] is None


@pytest.mark.parametrize(
    ("options", "fields"),
    [
        (MathOptions(decks=6), ["decks"]),
        (MathOptions(distribution={"x": 1}), ["distribution"]),
        (MathOptions(settings={"nope": "x"}), ["settings.nope"]),
        (
            MathOptions(paytable={"format": "x"}),
            [
                "paytable.format",
                "paytable.game",
                "paytable.pip_street",
                "paytable.like_kind",
                "paytable.extra_roll",
                "paytable.millionaire_row",
            ],
        ),
    ],
)
def test_math_report_refuses_what_it_does_not_understand(options: MathOptions, fields: list[str]) -> None:
    with pytest.raises(DocumentRefusedError) as err:
        math_report("hrd10", options)
    assert [p.field for p in err.value.problems] == fields


def test_math_agrees_exactly_with_the_settlement_code() -> None:
    """The EV of "circles 2..8 + one Extra Roll" from the math equals the money the round state machine pays,
    summed over every first-roll multiset and every Extra Roll outcome with their exact weights."""
    from decimal import Decimal

    from rules.hrd.round import (
        no_more_bets,
        open_round,
        place_wagers,
        record_roll,
        settle_extra_roll,
        settle_first_roll,
    )
    from rules.hrd.settlement import Result, Settlement
    from rules.hrd.wagers import Wager, WagerKind

    def net(settlements: tuple[Settlement, ...]) -> Fraction:
        return sum(
            (Fraction(s.win) if s.result is Result.WIN else -Fraction(s.wager.amount) for s in settlements),
            Fraction(0),
        )

    one = Decimal(1)
    wagers = [Wager(seat=1, kind=WagerKind.PIP_STREET, face=1, amount=one)]
    wagers += [Wager(seat=1, kind=WagerKind.LIKE_KIND, count=c, amount=one) for c in range(2, 9)]
    wagers.append(Wager(seat=1, kind=WagerKind.EXTRA_ROLL, amount=one))
    base = no_more_bets(place_wagers(open_round("hrd10"), wagers))
    pip_total = Fraction(0)
    line_total = Fraction(0)
    for counts in compositions(10, 6):
        p = Fraction(multinomial(counts), 6**10)
        faces = [f for f in range(1, 7) for _ in range(counts[f - 1])]
        r = settle_first_roll(record_roll(base, faces))
        pip_total += p * net(tuple(s for s in r.settlements if s.wager.kind is WagerKind.PIP_STREET))
        if r.extra_roll is not None:  # ten of a kind: nothing to rethrow
            line_total += p * net(tuple(s for s in r.settlements if s.wager.kind is not WagerKind.PIP_STREET))
            continue
        winner = winner_of_counts(counts)
        other = 3 if winner == 2 else 2
        rethrown = r.dice_to_rethrow
        for final, q in final_count_distribution(dice=10, kept=10 - rethrown).items():
            new = final - (10 - rethrown)
            done = settle_extra_roll(record_roll(r, [winner] * new + [other] * (rethrown - new)))
            line_total += (
                p * q * net(tuple(s for s in done.settlements if s.wager.kind is not WagerKind.PIP_STREET))
            )
    m = game_math(rules=HRD10, paytable=default_paytable("hrd10"), settings=Settings())
    line = next(v for v in m.extra_roll_lines if v.spot == "circles 2..8 + one Extra Roll")
    assert line_total == line.expected_value
    ace = next(v for v in m.wagers if v.kind == "pip_street" and v.spot == "1")
    assert pip_total == ace.expected_value
