"""Rounds, wagers and rolls: the service drives the rules engine's round state machine and stores it.

The rules engine (`rules.hrd.round`) decides everything; this module only stores and replays. A round
row keeps its configuration (paytable and settings at opening), its wagers, and the list of steps taken
("no more bets", each roll with its verdict). The engine's `Round` is rebuilt by replaying those steps
through the engine's own transitions, so what is stored is exactly what the engine was given, and a
replay always reproduces the same decisions.

Exceptions (routes turn them into HTTP answers)::

    ServiceError
    ├── RulesRefusedError      the rules engine refused a wager or roll: every problem, by clause
    ├── StateConflictError     the request does not fit the round or table (wrong phase, no round)
    └── NotFoundError          no such table, round or evidence
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from rules.games import DocumentRefusedError, Problem, RulesError
from rules.hrd import round as engine
from rules.hrd.dice import NO_MATCH
from rules.hrd.document import round_answer
from rules.hrd.paytable import Odds, parse_paytable
from rules.hrd.settings import parse_settings
from rules.hrd.settlement import Settlement
from rules.hrd.wagers import Wager, WagerKind


class ServiceError(Exception):
    """Base of the errors this module raises."""


class RulesRefusedError(ServiceError):
    """The rules engine refused the request; `problems` name the clauses."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{p.clause}: {p.message}" for p in self.problems))

    def detail(self) -> dict[str, Any]:
        """The HTTP error body: a message and every problem with its clause."""
        return {"message": "refused by the rules engine", "problems": [p.as_dict() for p in self.problems]}


class StateConflictError(ServiceError):
    """The request does not fit the state of the round or table."""


class NotFoundError(ServiceError):
    """No such table, round or evidence."""


# --- configuration -----------------------------------------------------------------------------------


