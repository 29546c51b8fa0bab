"""The games the rules engine settles and analyses, keyed by game id.

Exceptions::

    RulesError                 base of every error the rules engine raises on bad input
    └── DocumentRefusedError        a settle document or wager set breaks one or more rules; carries
                               every `Problem` found, each naming the clause it breaks

Each game lives in its own module that exposes two functions (see `GameModule`):
`settle_document(doc)` (the settle calculator of `throwbox settle` / `POST /v1/settle`) and
`math_report(game, options)` (the exact game math of `throwbox math`). `GAME_MODULES` maps every
game id to the module that handles it; add a line there to add a game.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

# game id -> module path. Modules are imported lazily, on first use.
GAME_MODULES: dict[str, str] = {
    "hrd10": "rules.hrd.document",
    "hrd6": "rules.hrd.document",
    "lightning_roulette": "rules.side_wagers.lightning_roulette",
    "majestic_match": "rules.side_wagers.majestic_match",
    "buster_blackjack": "rules.side_wagers.buster_blackjack",
    "upcard_luck": "rules.side_wagers.upcard_luck",
}


@dataclass(frozen=True)
class Problem:
    """One broken rule: the clause it breaks, what is wrong, and where in the document."""

    clause: str  # e.g. "593.4(d)" or "675a.6(e)"; "document" for malformed input
    message: str
    field: str | None = None  # e.g. "wagers[2].amount"

    def as_dict(self) -> dict[str, str | None]:
        """JSON-ready form."""
        return {"clause": self.clause, "message": self.message, "field": self.field}


class RulesError(Exception):
    """Base of every error the rules engine raises on bad input."""


class DocumentRefusedError(RulesError):
    """A document breaks one or more rules; `problems` lists every one found, by clause."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        if not problems:
            raise ValueError("DocumentRefusedError needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("; ".join(f"{p.clause}: {p.message}" for p in self.problems))


@dataclass(frozen=True)
class MathTable:
    """A printable table of a math report: a title, column names and rows of strings."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class MathOptions:
    """Inputs to `math_report`; each game reads the ones it understands and refuses the rest."""

    paytable: Mapping[str, Any] | None = None  # parsed paytable document (HRD)
    decks: int | None = None  # card games
    distribution: Mapping[str, Any] | None = None  # Lightning Roulette RNG distribution
    settings: Mapping[str, Any] = field(default_factory=dict)  # interpretation settings


@dataclass(frozen=True)
class MathReport:
    """Exact game math: tables for people, `data` (JSON-ready, fractions as "p/q") for programs."""

    game: str
    title: str
    tables: tuple[MathTable, ...]
    data: Mapping[str, Any]
    notes: tuple[str, ...] = ()


class GameModule(Protocol):
    """What a game module provides."""

    def settle_document(self, doc: Mapping[str, Any]) -> dict[str, Any]: ...

    def math_report(self, game: str, options: MathOptions) -> MathReport: ...


def game_ids() -> tuple[str, ...]:
    """Every game id the engine knows."""
    return tuple(GAME_MODULES)


def _module(game: object) -> GameModule:
    if not isinstance(game, str) or game not in GAME_MODULES:
        known = ", ".join(GAME_MODULES)
        raise DocumentRefusedError([Problem("document", f"unknown game {game!r}; known: {known}", "game")])
    return cast(GameModule, importlib.import_module(GAME_MODULES[game]))


def settle(doc: object) -> dict[str, Any]:
    """Settle a document (`{"game": ..., ...}`) with the module for its game.

    Raises:
        DocumentRefusedError: the document is malformed or breaks a rule; every problem is listed.
    """
    if not isinstance(doc, Mapping):
        raise DocumentRefusedError([Problem("document", "the document must be a JSON object", None)])
    return _module(doc.get("game")).settle_document(doc)


def math_report(game: str, options: MathOptions | None = None) -> MathReport:
    """Exact probabilities and house edges of every wager of `game`."""
    return _module(game).math_report(game, options or MathOptions())
