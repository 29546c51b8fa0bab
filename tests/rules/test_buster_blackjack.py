"""Buster Blackjack (633b.13): the four-deck paytable, dealer-hand validation, settlement, exact bust math."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules import games
from rules.cards import full_deck
from rules.games import DocumentRefusedError, MathOptions
from rules.side_wagers import buster_blackjack as bb
from rules.side_wagers.blackjack import dealer_hand_problem, dealer_outcomes, hand_total

EXAMPLES = Path(bb.__file__).parent / "examples"


def doc(dealer: list[str], *, decks: int = 4, hits_soft_17: bool = False, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "game": "buster_blackjack",
        "decks": decks,
        "settings": {"dealer_hits_soft_17": hits_soft_17},
        "wagers": [{"seat": 1, "kind": "buster_blackjack", "amount": "10.00"}],
        "dealer_cards": dealer,
    }
    out.update(extra)
    return out


def refused(document: dict[str, Any]) -> list[tuple[str, str | None]]:
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(document)
    return [(p.clause, p.field) for p in err.value.problems]


@pytest.mark.parametrize(
    ("dealer", "cards", "win"),
    [
        (["10H", "6S", "KD"], 3, "20.00"),  # 3 cards 2 to 1
        (["2H", "3S", "10D", "QC"], 4, "20.00"),  # 4 cards 2 to 1
        (["2H", "3S", "4D", "5C", "KD"], 5, "40.00"),  # 5 cards 4 to 1
        (["2H", "2S", "3D", "3C", "5H", "JD"], 6, "150.00"),  # 6 cards 15 to 1
        (["2H", "2S", "2D", "3C", "3H", "3D", "JD"], 7, "500.00"),  # 7 cards 50 to 1
        (["2H", "2S", "2D", "2C", "3H", "3D", "AS", "JD"], 8, "2500.00"),  # 8 cards 250 to 1
        (["2H", "2S", "2D", "2C", "3H", "AH", "AS", "AD", "AC", "KD"], 10, "2500.00"),  # "8 or more"
    ],
)
def test_633b_13_h_four_deck_paytable_by_cards_in_the_busted_hand(
    dealer: list[str], cards: int, win: str
) -> None:
    out = games.settle(doc(dealer))
    row = out["settlements"][0]
    assert (row["result"], row["win"], row["dealer_cards"]) == ("win", win, cards)
    assert out["dealer"]["bust"] is True


@pytest.mark.parametrize(
    "dealer",
    [
        ["10H", "7S"],  # stands on 17
        ["AS", "KD"],  # dealer Blackjack: not a bust
        ["5H", "6S", "10D"],  # 21
        ["AS", "6D"],  # soft 17 under S17
    ],
)
def test_633b_13_h_no_bust_loses(dealer: list[str]) -> None:
    out = games.settle(doc(dealer))
    assert (out["settlements"][0]["result"], out["settlements"][0]["win"]) == ("lose", "0.00")
    assert out["seats"]["1"]["net"] == "-10.00"


def test_633b_13_h_soft_17_rule_decides_whether_the_hand_is_finished() -> None:
    # S17: A-6 is finished; a third card would be extra.
    assert games.settle(doc(["AS", "6D"]))["dealer"]["total"] == 17
    assert refused(doc(["AS", "6D", "10C"])) == [("633b.13(h)", "dealer_cards")]
    # H17: A-6 must draw; A-6-10 is a hard 17 and stands; A-6-5-4-K busts with 5 cards.
    assert refused(doc(["AS", "6D"], hits_soft_17=True)) == [("633b.13(h)", "dealer_cards")]
    assert games.settle(doc(["AS", "6D", "10C"], hits_soft_17=True))["settlements"][0]["result"] == "lose"
    out = games.settle(doc(["AS", "6D", "5C", "4H", "KD"], hits_soft_17=True))
    assert out["settlements"][0]["win"] == "40.00"


@pytest.mark.parametrize(
    ("dealer", "message"),
    [
        (["10H", "5S"], "not finished"),  # must draw on 15
        (["10H", "7S", "2D"], "stands on hard 17"),  # drew past 17
        (["10H", "6S", "KD", "2C"], "was bust"),  # drew after busting
        (["KH"], "at least 2 cards"),
    ],
)
def test_633b_13_h_impossible_dealer_hands_are_refused(dealer: list[str], message: str) -> None:
    with pytest.raises(DocumentRefusedError, match=message):
        games.settle(doc(dealer))


@pytest.mark.parametrize("decks", [2, 3, 5, 0])
def test_633b_13_c_one_four_six_or_eight_decks(decks: int) -> None:
    assert refused(doc(["10H", "6S", "KD"], decks=decks)) == [("633b.13(c)", "decks")]


@pytest.mark.parametrize("decks", [1, 6, 8])
def test_633b_13_h_other_shoes_need_their_paytable_from_the_rules_submission(decks: int) -> None:
    assert refused(doc(["10H", "6S", "KD"], decks=decks)) == [("633b.13(h)", "paytable")]
    table = json.loads((EXAMPLES / "buster_blackjack_paytable.json").read_text())
    table["pays"]["3"] = "1 to 1"
    out = games.settle(doc(["10H", "6S", "KD"], decks=decks, paytable=table))
    assert out["settlements"][0]["win"] == "10.00"


@pytest.mark.parametrize(
    ("pays", "message"),
    [
        ({"3": "2 to 1", "5+": "4 to 1"}, "no odds for a bust with 4 cards"),
        ({"3": "2 to 1", "4": "2 to 1"}, "exactly one key"),
        ({"2": "1 to 1", "3+": "2 to 1"}, "cannot bust with 2 cards"),
        ({"3": "2.5", "4+": 3.5}, "not 3.5"),
        ({"three": "2 to 1", "4+": "3 to 1"}, "not a card count"),
        ({"3+": "2 to 1", "9": "3 to 1"}, "counts above"),
    ],
)
def test_bad_paytables_are_refused(pays: dict[str, object], message: str) -> None:
    with pytest.raises(DocumentRefusedError, match=message):
        games.settle(doc(["10H", "6S", "KD"], paytable={"pays": pays}))


def test_shoe_cannot_hold_the_cards() -> None:
    # One deck holds one ten of hearts: the dealer and a player cannot both have it.
    table = {"pays": {"3+": "2 to 1"}}
    assert refused(doc(["10H", "6S", "KD"], decks=1, paytable=table, player_cards={"1": ["10H", "9C"]})) == [
        ("document", "cards")
    ]


def test_one_wager_per_seat_and_every_problem_listed() -> None:
    bad = doc(["10H", "5S"], decks=2)
    bad["wagers"].append({"seat": 1, "kind": "buster_blackjack", "amount": "1.00"})
    bad["settings"] = {"dealer_hits_soft_17": "yes", "surrender": True}
    assert refused(bad) == [
        ("633b.13(c)", "decks"),
        ("document", "settings.dealer_hits_soft_17"),
        ("document", "settings.surrender"),
        ("633b.13", "wagers[1]"),
        ("633b.13(h)", "dealer_cards"),
    ]


def test_example_document_settles() -> None:
    out = games.settle(json.loads((EXAMPLES / "buster_blackjack.json").read_text()))
    assert [r["win"] for r in out["settlements"]] == ["20.00", "8.00"]


@given(st.permutations(full_deck()), st.booleans())
@settings(max_examples=100, deadline=None)
def test_dealing_by_the_rule_always_gives_an_accepted_hand(deck: list[Any], hits: bool) -> None:
    """Play the dealer's rule on a shuffled deck: the result is accepted, one card fewer or more is not."""
    hand = deck[:2]
    while True:
        total = hand_total(hand)
        if total.bust or not (total.total < 17 or (hits and total.soft and total.total == 17)):
            break
        hand.append(deck[len(hand)])
    assert dealer_hand_problem(hand, hits_soft_17=hits) is None
    assert dealer_hand_problem([*hand, deck[len(hand)]], hits_soft_17=hits) is not None
    if len(hand) > 2:
        assert dealer_hand_problem(hand[:-1], hits_soft_17=hits) is not None
    out = games.settle(
        doc([str(c) for c in hand], decks=1, hits_soft_17=hits, paytable={"pays": {"3": 1, "4+": 2}})
    )
    assert (out["settlements"][0]["result"] == "win") == total.bust


