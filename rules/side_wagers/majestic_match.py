"""Majestic Match (58 Pa. Code 631b.7): a Baccarat side wager on the Player Hand, the Banker Hand or both.

A wager on a hand wins when that hand's initial two cards are of one suit: a Royal Match (king and queen of
one suit) pays 25 to 1, any other Suited Match 2.5 to 1 (631b.7(d), (e)). Wagers on both hands are paid
separately (631b.7(c)(1)); no Baccarat wager is needed (631b.7(b)). The engine settles on the two initial
cards of each hand, so a document gives exactly two cards per hand (a Baccarat third card is drawn after
these wagers are settled, 631b.7(c)). 631b.7(c)(2) says the dealer collects "the Perfect Pairs wager" when
neither match shows; read, as the rest of the section requires, as the losing Majestic Match wager.

Settle document::

    {"game": "majestic_match", "decks": 8,
     "wagers": [{"seat": 1, "kind": "majestic_match", "hand": "player", "amount": "10.00"},
                {"seat": 1, "kind": "majestic_match", "hand": "banker", "amount": "5.00"}],
     "player_cards": ["KS", "QS"], "banker_cards": ["9H", "2D"]}

Math: exact for 6 and 8 decks (the shoes Baccarat is dealt from), by enumerating the four initial cards over
12 card types (suit x {king, queen, other}) with their multiplicities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from itertools import product
from typing import Any

from rules.cards import SUITS, Card
from rules.games import MathOptions, MathReport, MathTable, Problem
from rules.side_wagers.common import (
    Wager,
    check_fields,
    check_shoe,
    fraction_str,
    math_decks,
    odds_str,
    one_per_seat,
    pay,
    percent_str,
    read_cards,
    read_decks,
    read_wagers,
    refuse_if,
    refuse_options,
    seat_totals,
    settlement,
)

GAME = "majestic_match"
DECKS_ALLOWED: tuple[int, ...] = (6, 8)
HANDS: tuple[str, ...] = ("player", "banker")
# 631b.7(d): the paytable.
PAYTABLE: dict[str, Fraction] = {"royal_match": Fraction(25), "suited_match": Fraction(5, 2)}


# The clauses behind each outcome's figure: what it is and what it pays (or that it loses).
CLAUSES: dict[str, str] = {
    "royal_match": "631b.7(e)(1), 631b.7(d)",
    "suited_match": "631b.7(e)(2), 631b.7(d)",
    "no_match": "631b.7(c)(2)",
}


def classify(first_two: Sequence[Card]) -> str:
    """ "royal_match" (suited K-Q), "suited_match" (any other suited pair) or "no_match" (631b.7(e))."""
    first, second = first_two
    if first.suit != second.suit:
        return "no_match"
    if {first.rank, second.rank} == {"K", "Q"}:
        return "royal_match"
    return "suited_match"


def settle_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Settle every Majestic Match wager of `doc` on the initial two cards of each hand.

    Raises:
        DocumentRefusedError: every problem found, each naming its clause.
    """
    problems: list[Problem] = []
    # 631b.7 names no deck count; Baccarat shoes hold 6 or 8 decks, the shoes this engine's math covers.
    decks = read_decks(doc.get("decks"), allowed=DECKS_ALLOWED, clause="document", problems=problems)
    check_fields(doc, known=("game", "decks", "wagers", "player_cards", "banker_cards"), problems=problems)
    wagers = read_wagers(doc, kinds=("majestic_match",), fields=("hand",), problems=problems)
    for wager in wagers:
        hand = wager.raw.get("hand")
        if hand not in HANDS:
            message = f'a Majestic Match wager is on the "player" or "banker" hand, not {hand!r}'
            problems.append(Problem("631b.7(b)", message, f"{wager.field}.hand"))
    one_per_seat(
        [w for w in wagers if w.raw.get("hand") in HANDS],
        key=lambda w: (w.seat, w.raw.get("hand")),
        clause="631b.7(a)",
        what="Majestic Match wager by this seat on this hand (the layout has one area per hand per player)",
        problems=problems,
    )
    hands: dict[str, list[Card] | None] = {
        hand: read_cards(
            doc.get(f"{hand}_cards"), field=f"{hand}_cards", count=2, problems=problems, clause="631b.7(b)"
        )
        for hand in HANDS
    }
    if decks is not None and all(cards is not None for cards in hands.values()):
        check_shoe([c for cards in hands.values() if cards for c in cards], decks=decks, problems=problems)
    refuse_if(problems)

    outcomes = {hand: classify(cards) for hand, cards in hands.items() if cards is not None}
    rows = [_settle(wager, outcomes[str(wager.raw["hand"])]) for wager in wagers]
    return {
        "game": GAME,
        "decks": decks,
        "hands": {
            hand: {"cards": [str(c) for c in cards or []], "outcome": outcomes[hand]}
            for hand, cards in hands.items()
        },
        "settlements": rows,
        "seats": seat_totals(wagers, rows),
    }


def _settle(wager: Wager, outcome: str) -> dict[str, Any]:
    echo = {"hand": wager.raw["hand"]}
    if outcome == "no_match":
        return settlement(wager, result="lose", win=Decimal(0), echo=echo, extra={"outcome": outcome})
    odds = PAYTABLE[outcome]
    return settlement(
        wager,
        result="win",
        win=pay(wager.amount, odds),
        echo=echo,
        extra={"outcome": outcome, "odds": odds_str(odds)},
    )


