"""Upcard Luck (58 Pa. Code 633b.15): a Blackjack side wager on the dealer upcard and the first two cards.

It wins when the dealer's upcard is a 2 through 7 and the player's first two cards total 9 through 11, hard
or soft 18 through 20, or are a Blackjack (633b.15(a), (f)); paid (633b.15(g)): ace of spades with jack of
spades 80 to 1, Blackjack 8 to 1, 9, 10 or 11 4 to 1, 18, 19 or 20 (soft totals included) 3 to 1. The wager
is at most the player's Blackjack wager (633b.15(d)); shoes of four, six or eight decks (633b.15(b)).

Interpretations the text leaves open, as settings (document "settings", or `MathOptions.settings`):

- "soft_hand_total" (default "soft"): a two-card hand with an ace totals what Blackjack calls it, the ace
  counting 11 (A-8 is soft 19 and pays 3 to 1). "better": the hand is paid at the better of its two totals
  (A-8 is 9 or 19 and pays 4 to 1 as a 9; A-9 pays 4 to 1 as a 10).
- "ace_seven_is_soft_18" (default true): A-7 is a soft 18 and wins 3 to 1, as 633b.15(a) and (g) say
  ("hard and soft 18", "including soft totals"). false: A-7 is read as a total of 8, which 633b.15(f)(2)
  lists among the losing totals ("2 through 8"), and loses.
- "ace_jack_spades_needs_upcard" (default true): the 80 to 1 for A♠ J♠ needs a dealer upcard 2-7, as the
  paytable heading "Outcome (with Dealer Upcard 2—7)" and 633b.15(f)(1) say. false: A♠ J♠ pays 80 to 1
  whatever the upcard (every other outcome still needs 2-7).

Settle document::

    {"game": "upcard_luck", "decks": 6,
     "wagers": [{"seat": 1, "kind": "upcard_luck", "amount": "5.00", "blackjack_wager": "10.00"}],
     "dealer_upcard": "5H",
     "player_cards": {"1": ["AS", "JS"]}}

Math: exact over the shoe; the dealer's upcard and the player's two cards are any three cards of the full
shoe (dealing order does not change their joint distribution), enumerated over 12 card types with their
multiplicities.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from itertools import product
from typing import Any

from rules.cards import Card, Suit
from rules.games import DocumentRefusedError, MathOptions, MathReport, MathTable, Problem
from rules.side_wagers.blackjack import hand_total, is_blackjack
from rules.side_wagers.common import (
    check_fields,
    check_shoe,
    fraction_str,
    math_decks,
    money_str,
    odds_str,
    one_per_seat,
    parse_amount,
    pay,
    percent_str,
    read_cards,
    read_decks,
    read_settings,
    read_wagers,
    refuse_if,
    refuse_options,
    seat_totals,
    settlement,
)

GAME = "upcard_luck"
DECKS_ALLOWED: tuple[int, ...] = (4, 6, 8)  # 633b.15(b)
# 633b.15(g), best first; "lose" has no odds.
PAYTABLE: dict[str, Fraction] = {
    "ace_jack_spades": Fraction(80),
    "blackjack": Fraction(8),
    "9_to_11": Fraction(4),
    "18_to_20": Fraction(3),
}
OUTCOMES: tuple[str, ...] = (*PAYTABLE, "lose")
# The clauses behind each outcome's figure: when it wins and what it pays (or why it loses).
CLAUSES: dict[str, str] = {
    "ace_jack_spades": "633b.15(f)(3), 633b.15(g)",
    "blackjack": "633b.15(f)(3), 633b.15(g)",
    "9_to_11": "633b.15(f)(3), 633b.15(g)",
    "18_to_20": "633b.15(f)(3), 633b.15(g)",
    "lose": "633b.15(f)(1), 633b.15(f)(2)",
}
SETTINGS_DEFAULTS: dict[str, Any] = {
    "soft_hand_total": "soft",
    "ace_seven_is_soft_18": True,
    "ace_jack_spades_needs_upcard": True,
}
SETTINGS_CHOICES: dict[str, tuple[Any, ...]] = {
    "soft_hand_total": ("soft", "better"),
    "ace_seven_is_soft_18": (True, False),
    "ace_jack_spades_needs_upcard": (True, False),
}
_ACE_SPADES = Card(rank="A", suit=Suit.SPADES)
_JACK_SPADES = Card(rank="J", suit=Suit.SPADES)


def upcard_qualifies(upcard: Card) -> bool:
    """A dealer upcard 2 through 7 (an ace is not: it counts 1 or 11, never 2-7)."""
    return 2 <= upcard.blackjack_value <= 7 and upcard.rank != "A"


def _total_category(total: int) -> str:
    if 9 <= total <= 11:
        return "9_to_11"
    if 18 <= total <= 20:
        return "18_to_20"
    return "lose"


def classify(player: Sequence[Card], upcard: Card, settings: Mapping[str, Any]) -> str:
    """The outcome (a key of `PAYTABLE`, or "lose") of a player's first two cards against an upcard."""
    if len(player) != 2:
        raise ValueError("Upcard Luck is settled on exactly two player cards")
    if set(player) == {_ACE_SPADES, _JACK_SPADES} and (
        upcard_qualifies(upcard) or not settings["ace_jack_spades_needs_upcard"]
    ):
        return "ace_jack_spades"
    if not upcard_qualifies(upcard):
        return "lose"
    if is_blackjack(player):
        return "blackjack"
    total = hand_total(player)
    if not total.soft:
        return _total_category(total.total)
    if total.total == 18 and not settings["ace_seven_is_soft_18"]:
        return _total_category(total.hard)  # A-7 read as 8: loses
    soft_category = _total_category(total.total)
    if settings["soft_hand_total"] == "soft":
        return soft_category
    hard_category = _total_category(total.hard)
    candidates = [c for c in (soft_category, hard_category) if c != "lose"]
    return max(candidates, key=lambda c: PAYTABLE[c]) if candidates else "lose"


