"""Cards: parsing short strings, the typed value, shoes and impossible card sets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.cards import RANKS, SUITS, Card, CardError, Shoe, Suit, full_deck, parse_card


@pytest.mark.parametrize(
    ("text", "rank", "suit"),
    [
        ("KS", "K", Suit.SPADES),
        ("QS", "Q", Suit.SPADES),
        ("10H", "10", Suit.HEARTS),  # two-character rank
        ("TH", "10", Suit.HEARTS),  # T is the usual one-letter ten
        ("as", "A", Suit.SPADES),  # case does not matter
        (" 2c ", "2", Suit.CLUBS),  # surrounding blanks are ignored
        ("J♦", "J", Suit.DIAMONDS),  # suit symbols
    ],
)
def test_parse_card_accepts(text: str, rank: str, suit: Suit) -> None:
    card = parse_card(text)
    assert (card.rank, card.suit) == (rank, suit)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is not a card"),  # empty
        ("K", "is not a card"),  # no suit
        ("KX", "suit 'X'"),  # unknown suit
        ("1S", "rank '1'"),  # not guessed to be an ace
        ("11H", "rank '11'"),  # no such rank
        ("0D", "rank '0'"),
        ("KSS", "rank 'KS'"),
        (12, "a card is a string"),  # not a string
        (None, "a card is a string"),
    ],
)
def test_parse_card_refuses_with_a_clear_message(text: object, message: str) -> None:
    with pytest.raises(CardError, match=message):
        parse_card(text)


def test_card_value_type_validates_itself() -> None:
    with pytest.raises(CardError, match="rank"):
        Card(rank="1", suit=Suit.SPADES)
    with pytest.raises(CardError, match="suit"):
        Card(rank="K", suit="S")  # type: ignore[arg-type]


def test_card_is_frozen_and_hashable() -> None:
    card = parse_card("KS")
    with pytest.raises(AttributeError):
        card.rank = "Q"  # type: ignore[misc]
    assert {card, parse_card("ks")} == {card}


@pytest.mark.parametrize(
    ("text", "value"), [("AS", 1), ("2H", 2), ("9D", 9), ("10C", 10), ("JS", 10), ("QH", 10), ("KD", 10)]
)
def test_blackjack_values(text: str, value: int) -> None:
    assert parse_card(text).blackjack_value == value


def test_full_deck_has_52_different_cards() -> None:
    deck = full_deck()
    assert len(deck) == 52 == len(set(deck))
    assert {c.rank for c in deck} == set(RANKS)
    assert {c.suit for c in deck} == set(SUITS)


@given(st.sampled_from(full_deck()))
@settings(max_examples=60, deadline=None)
def test_str_round_trips(card: Card) -> None:
    assert parse_card(str(card)) == card


def test_shoe_refuses_more_copies_than_decks() -> None:
    two_kings = [parse_card("KS"), parse_card("KS")]
    assert Shoe(2).overdraws(two_kings) == {}
    Shoe(2).check(two_kings)
    with pytest.raises(CardError, match=r"1-deck shoe holds each card 1 time\(s\); seen KS x2"):
        Shoe(1).check(two_kings)


@pytest.mark.parametrize("decks", [0, -1, 1.5, True, "6"])
def test_shoe_refuses_a_bad_deck_count(decks: object) -> None:
    with pytest.raises(CardError, match="whole number of decks"):
        Shoe(decks)  # type: ignore[arg-type]


def test_shoe_size() -> None:
    assert Shoe(8).size == 416
