"""Every line of a settle answer with the clause behind it, for `throwbox settle --explain`.

`explain(answer)` takes the answer of `rules.games.settle` (any game) and returns one `ExplainedLine` per
fact it rests on: the rolls or cards as classified, then one per settlement, in the answer's order. A
High Roll Dice settlement carries its clause; a side wager's answer does not name one on every line (its
JSON stays as it is), so the clause is read here from what the line says (won or lost, on which outcome).
`REQUIREMENTS` gives each clause named here one line on what it requires, the same words as the map
(docs/regulations.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# One line on what each clause named by an explanation requires (the map's "requires" column).
REQUIREMENTS: Mapping[str, str] = {
    "593.1(a)": "five betting positions on the players' side, the dealer opposite",
    "593.2(a)": "all wagers are made before the dice are shaken",
    "593.2(d)": "die rank: ace highest, then 6, 5, 4, 3, with 2 lowest",
    "593.2(e)(1)": "Pip Street: a wager on the face thrown most on roll one, ties to the higher rank",
    "593.2(e)(2)": "Like Kind: a wager on how many of the most matching dice roll one shows",
    "593.2(e)(4)": "Millionaire Row: nine or ten of a kind on roll one, at most $1",
    "593.4(a)": "at no more bets the Extra Roll stakes are collected into the table inventory",
    "593.4(d)": "the dealer calls out which die of the highest value occurs the most",
    "593.4(f)(1)": "losing Pip Street wagers are collected after roll one",
    "593.4(f)(2)(i)": "without an Extra Roll, Like Kind circles other than the count thrown are collected",
    "593.4(f)(2)(ii)": "with an Extra Roll, circles that cannot win any more are collected; higher ones wait",
    "593.4(f)(3)": "Millionaire Row wagers not on the count thrown are collected",
    "593.4(g)": "Extra Roll: the dice of the winning face stay; the rest are rethrown once",
    "593.4(h)": "final count = kept dice + new matches; a circle paid on roll one is not paid again",
    "593.5(a)": "winning Pip Street wagers are paid at the Pip Street odds",
    "593.5(b)": "winning Like Kind wagers are paid at the Like Kind odds",
    "593.5(c)": "winning Millionaire Row wagers pay $50,000 (nine) or $1,000,000 (ten)",
    "593.5(d)": "winning Like Kind wagers on the Extra Roll are paid at the Extra Roll odds",
    "675a.6(d)": "six dice: Pip Street as in 675a.2(e)(1); Like Kind on circles 2..6 or no match",
    "675a.6(c)": "six dice ranked as in 675a.2(d): ace highest, 2 lowest",
    "675a.6(i)": "six dice: losing Pip Street and Like Kind wagers are collected, winners paid",
    "675a.6(j)": "six dice: winning Pip Street wagers are paid at the 675a.6(j) odds",
    "675a.6(k)": "six dice: winning Like Kind wagers are paid at the 675a.6(k) odds",
    "617b.3(a)": "Lightning Roulette: a straight wager on a single-zero wheel; a number not spun loses",
    "617b.3(e)": "a winning straight wager on a Lucky Number is paid the payout displayed for it",
    "617b.3(f)": "a winning straight wager not on a Lucky Number is paid 29 to 1",
    "631b.7(c)(1)": "Majestic Match: a hand with a Royal or Suited Match is paid by 631b.7(d), each hand",
    "631b.7(c)(2)": "Majestic Match: a hand with neither match loses",
    "631b.7(e)(1)": "Royal Match: suited King and Queen, 25 to 1 (631b.7(d))",
    "631b.7(e)(2)": "Suited Match: any other two suited cards, 2.5 to 1 (631b.7(d))",
    "633b.13(h)": "Buster Blackjack wins on a dealer bust, paid by the number of cards in the busted hand",
    "633b.15(f)(1)": "Upcard Luck loses when the dealer's upcard is not 2 through 7",
    "633b.15(f)(2)": "Upcard Luck loses on a two-card total of 2 through 8 or 12 through 17",
    "633b.15(f)(3)": "Upcard Luck wins on 9-11, 18-20 or a Blackjack against an upcard 2-7",
    "633b.15(g)": "Upcard Luck pays 80, 8, 4 or 3 to 1 by its paytable",
}


@dataclass(frozen=True)
class ExplainedLine:
    """One fact of a settlement and the clause it rests on (several ids joined by ", " where several)."""

    subject: str
    clause: str
    requires: str

    def as_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"line": self.subject, "clause": self.clause, "requires": self.requires}


def _line(subject: str, clause: str) -> ExplainedLine:
    """A line whose requirement is read from `REQUIREMENTS`, every id of `clause` in turn."""
    ids = [c.strip() for c in clause.split(",")]
    missing = [c for c in ids if c not in REQUIREMENTS]
    if missing:
        raise KeyError(f"no requirement written for clause {', '.join(missing)}; add it to REQUIREMENTS")
    return ExplainedLine(subject, clause, "; ".join(REQUIREMENTS[c] for c in ids))


def _side_wager_clause(game: str, answer: Mapping[str, Any], s: Mapping[str, Any]) -> str:
    """The clause of a side wager's settlement line that carries none."""
    won = s.get("result") == "win"
    if game == "lightning_roulette":
        return "617b.3(a)"  # only losing lines lack a clause: the number was not spun
    if game == "majestic_match":
        if not won:
            return "631b.7(c)(2)"
        return "631b.7(c)(1), " + ("631b.7(e)(1)" if s.get("outcome") == "royal_match" else "631b.7(e)(2)")
    if game == "buster_blackjack":
        return "633b.13(h)"
    if game == "upcard_luck":
        if won:
            return "633b.15(f)(3), 633b.15(g)"
        return "633b.15(f)(2)" if answer.get("upcard_qualifies") else "633b.15(f)(1)"
    raise KeyError(f"no clause known for a settlement of game {game!r}")


