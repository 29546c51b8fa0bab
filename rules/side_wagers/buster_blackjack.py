"""Buster Blackjack (58 Pa. Code 633b.13): a side wager that the dealer's hand busts.

The wager wins when the dealer's hand busts and is paid by the number of cards in the dealer's hand when
the bust occurs (633b.13(h)); shoes of one, four, six or eight decks (633b.13(c)). The 2021 rulemaking in
`../shared/regs/` prints only the four-deck paytable (8 or more cards 250 to 1, 7 cards 50 to 1, 6 cards
15 to 1, 5 cards 4 to 1, 4 cards 2 to 1, 3 cards 2 to 1); the paytables for the other shoes are in the
existing text of 633b.13(h), which that rulemaking elides ("* * * * *") and which this repository does not
have. So the four-deck table is built in, and any other table (one a certificate holder names in its Rules
Submission) is given as a paytable document::

    {"format": "throwbox.buster_blackjack.paytable/1", "name": "four deck (633b.13(h))",
     "pays": {"3": "2 to 1", "4": "2 to 1", "5": "4 to 1", "6": "15 to 1", "7": "50 to 1", "8+": "250 to 1"}}

("pays" covers every card count from 3 up, the last key "N+" meaning N or more cards.)

Settle document (the dealer's cards in the order dealt: upcard, hole card, then each drawn card)::

    {"game": "buster_blackjack", "decks": 4, "settings": {"dealer_hits_soft_17": false},
     "wagers": [{"seat": 1, "kind": "buster_blackjack", "amount": "5.00"}],
     "dealer_cards": ["6H", "10S", "9D"]}

Optional: "paytable" (a paytable document; required for 1, 6 and 8 decks) and "player_cards"
({"seat": [cards]}, used only to check that the shoe can hold every card on the table).

Math: exact probabilities that the dealer busts with 3, 4, ... cards, for a dealer who stands on soft 17 and
one who hits it. Assumption (stated by the issue): the dealer's cards come from a full shoe and only the
dealer's own cards are removed from it; the players' cards are treated as unseen (equivalent to the dealer's
cards being the first ones out of a freshly shuffled shoe). A hand is played out even if a dealer Blackjack
shows (a two-card 21 never busts, so it loses the wager).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from rules.cards import Card
from rules.games import DocumentRefusedError, MathOptions, MathReport, MathTable, Problem
from rules.side_wagers.blackjack import DealerOutcomes, dealer_hand_problem, dealer_outcomes, hand_total
from rules.side_wagers.common import (
    check_fields,
    check_shoe,
    fraction_str,
    math_decks,
    odds_str,
    one_per_seat,
    parse_odds,
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

GAME = "buster_blackjack"
DECKS_ALLOWED: tuple[int, ...] = (1, 4, 6, 8)  # 633b.13(c)
PAYTABLE_FORMAT = "throwbox.buster_blackjack.paytable/1"
SETTINGS_DEFAULTS: dict[str, Any] = {"dealer_hits_soft_17": False}
SETTINGS_CHOICES: dict[str, tuple[Any, ...]] = {"dealer_hits_soft_17": (False, True)}


@dataclass(frozen=True)
class BusterPaytable:
    """Odds by number of cards in the busted hand: `pays[n]` for 3 <= n < `top`, and `pays[top]` for `top`
    or more cards."""

    name: str
    pays: Mapping[int, Fraction]
    top: int

    def odds(self, cards: int) -> Fraction:
        """Odds (to 1) of a bust with `cards` cards (3 or more)."""
        return self.pays[min(cards, self.top)]

    def label(self, n: int) -> str:
        """ "5 cards" or "8 or more cards"."""
        return f"{n} or more cards" if n == self.top else f"{n} cards"

    def as_dict(self) -> dict[str, str]:
        """The paytable document's "pays" mapping."""
        return {(f"{n}+" if n == self.top else str(n)): odds_str(o) for n, o in sorted(self.pays.items())}


# 633b.13(h), "Four Deck Shoe".
FOUR_DECK = BusterPaytable(
    name="four deck (633b.13(h))",
    pays={3: Fraction(2), 4: Fraction(2), 5: Fraction(4), 6: Fraction(15), 7: Fraction(50), 8: Fraction(250)},
    top=8,
)