# ---------------------------------------------------------------- math


def _brute_force_bust(decks: int, hits: bool) -> dict[int, Fraction]:
    """Independent check: walk every ordered draw with its probability (no memo, no integer counting)."""
    counts = [4 * decks] * 9 + [16 * decks]
    bust: dict[int, Fraction] = {}

    def walk(hand: list[int], p: Fraction) -> None:
        hard = sum(hand)
        soft = 1 in hand and hard + 10 <= 21
        total = hard + 10 if soft else hard
        if total > 21:
            bust[len(hand)] = bust.get(len(hand), Fraction(0)) + p
            return
        if len(hand) >= 2 and (total > 17 or (total == 17 and not (hits and soft))):
            return
        left = sum(counts)
        for v in range(10):
            if counts[v]:
                c = counts[v]
                counts[v] -= 1
                walk([*hand, v + 1], p * Fraction(c, left))
                counts[v] += 1

    walk([], Fraction(1))
    return dict(sorted(bust.items()))


@pytest.mark.parametrize("hits", [False, True])
def test_memoised_enumeration_matches_brute_force_for_one_deck(hits: bool) -> None:
    assert dealer_outcomes(decks=1, hits_soft_17=hits).bust == _brute_force_bust(1, hits)


@pytest.mark.parametrize("decks", [1, 4, 6, 8])
@pytest.mark.parametrize("hits", [False, True])
def test_dealer_outcomes_sum_to_one(decks: int, hits: bool) -> None:
    outcomes = dealer_outcomes(decks=decks, hits_soft_17=hits)
    assert outcomes.total() == 1
    assert min(outcomes.bust) == 3  # two cards never bust
    # Dealer Blackjack: an ace and a ten-value card, either order.
    n = 52 * decks
    assert outcomes.blackjack == Fraction(2 * 4 * decks * 16 * decks, n * (n - 1))