def check_table_config(*, game: str, paytable: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> None:
    """Let the rules engine check a table's paytable and settings.

    Raises:
        RulesRefusedError: a problem in either, by clause.
    """
    problems: list[Problem] = []
    if paytable is not None:
        _, found = parse_paytable(paytable, game=game)
        problems.extend(found)
    _, found = parse_settings(settings)
    problems.extend(found)
    if problems:
        raise RulesRefusedError(problems)


def _open(config: Mapping[str, Any]) -> engine.Round:
    game = str(config["game"])
    settings, problems = parse_settings(config.get("settings") or {})
    paytable = None
    if config.get("paytable") is not None:
        paytable, more = parse_paytable(config["paytable"], game=game)
        problems.extend(more)
    if problems:
        raise RulesRefusedError(problems)
    try:
        return engine.open_round(game, paytable=paytable, settings=settings)
    except DocumentRefusedError as exc:
        raise RulesRefusedError(exc.problems) from exc


# --- wagers as JSON ----------------------------------------------------------------------------------


def wager_from_document(doc: Mapping[str, Any]) -> Wager:
    """A stored wager document (amount as a decimal string) as the engine's `Wager`."""
    count = doc.get("count")
    return Wager(
        seat=int(doc["seat"]),
        kind=WagerKind(doc["kind"]),
        amount=Decimal(str(doc["amount"])),
        face=doc.get("face"),
        # "no_match" is the 6-dice circle; on another game the engine refuses the circle, by clause.
        count=NO_MATCH if count == "no_match" else count,
    )


def wager_document(wager: Wager, *, game: str) -> dict[str, Any]:
    """The engine's `Wager` as JSON (amount as a decimal string; "no_match" for the 6-dice circle)."""
    count: int | str | None = wager.count
    if game == "hrd6" and count == NO_MATCH:
        count = "no_match"
    return {
        "seat": wager.seat,
        "kind": wager.kind.value,
        "amount": str(wager.amount),
        "face": wager.face,
        "count": count,
    }


def _odds_text(odds: Odds | None) -> str | None:
    return None if odds is None else odds.text


def settlement_document(settlement: Settlement, *, game: str) -> dict[str, Any]:
    """One decision as JSON."""
    return {
        "wager_index": settlement.wager_index,
        "wager": wager_document(settlement.wager, game=game),
        "result": settlement.result.value,
        "win": str(settlement.win),
        "roll": settlement.roll,
        "odds": _odds_text(settlement.odds),
        "clause": settlement.clause,
    }


def round_summary(rnd: engine.Round) -> dict[str, Any]:
    """What the engine's round says, as JSON: phase, rolls, rethrows, decisions and seat totals."""
    first = rnd.first_roll
    extra = rnd.extra_roll
    return {
        "phase": rnd.phase.value,
        "first_roll": None
        if first is None
        else {
            "faces": list(first.faces),
            "winner": first.winner,
            "match_count": first.match_count,
            "no_match": first.no_match,
        },
        "extra_roll": None
        if extra is None
        else {
            "winner": extra.winner,
            "kept": extra.kept,
            "faces": list(extra.faces),
            "new_matches": extra.new_matches,
            "final_count": extra.final_count,
        },
        "dice_to_rethrow": rnd.dice_to_rethrow if rnd.phase is engine.Phase.AWAITING_EXTRA_ROLL else None,
        "rethrows": [
            {"roll": r.roll, "verdict": r.verdict.value, "faces": list(r.faces), "reason": r.reason}
            for r in rnd.rethrows
        ],
        "settlements": [settlement_document(s, game=rnd.game) for s in rnd.settlements_in_wager_order()],
        "pending": list(rnd.pending),
        "seats": {
            str(seat): {"staked": str(t.staked), "won": str(t.won), "lost": str(t.lost), "net": str(t.net)}
            for seat, t in engine.seat_totals(rnd).items()
        },
    }


# --- replay -------------------------------------------------------------------------------------------


def _apply_step(rnd: engine.Round, step: Mapping[str, Any]) -> engine.Round:
    op = step["op"]
    if op == "no_more_bets":
        return engine.no_more_bets(rnd)
    if op == "roll":
        after = engine.record_roll(
            rnd, list(step["faces"]), verdict=step["verdict"], reason=str(step.get("reason", ""))
        )
        if after.phase is engine.Phase.FIRST_ROLL:
            after = engine.settle_first_roll(after)
        if after.phase is engine.Phase.EXTRA_ROLL:
            after = engine.settle_extra_roll(after)
        return after
    raise ValueError(f"unknown round step {op!r}")


def replay(
    config: Mapping[str, Any], wagers: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]
) -> engine.Round:
    """Rebuild the engine's round from what was stored.

    Raises:
        RulesRefusedError: the engine refuses a wager or a roll.
        StateConflictError: a step does not fit the round's phase.
    """
    try:
        rnd = _open(config)
        if wagers:
            rnd = engine.place_wagers(rnd, [wager_from_document(w) for w in wagers])
        for step in steps:
            rnd = _apply_step(rnd, step)
    except DocumentRefusedError as exc:
        raise RulesRefusedError(exc.problems) from exc
    except engine.RoundStateError as exc:
        raise StateConflictError(str(exc)) from exc
    except RulesError as exc:
        raise RulesRefusedError([Problem("document", str(exc), None)]) from exc
    return rnd


@dataclass(frozen=True)
class StepResult:
    """The engine's round after a step, and the summary to store."""

    round: engine.Round
    summary: dict[str, Any]

    @property
    def complete(self) -> bool:
        """True once every wager is decided."""
        return self.round.phase is engine.Phase.COMPLETE

    def answer(self) -> dict[str, Any]:
        """The settlement of a complete round, in exactly the form `POST /v1/settle` answers."""
        if not self.complete:
            raise StateConflictError(f"the round is in phase {self.round.phase.value}, not complete")
        return round_answer(self.round)


def advance(
    *,
    config: Mapping[str, Any],
    wagers: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
    new_step: Mapping[str, Any] | None = None,
    new_wagers: Sequence[Mapping[str, Any]] = (),
) -> StepResult:
    """Replay the round and apply one more step or more wagers (all or none)."""
    rnd = replay(config, wagers, steps)
    try:
        if new_wagers:
            rnd = engine.place_wagers(rnd, [wager_from_document(w) for w in new_wagers], field="wagers")
        if new_step is not None:
            rnd = _apply_step(rnd, new_step)
    except DocumentRefusedError as exc:
        raise RulesRefusedError(exc.problems) from exc
    except engine.RoundStateError as exc:
        raise StateConflictError(str(exc)) from exc
    return StepResult(round=rnd, summary=round_summary(rnd))


def now_utc() -> datetime:
    """Timezone-aware now."""
    return datetime.now(UTC)