def read_paytable(doc: object, *, field: str = "paytable") -> BusterPaytable:
    """A paytable document (see the module docstring).

    Raises:
        DocumentRefusedError: malformed, or a card count from 3 up that it does not cover.
    """
    problems: list[Problem] = []
    if not isinstance(doc, Mapping):
        raise DocumentRefusedError([Problem("document", "a paytable is a JSON object", field)])
    fmt = doc.get("format", PAYTABLE_FORMAT)
    if fmt != PAYTABLE_FORMAT:
        problems.append(Problem("document", f"unknown paytable format {fmt!r}", f"{field}.format"))
    raw = doc.get("pays")
    if not isinstance(raw, Mapping) or not raw:
        raise DocumentRefusedError(
            [
                *problems,
                Problem("document", '"pays" maps card counts ("3", ..., "8+") to odds', f"{field}.pays"),
            ]
        )
    pays: dict[int, Fraction] = {}
    tops: list[int] = []
    for key, value in raw.items():
        where = f"{field}.pays.{key}"
        text = str(key).strip()
        is_top = text.endswith("+")
        try:
            n = int(text.removesuffix("+"))
        except ValueError:
            problems.append(Problem("document", f'{key!r} is not a card count like "5" or "8+"', where))
            continue
        if n < 3:
            problems.append(Problem("633b.13(h)", f"a dealer's hand cannot bust with {n} cards", where))
            continue
        try:
            pays[n] = parse_odds(value)
        except ValueError as err:
            problems.append(Problem("document", str(err), where))
            continue
        if is_top:
            tops.append(n)
    if len(tops) != 1:
        problems.append(
            Problem("document", 'exactly one key "N+" (N or more cards) is needed', f"{field}.pays")
        )
    elif pays:
        top = tops[0]
        missing = [n for n in range(3, top) if n not in pays]
        beyond = [n for n in pays if n > top]
        if missing:
            problems.append(
                Problem(
                    "633b.13(h)",
                    f"no odds for a bust with {', '.join(map(str, missing))} cards",
                    f"{field}.pays",
                )
            )
        if beyond:
            problems.append(Problem("document", f'counts above "{top}+": {beyond}', f"{field}.pays"))
    refuse_if(problems)
    name = doc.get("name", "from file")
    return BusterPaytable(name=str(name), pays=pays, top=tops[0])


def default_paytable(decks: int) -> BusterPaytable | None:
    """The regulation's paytable for this shoe, where this repository has its text (four decks only)."""
    return FOUR_DECK if decks == 4 else None


