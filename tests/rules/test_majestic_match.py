"""Majestic Match (631b.7): settlement of every rule in the text, refusals by clause, exact math."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from itertools import permutations
from math import comb
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules import games
from rules.cards import Card, full_deck, parse_card
from rules.games import DocumentRefusedError, MathOptions
from rules.side_wagers import majestic_match as mm

EXAMPLES = Path(mm.__file__).parent / "examples"


def doc(
    player: list[str], banker: list[str], *wagers: tuple[int, str, str], decks: int = 8
) -> dict[str, Any]:
    return {
        "game": "majestic_match",
        "decks": decks,
        "wagers": [{"seat": s, "kind": "majestic_match", "hand": h, "amount": a} for s, h, a in wagers],
        "player_cards": player,
        "banker_cards": banker,
    }


def clauses(err: pytest.ExceptionInfo[DocumentRefusedError]) -> list[str]:
    return [p.clause for p in err.value.problems]


@pytest.mark.parametrize("player", [["KS", "QS"], ["QH", "KH"], ["KD", "QD"], ["QC", "KC"]])
def test_631b_7_e_1_royal_match_pays_25_to_1(player: list[str]) -> None:
    out = games.settle(doc(player, ["2H", "9C"], (1, "player", "10.00")))
    row = out["settlements"][0]
    assert (row["result"], row["win"], row["outcome"], row["odds"]) == (
        "win",
        "250.00",
        "royal_match",
        "25 to 1",
    )


@pytest.mark.parametrize(
    "banker",
    [
        ["2H", "9H"],  # any two of a suit
        ["KS", "KS"],  # two identical cards from a multi-deck shoe: suited, not a Royal Match
        ["KS", "JS"],  # king with another card of its suit
        ["QD", "AD"],
    ],
)
def test_631b_7_e_2_suited_match_pays_2_5_to_1(banker: list[str]) -> None:
    out = games.settle(doc(["2C", "9D"], banker, (1, "banker", "5.00")))
    row = out["settlements"][0]
    assert (row["result"], row["win"], row["outcome"], row["odds"]) == (
        "win",
        "12.50",
        "suited_match",
        "2.5 to 1",
    )


@pytest.mark.parametrize("player", [["KS", "QH"], ["2C", "9D"], ["AS", "AH"]])
def test_631b_7_c_2_no_match_is_collected(player: list[str]) -> None:
    out = games.settle(doc(player, ["2H", "9H"], (1, "player", "5.00")))
    row = out["settlements"][0]
    assert (row["result"], row["win"]) == ("lose", "0.00")
    assert out["seats"]["1"] == {"staked": "5.00", "won": "0.00", "lost": "5.00", "net": "-5.00"}


def test_631b_7_c_1_both_hands_pay_separately() -> None:
    out = games.settle(doc(["KS", "QS"], ["4H", "9H"], (1, "player", "10.00"), (1, "banker", "10.00")))
    assert [r["win"] for r in out["settlements"]] == ["250.00", "25.00"]
    assert out["seats"]["1"] == {"staked": "20.00", "won": "275.00", "lost": "0.00", "net": "275.00"}


def test_631b_7_b_no_baccarat_wager_needed_and_settlements_follow_wager_order() -> None:
    out = games.settle(
        doc(["KS", "QS"], ["4H", "9C"], (2, "banker", "1.00"), (1, "player", "2.00"), (2, "player", "3.00"))
    )
    assert [(r["seat"], r["hand"]) for r in out["settlements"]] == [
        (2, "banker"),
        (1, "player"),
        (2, "player"),
    ]
    assert out["seats"]["2"]["net"] == "74.00"  # 3 x 25 won on player, 1 lost on banker


def test_631b_7_b_wager_names_its_hand() -> None:
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(doc(["KS", "QS"], ["4H", "9C"], (1, "tie", "1.00")))
    assert clauses(err) == ["631b.7(b)"]
    assert err.value.problems[0].field == "wagers[0].hand"


def test_631b_7_a_one_wager_per_hand_per_player() -> None:
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(doc(["KS", "QS"], ["4H", "9C"], (1, "player", "1.00"), (1, "player", "2.00")))
    assert clauses(err) == ["631b.7(a)"]
    assert err.value.problems[0].field == "wagers[1]"


@pytest.mark.parametrize("player", [["KS"], ["KS", "QS", "2H"], []])
def test_631b_7_b_exactly_the_initial_two_cards(player: list[str]) -> None:
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(doc(player, ["4H", "9C"], (1, "player", "1.00")))
    assert clauses(err) == ["631b.7(b)"]


def test_every_problem_is_listed_at_once() -> None:
    bad = doc(["KS", "XX"], ["4H"], (0, "player", "-1"), (1, "side", "1.00"), decks=7)
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(bad)
    fields = [p.field for p in err.value.problems]
    assert fields == [
        "decks",
        "wagers[0].seat",
        "wagers[0].amount",
        "wagers[1].hand",
        "player_cards[1]",
        "banker_cards",
    ]
    assert clauses(err) == ["document", "document", "document", "631b.7(b)", "document", "631b.7(b)"]


def test_unknown_document_fields_are_refused() -> None:
    bad = doc(["KS", "QS"], ["4H", "9C"], (1, "player", "1.00"))
    bad["banker_card"] = ["4H", "9C"]
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(bad)
    assert [(p.clause, p.field) for p in err.value.problems] == [("document", "banker_card")]


def test_example_document_settles() -> None:
    out = games.settle(json.loads((EXAMPLES / "majestic_match.json").read_text()))
    assert [r["result"] for r in out["settlements"]] == ["win", "lose", "lose"]


# ---------------------------------------------------------------- math


@pytest.mark.parametrize("decks", [6, 8])
def test_math_matches_the_closed_form(decks: int) -> None:
    """Independent check: C(N, 2) unordered pairs; 4 d^2 suited K-Q pairs; 4 C(13 d, 2) suited pairs."""
    pairs = comb(52 * decks, 2)
    royal = Fraction(4 * decks * decks, pairs)
    suited = Fraction(4 * comb(13 * decks, 2), pairs) - royal
    got = mm.outcome_probabilities(decks)
    assert got == {"royal_match": royal, "suited_match": suited, "no_match": 1 - royal - suited}
    report = games.math_report("majestic_match", MathOptions(decks=decks))
    assert Fraction(report.data["house_edge"]) == 1 - royal - suited - 25 * royal - Fraction(5, 2) * suited


def test_type_enumeration_matches_brute_force_over_real_cards() -> None:
    """The 12-type enumeration against every ordered pair of real cards of one deck (`classify`)."""
    counts = {"royal_match": 0, "suited_match": 0, "no_match": 0}
    for a, b in permutations(full_deck(), 2):
        counts[mm.classify((a, b))] += 1
    total = 52 * 51
    assert mm.outcome_probabilities(1) == {k: Fraction(v, total) for k, v in counts.items()}


@pytest.mark.parametrize("decks", [6, 8])
def test_joint_distribution_sums_to_one_and_has_the_single_hand_marginals(decks: int) -> None:
    joint = mm.joint_probabilities(decks)
    assert sum(joint.values()) == 1
    single = mm.outcome_probabilities(decks)
    for outcome, p in single.items():
        assert sum(q for (a, _), q in joint.items() if a == outcome) == p
        assert sum(q for (_, b), q in joint.items() if b == outcome) == p


@pytest.mark.parametrize("decks", [1, 2, 7, 0, "8"])
def test_math_refuses_other_deck_counts(decks: object) -> None:
    with pytest.raises(DocumentRefusedError, match="supports 6, 8 decks"):
        games.math_report("majestic_match", MathOptions(decks=decks))  # type: ignore[arg-type]


def test_math_refuses_options_of_other_games() -> None:
    with pytest.raises(DocumentRefusedError, match="takes no distribution"):
        games.math_report("majestic_match", MathOptions(distribution={}))


def test_math_report_prints_fractions() -> None:
    report = games.math_report("majestic_match", MathOptions(decks=6))
    assert report.data["probability_sum"] == "1/1"
    for row in report.tables[0].rows:
        numerator, denominator = row[2].split("/")
        assert int(numerator) >= 0 and int(denominator) > 0


@given(st.lists(st.sampled_from(full_deck()), min_size=4, max_size=4))
@settings(max_examples=80, deadline=None)
def test_settlement_invariants(cards: list[Card]) -> None:
    """Win iff suited; the Royal Match is exactly suited K-Q; net = won - lost for the seat."""
    player, banker = [str(c) for c in cards[:2]], [str(c) for c in cards[2:]]
    out = games.settle(doc(player, banker, (1, "player", "2.00"), (1, "banker", "2.00")))
    for row, hand in zip(out["settlements"], (cards[:2], cards[2:]), strict=True):
        suited = hand[0].suit == hand[1].suit
        assert (row["result"] == "win") == suited
        royal = suited and {hand[0].rank, hand[1].rank} == {"K", "Q"}
        expected = Decimal("50.00") if royal else Decimal("5.00") if suited else Decimal(0)
        assert Decimal(row["win"]) == expected
    seat = out["seats"]["1"]
    assert Decimal(seat["net"]) == Decimal(seat["won"]) - Decimal(seat["lost"])
    assert parse_card(out["hands"]["player"]["cards"][0]) == cards[0]