def _spot(s: Mapping[str, Any]) -> str:
    """Where the wager lay, in the words of its answer."""
    parts = [f"seat {s.get('seat')}", str(s.get("kind"))]
    for key in ("face", "count", "hand", "number"):
        value = s.get(key)
        if isinstance(value, Mapping):  # Upcard Luck's hand: its cards
            value = " ".join(str(c) for c in value.get("cards", []))
        if value is not None:
            parts.append(f"{key} {value}")
    return " ".join(parts)


def _hrd_rolls(answer: Mapping[str, Any]) -> list[ExplainedLine]:
    """The rolls of a High Roll Dice answer, each fact with its clause."""
    six = answer.get("game") == "hrd6"
    first = answer.get("first_roll") or {}
    lines = [
        _line(
            f"roll one {first.get('faces')}: Pip Street winner {first.get('winner')}",
            "675a.6(d), 675a.6(c)" if six else "593.2(e)(1), 593.2(d)",
        ),
        _line(f"roll one: match count {first.get('match_count')}", "675a.6(d)" if six else "593.2(e)(2)"),
    ]
    extra = answer.get("extra_roll")
    if isinstance(extra, Mapping):
        lines.append(
            _line(f"Extra Roll: {extra.get('kept')} dice kept, {extra.get('faces')} rethrown", "593.4(g)")
        )
        lines.append(
            _line(
                f"Extra Roll: {extra.get('new_matches')} new matches, final count {extra.get('final_count')}",
                "593.4(h)",
            )
        )
    return lines


def explain(answer: Mapping[str, Any]) -> tuple[ExplainedLine, ...]:
    """Every fact and settlement line of a settle answer with the clause behind it.

    Raises:
        KeyError: a line whose clause has no requirement written here (a gap to fill, never skipped).
    """
    game = str(answer.get("game"))
    lines = _hrd_rolls(answer) if isinstance(answer.get("first_roll"), Mapping) else []
    for i, s in enumerate(answer.get("settlements", [])):
        clause = s.get("clause") or _side_wager_clause(game, answer, s)
        outcome = f"{s.get('result')} {s.get('win')}"
        if s.get("odds"):
            outcome += f" at {s['odds']}"
        if "roll" in s:
            outcome += f" (roll {s['roll']})"
        lines.append(_line(f"#{i} {_spot(s)} {s.get('amount')}: {outcome}", clause))
    return tuple(lines)
