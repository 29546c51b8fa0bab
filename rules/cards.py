"""Playing cards as small typed values, parsed from short strings ("KS", "QS", "10H"), and shoes of N decks.

Exceptions::

    RulesError (rules.games)
    └── CardError        a card string that names no card ("1S", "KX", ""), or a set of cards that one shoe
                         cannot hold (three K♠ from a one-deck shoe)

The card games of the side wagers (Majestic Match, Buster Blackjack, Upcard Luck) read their cards with
`parse_card`; `shoe_overdraws` tells which cards a document uses more often than the shoe holds. No library
on PyPI gives a typed, dependency-free card value with these exact spellings and errors, so it is written
here (about a hundred lines).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from rules.games import RulesError


class CardError(RulesError):
    """A card string names no card, or cards exceed what a shoe holds."""


class Suit(StrEnum):
    """The four suits, by their one-letter codes."""

    SPADES = "S"
    HEARTS = "H"
    DIAMONDS = "D"
    CLUBS = "C"


# Ranks in their canonical spelling, ace low. "T" is accepted as an alias for "10" when parsing.
RANKS: tuple[str, ...] = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_RANK_ALIASES = {"T": "10"} | {r: r for r in RANKS}  # "1S" is refused rather than guessed to be an ace
_SUIT_SYMBOLS = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}
SUITS: tuple[Suit, ...] = tuple(Suit)
_SUIT_CODES = frozenset(s.value for s in Suit)
CARDS_PER_DECK = 52


@dataclass(frozen=True, order=True)
class Card:
    """One playing card: `rank` in `RANKS` ("A", "2".."10", "J", "Q", "K") and a `Suit`."""

    rank: str
    suit: Suit

    def __post_init__(self) -> None:
        if self.rank not in RANKS:
            raise CardError(f"rank {self.rank!r} is not one of {', '.join(RANKS)}")
        if not isinstance(self.suit, Suit):
            raise CardError(f"suit {self.suit!r} is not one of S, H, D, C")

    @property
    def blackjack_value(self) -> int:
        """Value in Blackjack: ace 1 (the hand total decides whether it counts 11), 10/J/Q/K 10."""
        if self.rank == "A":
            return 1
        if self.rank in ("J", "Q", "K"):
            return 10
        return int(self.rank)

    @property
    def is_ten_value(self) -> bool:
        """A 10, jack, queen or king."""
        return self.blackjack_value == 10

    def __str__(self) -> str:
        return f"{self.rank}{self.suit.value}"


def parse_card(text: object) -> Card:
    """Parse "KS", "QS", "10H", "TH", "as" (case-insensitive) or "A♠" into a `Card`.

    Raises:
        CardError: the text is not a string naming exactly one card.
    """
    if not isinstance(text, str):
        raise CardError(f"a card is a string like 'KS' or '10H', not {text!r}")
    cleaned = text.strip().upper()
    if len(cleaned) < 2:
        raise CardError(f"{text!r} is not a card: write rank then suit, like 'KS', 'QH' or '10D'")
    rank_text, suit_text = cleaned[:-1], cleaned[-1]
    suit_code = _SUIT_SYMBOLS.get(suit_text, suit_text)
    if suit_code not in _SUIT_CODES:
        raise CardError(f"{text!r} is not a card: suit {suit_text!r} is not one of S, H, D, C")
    rank = _RANK_ALIASES.get(rank_text)
    if rank is None:
        raise CardError(f"{text!r} is not a card: rank {rank_text!r} is not one of {', '.join(RANKS)}")
    return Card(rank=rank, suit=Suit(suit_code))


def full_deck() -> tuple[Card, ...]:
    """The 52 cards of one deck, suit by suit."""
    return tuple(Card(rank=rank, suit=suit) for suit in SUITS for rank in RANKS)


@dataclass(frozen=True)
class Shoe:
    """A shoe of `decks` standard 52-card decks (no jokers)."""

    decks: int

    def __post_init__(self) -> None:
        if isinstance(self.decks, bool) or not isinstance(self.decks, int) or self.decks < 1:
            raise CardError(f"a shoe holds a whole number of decks, at least 1, not {self.decks!r}")

    @property
    def size(self) -> int:
        """Number of cards in the full shoe."""
        return CARDS_PER_DECK * self.decks

    def copies(self, card: Card) -> int:
        """How many copies of `card` the full shoe holds."""
        return self.decks

    def overdraws(self, cards: Iterable[Card]) -> dict[Card, int]:
        """The cards that appear more often than the shoe holds them, with their counts (empty: all fine)."""
        counts = Counter(cards)
        return {card: n for card, n in sorted(counts.items()) if n > self.decks}

    def check(self, cards: Iterable[Card]) -> None:
        """Refuse a set of cards this shoe cannot hold.

        Raises:
            CardError: some card appears more often than there are decks.
        """
        over = self.overdraws(cards)
        if over:
            listed = ", ".join(f"{card} x{n}" for card, n in over.items())
            raise CardError(f"a {self.decks}-deck shoe holds each card {self.decks} time(s); seen {listed}")
