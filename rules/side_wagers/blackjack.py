"""Blackjack hand arithmetic and the dealer's play, shared by Buster Blackjack and Upcard Luck.

The dealer's drawing rule is the ordinary one of 58 Pa. Code 633a: draw to 17; a dealer who "hits soft 17"
also draws on a soft 17 (an ace counted 11 making 17), which a certificate holder chooses in its Rules
Submission. `dealer_outcomes` enumerates every way a dealer's hand can end, exactly, from a shoe of given
composition. It memoises over the remaining-shoe composition (which fixes the cards already drawn, so it
is the whole state) and counts with integers, dividing only at the end: 8 decks, both rules, well under a
second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from rules.cards import Card

# Blackjack values 1 (ace) .. 10 (ten, jack, queen, king) and how many of each one deck holds.
VALUES: tuple[int, ...] = tuple(range(1, 11))
PER_DECK: tuple[int, ...] = (4, 4, 4, 4, 4, 4, 4, 4, 4, 16)


@dataclass(frozen=True)
class HandTotal:
    """A hand's total: `total` counts one ace as 11 when that does not pass 21 (then `soft` is True)."""

    total: int
    soft: bool
    hard: int  # every ace counted 1

    @property
    def bust(self) -> bool:
        """Over 21."""
        return self.total > 21


def total_of_values(values: Sequence[int]) -> HandTotal:
    """Total of blackjack values (ace = 1)."""
    hard = sum(values)
    soft = 1 in values and hard + 10 <= 21
    return HandTotal(total=hard + 10 if soft else hard, soft=soft, hard=hard)


def hand_total(cards: Sequence[Card]) -> HandTotal:
    """Total of a hand of cards."""
    return total_of_values([card.blackjack_value for card in cards])


def is_blackjack(cards: Sequence[Card]) -> bool:
    """Two cards totalling 21: an ace and a ten-value card."""
    return len(cards) == 2 and hand_total(cards).total == 21


def dealer_draws(total: HandTotal, *, hits_soft_17: bool) -> bool:
    """Whether the dealer must draw on `total`: under 17, or a soft 17 when the dealer hits soft 17."""
    return total.total < 17 or (hits_soft_17 and total.soft and total.total == 17)


def dealer_hand_problem(cards: Sequence[Card], *, hits_soft_17: bool) -> str | None:
    """Why `cards` (in the order dealt) cannot be a finished dealer's hand, or None if they can.

    The first two cards are the upcard and hole card; each later card must have been drawn on a total the
    dealer draws on, and the hand must end bust or on a total the dealer stands on.
    """
    rule = "hits soft 17" if hits_soft_17 else "stands on soft 17"
    if len(cards) < 2:
        return f"a dealer's hand has at least 2 cards, got {len(cards)}"
    for n in range(2, len(cards)):
        before = hand_total(cards[:n])
        if before.bust:
            return f"the hand was bust after {n} cards; the dealer draws no more"
        if not dealer_draws(before, hits_soft_17=hits_soft_17):
            kind = "soft" if before.soft else "hard"
            return (
                f"a dealer who {rule} stands on {kind} {before.total} after {n} cards; card {n + 1} is extra"
            )
    final = hand_total(cards)
    if not final.bust and dealer_draws(final, hits_soft_17=hits_soft_17):
        kind = "soft" if final.soft else "hard"
        return f"the hand is not finished: a dealer who {rule} draws on {kind} {final.total}"
    return None


@dataclass(frozen=True)
class DealerOutcomes:
    """Exact probabilities of how a dealer's hand ends, dealt from a full shoe of `decks` decks.

    `bust[n]`: the hand busts with n cards. `stand[(total, n)]`: it stands on total 17..21 with n cards
    (two-card 21, the dealer's Blackjack, is `blackjack`, not in `stand`).
    """

    decks: int
    hits_soft_17: bool
    bust: dict[int, Fraction]
    stand: dict[tuple[int, int], Fraction]
    blackjack: Fraction

    @property
    def bust_total(self) -> Fraction:
        """Probability the dealer busts, whatever the number of cards."""
        return sum(self.bust.values(), Fraction(0))

    def total(self) -> Fraction:
        """Sum of every outcome's probability (exactly 1 by construction; tests check it)."""
        return self.bust_total + sum(self.stand.values(), Fraction(0)) + self.blackjack


def _falling(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= n - i
    return out


def dealer_outcomes(*, decks: int, hits_soft_17: bool) -> DealerOutcomes:
    """Every way a dealer's hand ends when the dealer's cards (and only they) come from a full shoe.

    Exact: ordered draws are counted with their multiplicities (the product of the cards left of each value
    at each draw) and divided by the number of ordered draws of that length.
    """
    start = tuple(count * decks for count in PER_DECK)
    shoe_size = sum(start)
    # memo: remaining composition -> {outcome key: number of weighted ordered continuations}
    memo: dict[tuple[int, ...], dict[tuple[str, int, int], int]] = {}

    def play(remaining: tuple[int, ...]) -> dict[tuple[str, int, int], int]:
        cached = memo.get(remaining)
        if cached is not None:
            return cached
        drawn = [
            v for v, left, full in zip(VALUES, remaining, start, strict=True) for _ in range(full - left)
        ]
        total = total_of_values(drawn)
        n = len(drawn)
        result: dict[tuple[str, int, int], int]
        if total.bust:
            result = {("bust", 0, n): 1}
        elif n == 2 and total.total == 21:
            result = {("blackjack", 21, 2): 1}
        elif n >= 2 and not dealer_draws(total, hits_soft_17=hits_soft_17):
            result = {("stand", total.total, n): 1}
        else:
            result = {}
            for i, left in enumerate(remaining):
                if left == 0:
                    continue
                after = (*remaining[:i], left - 1, *remaining[i + 1 :])
                for key, ways in play(after).items():
                    result[key] = result.get(key, 0) + left * ways
        memo[remaining] = result
        return result

    counts = play(start)
    bust: dict[int, Fraction] = {}
    stand: dict[tuple[int, int], Fraction] = {}
    blackjack = Fraction(0)
    for (kind, total_value, n), ways in counts.items():
        probability = Fraction(ways, _falling(shoe_size, n))
        if kind == "bust":
            bust[n] = bust.get(n, Fraction(0)) + probability
        elif kind == "stand":
            stand[(total_value, n)] = probability
        else:
            blackjack += probability
    return DealerOutcomes(
        decks=decks,
        hits_soft_17=hits_soft_17,
        bust=dict(sorted(bust.items())),
        stand=dict(sorted(stand.items())),
        blackjack=blackjack,
    )