def settle_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Settle every Buster Blackjack wager of `doc` on the dealer's finished hand.

    Raises:
        DocumentRefusedError: every problem found, each naming its clause.
    """
    problems: list[Problem] = []
    decks = read_decks(doc.get("decks"), allowed=DECKS_ALLOWED, clause="633b.13(c)", problems=problems)
    settings = read_settings(
        doc.get("settings"), defaults=SETTINGS_DEFAULTS, choices=SETTINGS_CHOICES, problems=problems
    )
    known = ("game", "decks", "settings", "paytable", "wagers", "dealer_cards", "player_cards")
    check_fields(doc, known=known, problems=problems)
    wagers = read_wagers(doc, kinds=("buster_blackjack",), problems=problems)
    one_per_seat(
        wagers,
        key=lambda w: w.seat,
        clause="633b.13",
        what="Buster Blackjack wager by this seat",
        problems=problems,
    )
    paytable: BusterPaytable | None = None
    if doc.get("paytable") is not None:
        try:
            paytable = read_paytable(doc["paytable"])
        except DocumentRefusedError as err:
            problems.extend(err.problems)
    elif decks is not None:
        paytable = default_paytable(decks)
        if paytable is None:
            problems.append(
                Problem(
                    "633b.13(h)",
                    f"the {decks}-deck paytable is not in this repository's text of 633b.13(h); give the one "
                    'in the Rules Submission as "paytable"',
                    "paytable",
                )
            )
    dealer = read_cards(
        doc.get("dealer_cards"), field="dealer_cards", count=None, problems=problems, clause="633b.13(h)"
    )
    if dealer is not None:
        why = dealer_hand_problem(dealer, hits_soft_17=settings["dealer_hits_soft_17"])
        if why is not None:
            problems.append(Problem("633b.13(h)", f"not a finished dealer's hand: {why}", "dealer_cards"))
    table_cards: list[Card] = list(dealer or [])
    players = doc.get("player_cards")
    if players is not None:
        if not isinstance(players, Mapping):
            problems.append(
                Problem("document", '"player_cards" maps seats to lists of cards', "player_cards")
            )
        else:
            for seat, cards in players.items():
                read = read_cards(
                    cards, field=f"player_cards.{seat}", count=None, problems=problems, clause="document"
                )
                table_cards.extend(read or [])
    if decks is not None:
        check_shoe(table_cards, decks=decks, problems=problems)
    refuse_if(problems)
    if dealer is None or paytable is None or decks is None:  # unreachable: each adds a problem when missing
        raise DocumentRefusedError([Problem("document", "incomplete document", None)])

    total = hand_total(dealer)
    bust_cards = len(dealer) if total.bust else None
    rows = []
    for wager in wagers:
        if bust_cards is None:
            rows.append(settlement(wager, result="lose", win=Decimal(0), extra={"dealer_cards": len(dealer)}))
        else:
            odds = paytable.odds(bust_cards)
            extra = {
                "dealer_cards": bust_cards,
                "odds": odds_str(odds),
                "pays_for": paytable.label(min(bust_cards, paytable.top)),
            }
            rows.append(settlement(wager, result="win", win=pay(wager.amount, odds), extra=extra))
    return {
        "game": GAME,
        "decks": decks,
        "settings": settings,
        "paytable": {"name": paytable.name, "pays": paytable.as_dict()},
        "dealer": {
            "cards": [str(c) for c in dealer],
            "total": total.total,
            "bust": total.bust,
            "card_count": len(dealer),
        },
        "settlements": rows,
        "seats": seat_totals(wagers, rows),
    }


# ---------------------------------------------------------------- math


def _house_edge(outcomes: DealerOutcomes, paytable: BusterPaytable) -> Fraction:
    expected = sum((p * paytable.odds(n) for n, p in outcomes.bust.items()), Fraction(0))
    expected -= 1 - outcomes.bust_total
    return -expected


def math_report(game: str, options: MathOptions) -> MathReport:
    """Exact bust-by-card-count probabilities (S17 and H17) and, with a paytable, house edges."""
    # No settings: the report shows both dealer rules (S17 and H17) side by side.
    refuse_options(game, options, allowed=("decks", "paytable"))
    decks = math_decks(options.decks, default=4, allowed=DECKS_ALLOWED, game=GAME)
    paytable = read_paytable(options.paytable) if options.paytable is not None else default_paytable(decks)
    by_rule = {hits: dealer_outcomes(decks=decks, hits_soft_17=hits) for hits in (False, True)}
    counts = sorted(set(by_rule[False].bust) | set(by_rule[True].bust))
    rows = []
    for n in counts:
        s17 = by_rule[False].bust.get(n, Fraction(0))
        h17 = by_rule[True].bust.get(n, Fraction(0))
        pays = odds_str(paytable.odds(n)) if paytable else "-"
        rows.append(
            (
                f"bust with {n} cards",
                pays,
                fraction_str(s17),
                percent_str(s17),
                fraction_str(h17),
                percent_str(h17),
            )
        )
    for label, s17, h17 in (
        ("bust (any)", by_rule[False].bust_total, by_rule[True].bust_total),
        ("no bust (loses)", 1 - by_rule[False].bust_total, 1 - by_rule[True].bust_total),
    ):
        rows.append(
            (
                label,
                "loses" if label.startswith("no") else "",
                fraction_str(s17),
                percent_str(s17),
                fraction_str(h17),
                percent_str(h17),
            )
        )
    shoe = f"{decks} deck{'s' if decks > 1 else ''}"
    title = f"Dealer busts by number of cards, {shoe}, dealer's cards from a full shoe (633b.13(c), (h))"
    data: dict[str, Any] = {
        "game": GAME,
        "decks": decks,
        "assumption": "dealer's cards only, drawn from a full shoe; players' cards unseen",
        "rules": {
            ("h17" if hits else "s17"): {
                "bust_by_cards": {str(n): fraction_str(p) for n, p in o.bust.items()},
                "bust": fraction_str(o.bust_total),
                "dealer_blackjack": fraction_str(o.blackjack),
                "stand": {f"{t}/{n}": fraction_str(p) for (t, n), p in o.stand.items()},
                "probability_sum": fraction_str(o.total()),
            }
            for hits, o in by_rule.items()
        },
        "paytable": None,
    }
    tables = [
        MathTable(title=title, columns=("outcome", "pays", "S17", "S17 %", "H17", "H17 %"), rows=tuple(rows))
    ]
    notes = [
        "Exact: every ordered sequence of dealer cards, weighted by the cards left in the shoe, memoised "
        "over the remaining-shoe composition.",
        "Assumption: only the dealer's own cards leave the shoe; the players' cards are treated as unseen.",
        "S17: the dealer stands on soft 17; H17: the dealer hits soft 17 (a Rules Submission choice).",
    ]
    if paytable is None:
        notes.append(
            f"No house edge: the {decks}-deck paytable is not in this repository's text of 633b.13(h); "
            "pass one with --paytable FILE."
        )
    else:
        edges = {hits: _house_edge(o, paytable) for hits, o in by_rule.items()}
        data["paytable"] = {"name": paytable.name, "pays": paytable.as_dict()}
        data["house_edge"] = {("h17" if h else "s17"): fraction_str(e) for h, e in edges.items()}
        data["house_edge_percent"] = {("h17" if h else "s17"): percent_str(e) for h, e in edges.items()}
        tables.append(
            MathTable(
                title=f"House edge with the paytable {paytable.name}"
                + ("" if "633b.13(h)" in paytable.name else " (633b.13(h))"),
                columns=("dealer rule", "house edge", "percent"),
                rows=tuple(
                    ("hits soft 17" if h else "stands on soft 17", fraction_str(e), percent_str(e))
                    for h, e in edges.items()
                ),
            )
        )
    return MathReport(
        game=GAME,
        title=f"Buster Blackjack (633b.13), {shoe}",
        tables=tuple(tables),
        data=data,
        notes=tuple(notes),
    )
