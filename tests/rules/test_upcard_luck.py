"""Upcard Luck (633b.15): every rule of the text, the interpretation settings, refusals, exact math."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import permutations
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules import games
from rules.cards import Card, full_deck, parse_card
from rules.games import DocumentRefusedError, MathOptions
from rules.side_wagers import upcard_luck as ul

EXAMPLES = Path(ul.__file__).parent / "examples"


def doc(
    upcard: str, player: list[str], *, amount: str = "10.00", decks: int = 6, **setting: Any
) -> dict[str, Any]:
    return {
        "game": "upcard_luck",
        "decks": decks,
        "settings": setting,
        "wagers": [{"seat": 1, "kind": "upcard_luck", "amount": amount, "blackjack_wager": "10.00"}],
        "dealer_upcard": upcard,
        "player_cards": {"1": player},
    }


def settle_one(upcard: str, player: list[str], **setting: Any) -> tuple[str, str, str]:
    row = games.settle(doc(upcard, player, **setting))["settlements"][0]
    return row["result"], row["outcome"], row["win"]


def refused(document: dict[str, Any]) -> list[tuple[str, str | None]]:
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(document)
    return [(p.clause, p.field) for p in err.value.problems]


@pytest.mark.parametrize("upcard", ["2H", "3S", "4D", "5C", "6H", "7S"])
def test_633b_15_g_ace_jack_of_spades_pays_80_to_1(upcard: str) -> None:
    assert settle_one(upcard, ["AS", "JS"]) == ("win", "ace_jack_spades", "800.00")
    assert settle_one(upcard, ["JS", "AS"]) == ("win", "ace_jack_spades", "800.00")


@pytest.mark.parametrize("player", [["AH", "JS"], ["AS", "JH"], ["AS", "KS"], ["10D", "AC"], ["AS", "QS"]])
def test_633b_15_g_other_blackjacks_pay_8_to_1(player: list[str]) -> None:
    assert settle_one("4D", player) == ("win", "blackjack", "80.00")


@pytest.mark.parametrize(
    "player", [["5H", "4S"], ["2D", "7C"], ["6H", "4H"], ["5S", "5D"], ["9C", "2C"], ["8H", "3D"]]
)
def test_633b_15_f_3_nine_ten_or_eleven_pays_4_to_1(player: list[str]) -> None:
    assert settle_one("7H", player) == ("win", "9_to_11", "40.00")


@pytest.mark.parametrize(
    "player", [["10H", "8S"], ["9D", "9C"], ["KS", "QH"], ["JD", "10C"], ["AH", "8S"], ["AD", "9C"]]
)
def test_633b_15_f_3_eighteen_to_twenty_hard_or_soft_pays_3_to_1(player: list[str]) -> None:
    assert settle_one("2S", player) == ("win", "18_to_20", "30.00")


@pytest.mark.parametrize(
    "player",
    [
        ["2H", "3S"],  # 5
        ["4D", "4C"],  # 8
        ["3H", "5D"],  # 8
        ["10H", "2S"],  # 12
        ["9D", "8C"],  # 17
        ["AH", "AS"],  # 2 or 12
        ["AH", "5S"],  # soft 16
        ["AH", "6S"],  # soft 17
    ],
)
def test_633b_15_f_2_totals_2_to_8_and_12_to_17_lose(player: list[str]) -> None:
    assert settle_one("5C", player) == ("lose", "lose", "0.00")


@pytest.mark.parametrize("upcard", ["AH", "8S", "9D", "10C", "JH", "QS", "KD"])
@pytest.mark.parametrize("player", [["AS", "JS"], ["AH", "KD"], ["5H", "5S"], ["10H", "QS"]])
def test_633b_15_f_1_upcard_not_2_to_7_loses(upcard: str, player: list[str]) -> None:
    assert settle_one(upcard, player) == ("lose", "lose", "0.00")


def test_setting_ace_jack_spades_needs_upcard() -> None:
    assert settle_one("KD", ["AS", "JS"], ace_jack_spades_needs_upcard=False) == (
        "win",
        "ace_jack_spades",
        "800.00",
    )
    assert settle_one("KD", ["AH", "JS"], ace_jack_spades_needs_upcard=False) == ("lose", "lose", "0.00")


def test_setting_ace_seven_is_soft_18() -> None:
    assert settle_one("3C", ["AH", "7S"]) == ("win", "18_to_20", "30.00")  # default: soft 18 wins
    assert settle_one("3C", ["AH", "7S"], ace_seven_is_soft_18=False) == ("lose", "lose", "0.00")
    assert settle_one("3C", ["AH", "8S"], ace_seven_is_soft_18=False) == (
        "win",
        "18_to_20",
        "30.00",
    )  # others stay


def test_setting_soft_hand_total_better() -> None:
    assert settle_one("3C", ["AH", "8S"], soft_hand_total="better") == ("win", "9_to_11", "40.00")  # 9 or 19
    assert settle_one("3C", ["AH", "9S"], soft_hand_total="better") == ("win", "9_to_11", "40.00")  # 10 or 20
    assert settle_one("3C", ["AH", "7S"], soft_hand_total="better") == ("win", "18_to_20", "30.00")  # 8 or 18
    assert settle_one("3C", ["AH", "AS"], soft_hand_total="better") == ("lose", "lose", "0.00")  # 2 or 12
    assert settle_one("3C", ["AH", "KS"], soft_hand_total="better") == ("win", "blackjack", "80.00")


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ({"soft_hand_total": "best"}, "settings.soft_hand_total"),
        ({"ace_seven_is_soft_18": "yes"}, "settings.ace_seven_is_soft_18"),
        ({"ace_seven_is_soft_18": 1}, "settings.ace_seven_is_soft_18"),
        ({"a7": True}, "settings.a7"),
    ],
)
def test_unknown_settings_are_refused(setting: dict[str, Any], field: str) -> None:
    assert refused(doc("3C", ["AH", "7S"], **setting)) == [("document", field)]


def test_633b_15_d_wager_at_most_the_blackjack_wager() -> None:
    assert (
        games.settle(doc("3C", ["5H", "5S"], amount="10.00"))["settlements"][0]["win"] == "40.00"
    )  # equal: fine
    assert refused(doc("3C", ["5H", "5S"], amount="10.01")) == [("633b.15(d)", "wagers[0].amount")]
    no_main = doc("3C", ["5H", "5S"])
    del no_main["wagers"][0]["blackjack_wager"]
    assert refused(no_main) == [("633b.15(d)", "wagers[0].blackjack_wager")]


@pytest.mark.parametrize("decks", [1, 2, 5])
def test_633b_15_b_four_six_or_eight_decks(decks: int) -> None:
    assert refused(doc("3C", ["5H", "5S"], decks=decks)) == [("633b.15(b)", "decks")]


@pytest.mark.parametrize("player", [["5H"], ["5H", "5S", "2C"]])
def test_633b_15_f_settled_on_the_first_two_cards(player: list[str]) -> None:
    assert refused(doc("3C", player)) == [("633b.15(f)", "player_cards.1")]


def test_633b_15_c_one_wager_per_player_and_cards_for_every_wager() -> None:
    bad = doc("3C", ["5H", "5S"])
    bad["wagers"].append({"seat": 1, "kind": "upcard_luck", "amount": "1.00", "blackjack_wager": "1.00"})
    bad["wagers"].append({"seat": 2, "kind": "upcard_luck", "amount": "1.00", "blackjack_wager": "1.00"})
    assert refused(bad) == [("633b.15(c)", "wagers[1]"), ("633b.15(f)", "player_cards")]


def test_impossible_cards_in_a_four_deck_shoe() -> None:
    bad = doc("5S", ["5S", "5S"], decks=4)
    bad["player_cards"]["2"] = ["5S", "5S"]
    assert refused(bad) == [("document", "cards")]


def test_bad_upcard() -> None:
    assert refused(doc("1S", ["5H", "5S"])) == [("document", "dealer_upcard[0]")]


def test_example_document_settles() -> None:
    out = games.settle(json.loads((EXAMPLES / "upcard_luck.json").read_text()))
    assert [r["win"] for r in out["settlements"]] == ["400.00", "15.00", "8.00", "0.00"]


SETTING_VARIANTS = [
    {"soft_hand_total": s, "ace_seven_is_soft_18": a, "ace_jack_spades_needs_upcard": j}
    for s in ("soft", "better")
    for a in (True, False)
    for j in (True, False)
]


@given(st.permutations(full_deck()), st.sampled_from(SETTING_VARIANTS))
@settings(max_examples=150, deadline=None)
def test_classification_invariants(deck: list[Card], setting: dict[str, Any]) -> None:
    """Whatever the settings: a loss on an upcard outside 2-7 (A♠ J♠ aside), and A♠ J♠ always wins on 2-7;
    the 'soft' reading never pays more than the 'better' one."""
    upcard, a, b = deck[0], deck[1], deck[2]
    outcome = ul.classify((a, b), upcard, setting)
    is_aj = {str(a), str(b)} == {"AS", "JS"}
    if not ul.upcard_qualifies(upcard) and not (is_aj and not setting["ace_jack_spades_needs_upcard"]):
        assert outcome == "lose"
    if is_aj and ul.upcard_qualifies(upcard):
        assert outcome == "ace_jack_spades"
    soft = ul.classify((a, b), upcard, {**setting, "soft_hand_total": "soft"})
    better = ul.classify((a, b), upcard, {**setting, "soft_hand_total": "better"})
    pays = {**ul.PAYTABLE, "lose": Fraction(-1)}
    assert pays[soft] <= pays[better]


# ---------------------------------------------------------------- math


def test_type_enumeration_matches_brute_force_over_real_cards() -> None:
    """Independent check: every ordered (player, player, upcard) triple of real cards of one deck."""
    setting = dict(ul.SETTINGS_DEFAULTS)
    counts = dict.fromkeys(ul.OUTCOMES, 0)
    deck = full_deck()
    for a, b, u in permutations(deck, 3):
        counts[ul.classify((a, b), u, setting)] += 1
    total = 52 * 51 * 50
    assert ul.outcome_probabilities(1, setting) == {k: Fraction(v, total) for k, v in counts.items()}


@pytest.mark.parametrize("decks", [4, 6, 8])
def test_ace_jack_spades_by_hand(decks: int) -> None:
    """2 orders x d A♠ x d J♠, then an upcard 2-7 (24 d cards) from the n - 2 left."""
    n = 52 * decks
    expected = Fraction(2 * decks * decks, n * (n - 1)) * Fraction(24 * decks, n - 2)
    assert ul.outcome_probabilities(decks, ul.SETTINGS_DEFAULTS)["ace_jack_spades"] == expected


@pytest.mark.parametrize("decks", [4, 6, 8])
def test_math_report_sums_to_one_and_edge_follows_from_probabilities(decks: int) -> None:
    report = games.math_report("upcard_luck", MathOptions(decks=decks))
    probs = {k: Fraction(v) for k, v in report.data["probabilities"].items()}
    assert sum(probs.values()) == 1
    assert report.data["probability_sum"] == "1/1"
    expected = sum(probs[k] * o for k, o in ul.PAYTABLE.items()) - probs["lose"]
    assert Fraction(report.data["house_edge"]) == -expected
    assert len(report.data["house_edge_by_settings"]) == 8


def test_math_reads_settings_and_refuses_bad_ones() -> None:
    default = games.math_report("upcard_luck", MathOptions(decks=6))
    better = games.math_report("upcard_luck", MathOptions(decks=6, settings={"soft_hand_total": "better"}))
    assert Fraction(better.data["house_edge"]) < Fraction(default.data["house_edge"])
    with pytest.raises(DocumentRefusedError, match="soft_hand_total"):
        games.math_report("upcard_luck", MathOptions(decks=6, settings={"soft_hand_total": "x"}))
    with pytest.raises(DocumentRefusedError, match="supports 4, 6, 8 decks"):
        games.math_report("upcard_luck", MathOptions(decks=1))


def test_parse_card_of_upcard_qualifies() -> None:
    assert [ul.upcard_qualifies(parse_card(t)) for t in ("AS", "2S", "7S", "8S", "KS")] == [
        False,
        True,
        True,
        False,
        False,
    ]