@pytest.mark.parametrize("decks", [1, 4, 6, 8])
def test_three_card_bust_does_not_depend_on_the_soft_17_rule_and_h17_busts_more(decks: int) -> None:
    s17 = dealer_outcomes(decks=decks, hits_soft_17=False)
    h17 = dealer_outcomes(decks=decks, hits_soft_17=True)
    assert (
        s17.bust[3] == h17.bust[3]
    )  # a soft 17 needs an ace, and a two-card soft 17 drawing a card cannot bust
    assert h17.bust_total > s17.bust_total


def test_math_report_four_decks_house_edge_from_its_own_probabilities() -> None:
    report = games.math_report("buster_blackjack", MathOptions(decks=4))
    for rule in ("s17", "h17"):
        data = report.data["rules"][rule]
        assert data["probability_sum"] == "1/1"
        probs = {int(n): Fraction(p) for n, p in data["bust_by_cards"].items()}
        expected = sum(p * bb.FOUR_DECK.odds(n) for n, p in probs.items()) - (1 - sum(probs.values()))
        assert Fraction(report.data["house_edge"][rule]) == -expected


def test_math_without_a_paytable_gives_probabilities_only() -> None:
    report = games.math_report("buster_blackjack", MathOptions(decks=6))
    assert report.data["paytable"] is None
    assert "house_edge" not in report.data
    assert any("--paytable" in note for note in report.notes)
    with_table = games.math_report(
        "buster_blackjack",
        MathOptions(decks=6, paytable=json.loads((EXAMPLES / "buster_blackjack_paytable.json").read_text())),
    )
    assert set(with_table.data["house_edge"]) == {"s17", "h17"}


@pytest.mark.parametrize("decks", [2, 5])
def test_math_refuses_other_deck_counts(decks: int) -> None:
    with pytest.raises(DocumentRefusedError, match="supports 1, 4, 6, 8 decks"):
        games.math_report("buster_blackjack", MathOptions(decks=decks))