def settle_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Settle every Upcard Luck wager of `doc` on the dealer's upcard and each player's first two cards.

    Raises:
        DocumentRefusedError: every problem found, each naming its clause.
    """
    problems: list[Problem] = []
    decks = read_decks(doc.get("decks"), allowed=DECKS_ALLOWED, clause="633b.15(b)", problems=problems)
    settings = read_settings(
        doc.get("settings"), defaults=SETTINGS_DEFAULTS, choices=SETTINGS_CHOICES, problems=problems
    )
    known = ("game", "decks", "settings", "wagers", "dealer_upcard", "player_cards")
    check_fields(doc, known=known, problems=problems)
    wagers = read_wagers(doc, kinds=("upcard_luck",), fields=("blackjack_wager",), problems=problems)
    main_wagers: dict[int, Decimal] = {}
    one_per_seat(
        wagers,
        key=lambda w: w.seat,
        clause="633b.15(c)",
        what="Upcard Luck wager by this seat (the layout has one area per player)",
        problems=problems,
    )
    for wager in wagers:
        raw_main = wager.raw.get("blackjack_wager")
        where = f"{wager.field}.blackjack_wager"
        if raw_main is None:
            problems.append(
                Problem("633b.15(d)", "Upcard Luck is offered only to a player with a Blackjack wager", where)
            )
            continue
        main = parse_amount(raw_main, field=where, problems=problems)
        if main is not None:
            main_wagers[wager.index] = main
        if main is not None and wager.amount > main:
            problems.append(
                Problem(
                    "633b.15(d)",
                    f"the Upcard Luck wager ({wager.amount}) exceeds the player's Blackjack wager ({main})",
                    f"{wager.field}.amount",
                )
            )
    upcard_list = read_cards(
        [doc.get("dealer_upcard")], field="dealer_upcard", count=1, problems=problems, clause="633b.15(f)"
    )
    players_raw = doc.get("player_cards")
    hands: dict[int, list[Card]] = {}
    if not isinstance(players_raw, Mapping):
        problems.append(
            Problem("document", '"player_cards" maps each seat ("1") to its two cards', "player_cards")
        )
        players_raw = {}
    for key, cards in players_raw.items():
        read = read_cards(cards, field=f"player_cards.{key}", count=2, problems=problems, clause="633b.15(f)")
        if read is not None and str(key).isdigit():
            hands[int(str(key))] = read
        elif read is not None:
            problems.append(Problem("document", f"{key!r} is not a seat number", f"player_cards.{key}"))
    for wager in wagers:
        if wager.seat not in hands and str(wager.seat) not in players_raw:
            problems.append(
                Problem(
                    "633b.15(f)",
                    f"no cards for seat {wager.seat}, which has an Upcard Luck wager",
                    "player_cards",
                )
            )
    if decks is not None and upcard_list is not None:
        check_shoe(
            [*upcard_list, *(c for cards in hands.values() for c in cards)], decks=decks, problems=problems
        )
    refuse_if(problems)
    if upcard_list is None:  # unreachable: a refused upcard adds a problem
        raise DocumentRefusedError([Problem("document", "no dealer upcard", "dealer_upcard")])
    upcard = upcard_list[0]

    rows = []
    for wager in wagers:
        player = hands[wager.seat]
        outcome = classify(player, upcard, settings)
        total = hand_total(player)
        hand = {"cards": [str(c) for c in player], "total": total.total, "soft": total.soft}
        echo = {"blackjack_wager": money_str(main_wagers[wager.index])}
        if outcome == "lose":
            extra = {"outcome": outcome, "hand": hand}
            rows.append(settlement(wager, result="lose", win=Decimal(0), echo=echo, extra=extra))
        else:
            odds = PAYTABLE[outcome]
            extra = {"outcome": outcome, "odds": odds_str(odds), "hand": hand}
            win = pay(wager.amount, odds)
            rows.append(settlement(wager, result="win", win=win, echo=echo, extra=extra))
    return {
        "game": GAME,
        "decks": decks,
        "settings": settings,
        "dealer_upcard": str(upcard),
        "upcard_qualifies": upcard_qualifies(upcard),
        "settlements": rows,
        "seats": seat_totals(wagers, rows),
    }


# ---------------------------------------------------------------- math


def _card_types(decks: int) -> list[tuple[Card, int]]:
    """Representatives of the 12 card types that decide the wager, with their counts in the shoe: A♠, other
    aces, J♠, other ten-value cards, and 2..9."""
    hearts = Suit.HEARTS
    types = [
        (_ACE_SPADES, decks),
        (Card(rank="A", suit=hearts), 3 * decks),
        (_JACK_SPADES, decks),
        (Card(rank="K", suit=hearts), 15 * decks),
    ]
    types += [(Card(rank=str(v), suit=hearts), 4 * decks) for v in range(2, 10)]
    return types


def outcome_probabilities(decks: int, settings: Mapping[str, Any]) -> dict[str, Fraction]:
    """Exact probability of each outcome (a key of `PAYTABLE`, or "lose") from a full shoe."""
    types = _card_types(decks)
    size = 52 * decks
    ways = dict.fromkeys(OUTCOMES, 0)
    for (a, na), (b, nb), (u, nu) in product(types, repeat=3):
        nb_left = nb - (a == b)
        nu_left = nu - (u == a) - (u == b)
        weight = na * nb_left * nu_left
        if weight > 0:
            ways[classify((a, b), u, settings)] += weight
    denominator = size * (size - 1) * (size - 2)
    return {name: Fraction(n, denominator) for name, n in ways.items()}


def house_edge(probabilities: Mapping[str, Fraction]) -> Fraction:
    """Minus the expected net win per unit staked."""
    expected = sum((probabilities[name] * odds for name, odds in PAYTABLE.items()), Fraction(0))
    return probabilities["lose"] - expected


def math_report(game: str, options: MathOptions) -> MathReport:
    """Exact outcome probabilities and house edge of Upcard Luck, and the edge under every interpretation."""
    refuse_options(game, options, allowed=("decks", "settings"))
    decks = math_decks(options.decks, default=6, allowed=DECKS_ALLOWED, game=GAME)
    problems: list[Problem] = []
    settings = read_settings(
        options.settings, defaults=SETTINGS_DEFAULTS, choices=SETTINGS_CHOICES, problems=problems
    )
    refuse_if(problems)
    probabilities = outcome_probabilities(decks, settings)
    edge = house_edge(probabilities)
    rows = tuple(
        (
            name,
            odds_str(PAYTABLE[name]) if name in PAYTABLE else "loses",
            fraction_str(p),
            percent_str(p),
            CLAUSES[name],
        )
        for name, p in probabilities.items()
    )
    variants = []
    for soft, a7, aj in product(*(SETTINGS_CHOICES[k] for k in SETTINGS_DEFAULTS)):
        variant = {"soft_hand_total": soft, "ace_seven_is_soft_18": a7, "ace_jack_spades_needs_upcard": aj}
        e = house_edge(outcome_probabilities(decks, variant))
        variants.append((soft, str(a7).lower(), str(aj).lower(), fraction_str(e), percent_str(e)))
    data: dict[str, Any] = {
        "game": GAME,
        "decks": decks,
        "settings": dict(settings),
        "paytable": {name: odds_str(o) for name, o in PAYTABLE.items()},
        "probabilities": {name: fraction_str(p) for name, p in probabilities.items()},
        "probability_sum": fraction_str(sum(probabilities.values(), Fraction(0))),
        "house_edge": fraction_str(edge),
        "house_edge_percent": percent_str(edge),
        "clauses": dict(CLAUSES),
        "house_edge_by_settings": [
            {
                "soft_hand_total": v[0],
                "ace_seven_is_soft_18": v[1] == "true",
                "ace_jack_spades_needs_upcard": v[2] == "true",
                "house_edge": v[3],
            }
            for v in variants
        ],
    }
    return MathReport(
        game=GAME,
        title=f"Upcard Luck (633b.15), {decks} decks",
        tables=(
            MathTable(
                title=f"Outcomes, {decks} decks: house edge {percent_str(edge)} ({fraction_str(edge)})",
                columns=("outcome", "pays", "probability", "percent", "clause"),
                rows=rows,
            ),
            MathTable(
                title="House edge under each interpretation (633b.15(a), (f), (g); first row: the defaults)",
                columns=(
                    "soft_hand_total",
                    "ace_seven_is_soft_18",
                    "ace_jack_spades_needs_upcard",
                    "house edge",
                    "percent",
                ),
                rows=tuple(variants),
            ),
        ),
        data=data,
        notes=(
            "Settings: " + ", ".join(f"{k}={str(v).lower()}" for k, v in settings.items()) + ".",
            "Exact: the dealer's upcard and the player's two cards are three cards of the full shoe, "
            "enumerated over 12 card types with their multiplicities.",
            "Each hand pays its best outcome only: A♠ J♠ is paid 80 to 1, not also 8 to 1 as a Blackjack.",
        ),
    )