# ---------------------------------------------------------------- math

_KINDS = ("K", "Q", "other")
_RANKS_PER_KIND = {"K": 1, "Q": 1, "other": 11}


def _types(decks: int) -> list[tuple[tuple[str, str], int]]:
    """The 12 card types (suit, king/queen/other) with their counts in the shoe."""
    return [((suit.value, kind), decks * _RANKS_PER_KIND[kind]) for suit in SUITS for kind in _KINDS]


def _pair_outcome(a: tuple[str, str], b: tuple[str, str]) -> str:
    if a[0] != b[0]:
        return "no_match"
    return "royal_match" if {a[1], b[1]} == {"K", "Q"} else "suited_match"


def outcome_probabilities(decks: int) -> dict[str, Fraction]:
    """Exact probability of each outcome of one hand's initial two cards (either hand: by symmetry the
    two cards of a hand are any two cards of the shoe)."""
    types = _types(decks)
    size = 52 * decks
    ways: dict[str, int] = {"royal_match": 0, "suited_match": 0, "no_match": 0}
    for (ta, na), (tb, nb) in product(types, repeat=2):
        count = na * (nb - 1 if ta == tb else nb)
        ways[_pair_outcome(ta, tb)] += count
    return {name: Fraction(n, size * (size - 1)) for name, n in ways.items()}


def joint_probabilities(decks: int) -> dict[tuple[str, str], Fraction]:
    """Exact joint probability of (player outcome, banker outcome) over the four initial cards."""
    types = _types(decks)
    size = 52 * decks
    ways: dict[tuple[str, str], int] = {}
    for combo in product(range(len(types)), repeat=4):
        used: dict[int, int] = {}
        weight = 1
        for t in combo:
            weight *= types[t][1] - used.get(t, 0)
            used[t] = used.get(t, 0) + 1
        if weight == 0:
            continue
        # Baccarat deals player, banker, player, banker (631a.9); any fixed order gives the same answer.
        p1, b1, p2, b2 = (types[t][0] for t in combo)
        key = (_pair_outcome(p1, p2), _pair_outcome(b1, b2))
        ways[key] = ways.get(key, 0) + weight
    denominator = size * (size - 1) * (size - 2) * (size - 3)
    return {key: Fraction(n, denominator) for key, n in sorted(ways.items())}


def math_report(game: str, options: MathOptions) -> MathReport:
    """Exact probabilities, paytable and house edge of a Majestic Match wager, for 6 or 8 decks."""
    refuse_options(game, options, allowed=("decks",))
    decks = math_decks(options.decks, default=8, allowed=DECKS_ALLOWED, game=GAME)
    single = outcome_probabilities(decks)
    returns = {name: PAYTABLE.get(name, Fraction(-1)) for name in single}
    expected = sum((single[name] * returns[name] for name in single), Fraction(0))
    house_edge = -expected
    rows = tuple(
        (
            name,
            odds_str(PAYTABLE[name]) if name in PAYTABLE else "loses",
            fraction_str(single[name]),
            percent_str(single[name]),
            fraction_str(single[name] * returns[name]),
            CLAUSES[name],
        )
        for name in ("royal_match", "suited_match", "no_match")
    )
    joint = joint_probabilities(decks)
    both_win = sum((p for (a, b), p in joint.items() if a != "no_match" and b != "no_match"), Fraction(0))
    joint_rows = tuple(
        (f"player {a}, banker {b}", fraction_str(p), percent_str(p)) for (a, b), p in joint.items()
    )
    data: dict[str, Any] = {
        "game": GAME,
        "decks": decks,
        "paytable": {name: odds_str(odds) for name, odds in PAYTABLE.items()},
        "probabilities": {name: fraction_str(p) for name, p in single.items()},
        "expected_return": fraction_str(expected),
        "house_edge": fraction_str(house_edge),
        "house_edge_percent": percent_str(house_edge),
        "joint_probabilities": {f"{a}/{b}": fraction_str(p) for (a, b), p in joint.items()},
        "both_hands_win": fraction_str(both_win),
        "probability_sum": fraction_str(sum(single.values(), Fraction(0))),
        "clauses": dict(CLAUSES),
    }
    return MathReport(
        game=GAME,
        title=f"Majestic Match (631b.7), {decks} decks",
        tables=(
            MathTable(
                title=f"One hand's initial two cards, {decks} decks: house edge {percent_str(house_edge)} "
                f"({fraction_str(house_edge)})",
                columns=("outcome", "pays", "probability", "percent", "contribution to return", "clause"),
                rows=rows,
            ),
            MathTable(
                title="Both hands (a wager on each, each paid, 631b.7(c)(1)): joint outcomes",
                columns=("outcome", "probability", "percent"),
                rows=joint_rows,
            ),
        ),
        data=data,
        notes=(
            "Each hand's wager is settled on its initial two cards only (631b.7(b), (c)).",
            "A wager on both hands is two wagers: its return per unit is the sum of two single-hand returns, "
            "so its house edge per unit staked equals the single-hand one; the joint table shows how often "
            f"both win together ({percent_str(both_win)}).",
            "Exact: enumeration over the initial four cards with their multiplicities in the full shoe.",
        ),
    )
