"""Payout odds as exact fractions: the regulation's tables and a JSON paytable file format.

A certificate holder picks its paytable in its Rules Submission, so the regulation's tables are only the
defaults: 593.5(a)-(d) for `hrd10`, 675a.6(j)-(k) for `hrd6`. Odds are written "A to B" and pay A/B per unit
staked, the stake returned on top: "3 to 5" pays 3/5, "1 to 2" pays 1/2, "2.5 to 1" pays 5/2.

Paytable file format (JSON, `format` "throwbox-hrd-paytable/1"; see `paytables/*.json`)::

    {
      "format": "throwbox-hrd-paytable/1",
      "game": "hrd10",                         # or "hrd6"
      "name": "free text",
      "pip_street":      {"1": "3 to 1", "2": "6 to 1", ..., "6": "4 to 1"},   # every face 1..6
      "like_kind":       {"2": "12 to 1", ..., "8": "5,000 to 1"},   # hrd10: 2..8; hrd6: 2..6 and "no_match"
      "extra_roll":      {"3": "8 to 1", ..., "8": "50 to 1"},       # hrd10 only: final counts 3..8
      "millionaire_row": {"9": "50,000 to 1", "10": "1,000,000 to 1"}  # hrd10 only
    }

Every key listed must be present and nothing else; hrd6 has no `extra_roll` or `millionaire_row`.
593.5(c) states Millionaire Row payouts as dollar amounts ($50,000 and $1,000,000) for a wager that may be
at most $1 (593.2(e)(4)); the engine reads them as 50,000 to 1 and 1,000,000 to 1, so a $1 wager wins exactly
the stated amount (stake returned on top) and a smaller wager is paid pro rata.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from rules.games import Problem
from rules.hrd.dice import NO_MATCH, DiceCount

FORMAT = "throwbox-hrd-paytable/1"
# A bound far above the regulation's largest (1,000,000 to 1) that keeps every payout exact in `decimal`.
MAX_ODDS = 1_000_000_000

_NUMBER = r"((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?)"  # thousands commas only in threes
_ODDS_RE = re.compile(rf"^\s*{_NUMBER}\s+to\s+{_NUMBER}\s*$")


@dataclass(frozen=True)
class Odds:
    """Payout odds: `win` per unit staked as an exact fraction, and the text it was written as."""

    win: Fraction
    text: str

    def __post_init__(self) -> None:
        if self.win <= 0:
            raise ValueError(f"odds must pay more than nothing, got {self.text!r}")


def parse_odds(text: str) -> Odds:
    """Parse "A to B" (thousands commas allowed) into exact odds.

    Raises:
        ValueError: not of the form "A to B" with positive numbers.
    """
    match = _ODDS_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f'odds are written "A to B", e.g. "3 to 5"; got {text!r}')
    try:
        numerator = Fraction(Decimal(match.group(1).replace(",", "")))
        denominator = Fraction(Decimal(match.group(2).replace(",", "")))
    except InvalidOperation as exc:  # the pattern admits only numbers; this guards a change to it
        raise ValueError(f"odds {text!r} are not numbers") from exc
    if numerator <= 0 or denominator <= 0:
        raise ValueError(f"both sides of odds must be positive, got {text!r}")
    if numerator / denominator > MAX_ODDS:
        raise ValueError(f"odds may pay at most {MAX_ODDS:,} to 1, got {text!r}")
    return Odds(win=numerator / denominator, text=" ".join(text.split()))


@dataclass(frozen=True)
class Paytable:
    """The odds of every wager of one game. Keys: face (Pip Street), count (Like Kind, Extra Roll,
    Millionaire Row); the Like Kind "no match" circle is count `NO_MATCH` (1)."""

    game: str
    name: str
    pip_street: Mapping[int, Odds]
    like_kind: Mapping[int, Odds]
    extra_roll: Mapping[int, Odds]
    millionaire_row: Mapping[int, Odds]
    clauses: Mapping[str, str]  # section -> the clause whose table it replaces, e.g. "593.5(a)"


@dataclass(frozen=True)
class _Shape:
    dice: DiceCount
    sections: Mapping[str, tuple[str, ...]]  # section -> the keys it must have
    clauses: Mapping[str, str]


_FACE_KEYS = ("1", "2", "3", "4", "5", "6")
SHAPES: Mapping[str, _Shape] = MappingProxyType(
    {
        "hrd10": _Shape(
            dice=DiceCount.TEN,
            sections={
                "pip_street": _FACE_KEYS,
                "like_kind": ("2", "3", "4", "5", "6", "7", "8"),
                "extra_roll": ("3", "4", "5", "6", "7", "8"),
                "millionaire_row": ("9", "10"),
            },
            clauses={
                "pip_street": "593.5(a)",
                "like_kind": "593.5(b)",
                "millionaire_row": "593.5(c)",
                "extra_roll": "593.5(d)",
            },
        ),
        "hrd6": _Shape(
            dice=DiceCount.SIX,
            sections={
                "pip_street": _FACE_KEYS,
                "like_kind": ("2", "3", "4", "5", "6", "no_match"),
            },
            clauses={"pip_street": "675a.6(j)", "like_kind": "675a.6(k)"},
        ),
    }
)

# The regulation's tables, verbatim.
REGULATION_TABLES: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "hrd10": {
            "format": FORMAT,
            "game": "hrd10",
            "name": "Regulation defaults, 58 Pa. Code 593.5(a)-(d)",
            "pip_street": {
                "2": "6 to 1",
                "3": "6 to 1",
                "4": "5 to 1",
                "5": "4 to 1",
                "6": "4 to 1",
                "1": "3 to 1",
            },
            "like_kind": {
                "8": "5,000 to 1",
                "7": "400 to 1",
                "6": "30 to 1",
                "5": "4 to 1",
                "4": "1 to 1",
                "3": "3 to 5",
                "2": "12 to 1",
            },
            "millionaire_row": {"10": "1,000,000 to 1", "9": "50,000 to 1"},
            "extra_roll": {
                "8": "50 to 1",
                "7": "10 to 1",
                "6": "4 to 1",
                "5": "2 to 1",
                "4": "1 to 1",
                "3": "8 to 1",
            },
        },
        "hrd6": {
            "format": FORMAT,
            "game": "hrd6",
            "name": "Regulation defaults, 58 Pa. Code 675a.6(j)-(k)",
            "pip_street": {
                "2": "8 to 1",
                "3": "6 to 1",
                "4": "5 to 1",
                "5": "4 to 1",
                "6": "3 to 1",
                "1": "2 to 1",
            },
            "like_kind": {
                "6": "6,000 to 1",
                "5": "200 to 1",
                "4": "15 to 1",
                "3": "2 to 1",
                "2": "1 to 2",
                "no_match": "60 to 1",
            },
        },
    }
)


def _key_to_int(key: str) -> int:
    return NO_MATCH if key == "no_match" else int(key)


def parse_paytable(
    raw: object, *, game: str, field: str = "paytable"
) -> tuple[Paytable | None, list[Problem]]:
    """Validate a paytable document for `game`; return it, or None and every problem found.

    Problems name the regulation table the section replaces (e.g. "593.5(b)"), or "paytable" for the
    document's shape.
    """
    shape = SHAPES.get(game)
    if shape is None:
        return None, [Problem("paytable", f"no paytable format for game {game!r}", field)]
    if not isinstance(raw, Mapping):
        return None, [Problem("paytable", "a paytable must be a JSON object", field)]
    problems: list[Problem] = []
    if raw.get("format") != FORMAT:
        problems.append(
            Problem("paytable", f'"format" must be "{FORMAT}", got {raw.get("format")!r}', f"{field}.format")
        )
    if raw.get("game") != game:
        problems.append(
            Problem("paytable", f"this paytable is for {raw.get('game')!r}, not {game!r}", f"{field}.game")
        )
    name = raw.get("name", "")
    if not isinstance(name, str):
        problems.append(Problem("paytable", '"name" must be a string', f"{field}.name"))
        name = ""
    allowed = {"format", "game", "name", *shape.sections}
    for key in raw:
        if key not in allowed:
            problems.append(
                Problem(
                    "paytable",
                    f"unknown section {key!r} for {game}; allowed: {', '.join(sorted(allowed))}",
                    f"{field}.{key}",
                )
            )
    tables: dict[str, dict[int, Odds]] = {}
    for section, keys in shape.sections.items():
        clause = shape.clauses[section]
        where = f"{field}.{section}"
        table = raw.get(section)
        if not isinstance(table, Mapping):
            problems.append(Problem(clause, f"section {section!r} is missing or not an object", where))
            continue
        parsed: dict[int, Odds] = {}
        for key in keys:
            if key not in table:
                problems.append(Problem(clause, f"{section} has no odds for {key!r}", f"{where}.{key}"))
                continue
            try:
                parsed[_key_to_int(key)] = parse_odds(table[key])
            except ValueError as exc:
                problems.append(Problem(clause, str(exc), f"{where}.{key}"))
        for key in table:
            if key not in keys:
                problems.append(
                    Problem(
                        clause,
                        f"{section} has no entry {key!r}; entries: {', '.join(keys)}",
                        f"{where}.{key}",
                    )
                )
        tables[section] = parsed
    if problems:
        return None, problems
    empty: Mapping[int, Odds] = MappingProxyType({})
    return (
        Paytable(
            game=game,
            name=name,
            pip_street=MappingProxyType(tables["pip_street"]),
            like_kind=MappingProxyType(tables["like_kind"]),
            extra_roll=MappingProxyType(tables["extra_roll"]) if "extra_roll" in tables else empty,
            millionaire_row=MappingProxyType(tables["millionaire_row"])
            if "millionaire_row" in tables
            else empty,
            clauses=MappingProxyType(dict(shape.clauses)),
        ),
        [],
    )


def default_paytable(game: str) -> Paytable:
    """The regulation's paytable for `game` ("hrd10" or "hrd6").

    Raises:
        KeyError: unknown game.
    """
    table, problems = parse_paytable(REGULATION_TABLES[game], game=game)
    if table is None:  # the built-in tables are tested; this guards an edit that breaks them
        raise RuntimeError(f"built-in paytable for {game} is broken: {problems}")
    return table
