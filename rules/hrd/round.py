"""The round state machine of High Roll Dice: a frozen `Round` and pure transition functions.

Phases (593.4, 675a.4, 675a.6(g)-(i))::

    BETTING --no_more_bets--> NO_MORE_BETS --record_roll(valid)--> FIRST_ROLL --settle_first_roll-->
        COMPLETE                                     (no Extra Roll bought, or no die left to rethrow)
        AWAITING_EXTRA_ROLL --record_roll(valid)--> EXTRA_ROLL --settle_extra_roll--> COMPLETE

`record_roll` with verdict "invalid" (a die off the table or on another die, 593.4(b)) or "void" (a cocked
die resting on more than one side, 593.4(c)) keeps the phase: the dice are rethrown within the same round,
and the bad throw is kept in `rethrows` for the audit trail. Every transition returns a new `Round`; calling
one in the wrong phase raises `RoundStateError`, so nothing is settled twice. Extra Roll stakes are
collected at "no more bets" (593.4(a)).

Exceptions::

    RulesError (rules.games)
    ├── DocumentRefusedError (rules.games)   carries every `Problem`, each naming its clause
    │   ├── WagerRefusedError                 place_wager(s)/withdraw_wager: a wager breaks a rule
    │   └── RollRefusedError                  record_roll: wrong number of dice or a face outside 1..6
    └── RoundStateError                       a transition called in the wrong phase

Example (the worked example of 593.4(e)-(h)):

>>> from decimal import Decimal
>>> from rules.hrd.round import open_round, place_wagers, no_more_bets, record_roll
>>> from rules.hrd.round import settle_first_roll, settle_extra_roll, Phase
>>> from rules.hrd.wagers import Wager, WagerKind
>>> r = open_round("hrd10")
>>> r = place_wagers(r, [
...     Wager(seat=1, kind=WagerKind.PIP_STREET, face=5, amount=Decimal("5.00")),
...     Wager(seat=1, kind=WagerKind.LIKE_KIND, count=6, amount=Decimal("5.00")),
...     Wager(seat=1, kind=WagerKind.EXTRA_ROLL, amount=Decimal("5.00")),
... ])
>>> r = no_more_bets(r)                     # the Extra Roll stake is collected now
>>> r = record_roll(r, [5, 5, 5, 5, 6, 6, 6, 1, 1, 4])
>>> r = settle_first_roll(r)
>>> r.phase, r.first_roll.winner, r.first_roll.match_count, r.pending
(<Phase.AWAITING_EXTRA_ROLL: 'awaiting_extra_roll'>, 5, 4, (1,))
>>> r = record_roll(r, [1, 2, 3], verdict="void")   # cocked die: rethrow, same round
>>> r = record_roll(r, [5, 5, 2, 3, 4, 6])          # the six dice that were not 5s
>>> r = settle_extra_roll(r)
>>> r.extra_roll.final_count, r.phase
(6, <Phase.COMPLETE: 'complete'>)
>>> for s in r.settlements_in_wager_order():
...     print(s.wager.kind.value, s.result.value, s.win, s.roll)
pip_street win 20.00 1
like_kind win 20.00 2
extra_roll collected 0.00 1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import StrEnum

from rules.games import DocumentRefusedError, Problem, RulesError
from rules.hrd.dice import RollClass, classify, face_counts, new_matches
from rules.hrd.paytable import Paytable, default_paytable
from rules.hrd.settings import DEFAULT_SETTINGS, Settings
from rules.hrd.settlement import (
    Result,
    Settlement,
    collect_extra_roll_stakes,
    extra_roll_bought,
)
from rules.hrd.settlement import settle_extra_roll as _settle_extra_roll
from rules.hrd.settlement import settle_first_roll as _settle_first_roll
from rules.hrd.wagers import GAMES, GameRules, Wager, validate_wagers


class WagerRefusedError(DocumentRefusedError):
    """A wager (or set of wagers) breaks a rule; `problems` lists every one, by clause."""


class RollRefusedError(DocumentRefusedError):
    """A recorded roll has the wrong number of dice or a face outside 1..6."""


class RoundStateError(RulesError):
    """A transition was called in a phase that does not allow it (e.g. settling a roll twice)."""


class Phase(StrEnum):
    """Where a round stands."""

    BETTING = "betting"
    NO_MORE_BETS = "no_more_bets"  # betting closed, Extra Roll stakes collected; waiting for a valid roll
    FIRST_ROLL = "first_roll"  # a valid first roll recorded, not yet settled
    AWAITING_EXTRA_ROLL = "awaiting_extra_roll"  # roll one settled; waiting for a valid Extra Roll throw
    EXTRA_ROLL = "extra_roll"  # a valid Extra Roll recorded, not yet settled
    COMPLETE = "complete"


class RollVerdict(StrEnum):
    """Whether a throw counts (593.4(b)-(c))."""

    VALID = "valid"
    INVALID = "invalid"  # a die off the table or resting on another die: rethrow (593.4(b))
    VOID = "void"  # a cocked die resting on more than one side: rethrow (593.4(c))


@dataclass(frozen=True)
class Rethrow:
    """A throw that did not count and was rethrown within the round."""

    roll: int  # 1 (first roll) or 2 (Extra Roll)
    verdict: RollVerdict
    faces: tuple[int, ...]  # as far as they were read; may be empty
    reason: str


@dataclass(frozen=True)
class ExtraRoll:
    """The Extra Roll (593.4(g)-(h)): `kept` dice of the winning face stayed, `faces` were rethrown."""

    winner: int
    kept: int
    faces: tuple[int, ...]
    new_matches: int

    @property
    def final_count(self) -> int:
        """kept + rethrown dice that show the winning face."""
        return self.kept + self.new_matches


@dataclass(frozen=True)
class Round:
    """One round of High Roll Dice. Build it with `open_round`; change it only through the transitions.

    Attributes:
        rules: the game (`wagers.HRD10` or `wagers.HRD6`).
        paytable: the odds in force.
        settings: the interpretation settings in force.
        phase: where the round stands.
        wagers: every accepted wager, in the order placed; settlements refer to them by index.
        first_roll: the valid first roll, classified (FIRST_ROLL onwards).
        extra_roll: the valid Extra Roll (EXTRA_ROLL onwards, when one was bought).
        settlements: every decision so far, in the order made; at most one per wager.
        pending: indices of Like Kind wagers left on the layout for the Extra Roll.
        rethrows: throws that did not count.
    """

    rules: GameRules
    paytable: Paytable
    settings: Settings
    phase: Phase = Phase.BETTING
    wagers: tuple[Wager, ...] = ()
    first_roll: RollClass | None = None
    extra_roll: ExtraRoll | None = None
    settlements: tuple[Settlement, ...] = ()
    pending: tuple[int, ...] = ()
    rethrows: tuple[Rethrow, ...] = ()

    @property
    def game(self) -> str:
        """The game id, "hrd10" or "hrd6"."""
        return self.rules.game

    @property
    def extra_roll_bought(self) -> bool:
        """True when any player placed an Extra Roll wager (the dice are rethrown after roll one)."""
        return extra_roll_bought(self.wagers)

    @property
    def dice_to_rethrow(self) -> int:
        """How many dice the Extra Roll throws: all but the kept dice of the winning face (593.4(g))."""
        if self.first_roll is None:
            raise RoundStateError("there is no first roll yet")
        return int(self.rules.dice) - self.first_roll.match_count

    def settlement_for(self, index: int) -> Settlement | None:
        """The decision on wager `index`, or None while it is undecided."""
        for s in self.settlements:
            if s.wager_index == index:
                return s
        return None

    def settlements_in_wager_order(self) -> tuple[Settlement, ...]:
        """The decisions so far, ordered like the wagers."""
        return tuple(sorted(self.settlements, key=lambda s: s.wager_index))


def open_round(
    game: str, *, paytable: Paytable | None = None, settings: Settings = DEFAULT_SETTINGS
) -> Round:
    """Open a round of `game` ("hrd10" or "hrd6") for betting, with the regulation paytable by default.

    Raises:
        DocumentRefusedError: unknown game, or a paytable for another game.
    """
    rules = GAMES.get(game)
    if rules is None:
        raise DocumentRefusedError(
            [Problem("document", f"unknown game {game!r}; known: hrd10, hrd6", "game")]
        )
    table = paytable if paytable is not None else default_paytable(game)
    if table.game != game:
        raise DocumentRefusedError(
            [Problem("paytable", f"the paytable is for {table.game!r}, not {game!r}", "paytable.game")]
        )
    return Round(rules=rules, paytable=table, settings=settings)


def _require(rnd: Round, *phases: Phase, doing: str) -> None:
    if rnd.phase not in phases:
        allowed = " or ".join(p.value for p in phases)
        raise RoundStateError(f"cannot {doing} in phase {rnd.phase.value}; only in {allowed}")


def place_wagers(rnd: Round, wagers: Iterable[Wager], *, field: str = "wagers") -> Round:
    """Accept `wagers` (all or none) while betting is open.

    Raises:
        WagerRefusedError: betting is closed (593.2(a)) or the wagers, with those already placed, break a
            rule; every problem is listed, each with its clause and `field[i]` (i counts all wagers).
    """
    new = tuple(wagers)
    if rnd.phase is not Phase.BETTING:
        raise WagerRefusedError(
            [
                Problem(
                    rnd.rules.clause("after_no_more_bets"),
                    f'no wager after "no more bets" (the round is in phase {rnd.phase.value})',
                    f"{field}[{len(rnd.wagers) + k}]",
                )
                for k in range(max(len(new), 1))
            ]
        )
    combined = rnd.wagers + new
    problems = validate_wagers(combined, rules=rnd.rules, settings=rnd.settings, field=field)
    if problems:
        raise WagerRefusedError(problems)
    return replace(rnd, wagers=combined)


def place_wager(rnd: Round, wager: Wager) -> Round:
    """Accept one wager while betting is open (see `place_wagers`)."""
    return place_wagers(rnd, [wager])


def withdraw_wager(rnd: Round, index: int) -> Round:
    """Take wager `index` back while betting is open; the rest must still be valid (e.g. the Pip Street
    wager stays while a Like Kind wager needs it).

    Raises:
        WagerRefusedError: betting is closed, or the remaining wagers would break a rule.
        IndexError: no such wager.
    """
    if rnd.phase is not Phase.BETTING:
        raise WagerRefusedError(
            [
                Problem(
                    rnd.rules.clause("after_no_more_bets"), 'no change to wagers after "no more bets"', None
                )
            ]
        )
    if not 0 <= index < len(rnd.wagers):
        raise IndexError(f"no wager {index}; the round has {len(rnd.wagers)}")
    remaining = rnd.wagers[:index] + rnd.wagers[index + 1 :]
    problems = validate_wagers(remaining, rules=rnd.rules, settings=rnd.settings)
    if problems:
        raise WagerRefusedError(problems)
    return replace(rnd, wagers=remaining)


def _with_settlements(rnd: Round, new: Sequence[Settlement]) -> tuple[Settlement, ...]:
    """Append decisions, refusing any wager already decided (the never-pay-twice guard)."""
    decided = {s.wager_index for s in rnd.settlements}
    for s in new:
        if s.wager_index in decided:
            raise RoundStateError(f"wager {s.wager_index} is already settled")
        decided.add(s.wager_index)
    return rnd.settlements + tuple(new)


def no_more_bets(rnd: Round) -> Round:
    """Close betting and collect every Extra Roll stake (593.4(a))."""
    _require(rnd, Phase.BETTING, doing='announce "no more bets"')
    collected = collect_extra_roll_stakes(rnd.wagers, rules=rnd.rules)
    return replace(rnd, phase=Phase.NO_MORE_BETS, settlements=_with_settlements(rnd, collected))


def check_faces(faces: Sequence[int], *, expected: int, clause: str, field: str) -> list[Problem]:
    """Problems of a throw: each face an integer 1..6 ("document"), `expected` dice (`clause`)."""
    problems: list[Problem] = []
    if isinstance(faces, str | bytes) or not isinstance(faces, Sequence):
        return [Problem("document", "a roll is a list of die faces 1..6", field)]
    for k, face in enumerate(faces):
        if isinstance(face, bool) or not isinstance(face, int) or face not in (1, 2, 3, 4, 5, 6):
            problems.append(
                Problem("document", f"a die face is an integer 1..6, got {face!r}", f"{field}[{k}]")
            )
    if len(faces) != expected:
        problems.append(Problem(clause, f"this throw has {expected} dice, got {len(faces)}", field))
    return problems


def record_roll(
    rnd: Round,
    faces: Sequence[int],
    *,
    verdict: RollVerdict | str = RollVerdict.VALID,
    reason: str = "",
    field: str = "roll",
) -> Round:
    """Record a throw: the first roll (phase NO_MORE_BETS) or the Extra Roll (AWAITING_EXTRA_ROLL).

    For the Extra Roll, `faces` are only the rethrown dice (all but the kept dice of the winning face).
    An "invalid" or "void" verdict records a rethrow and keeps the phase.

    Raises:
        RoundStateError: no throw is due in this phase.
        RollRefusedError: a valid throw with the wrong number of dice or a face outside 1..6.
    """
    _require(rnd, Phase.NO_MORE_BETS, Phase.AWAITING_EXTRA_ROLL, doing="record a roll")
    verdict = RollVerdict(verdict)
    first = rnd.phase is Phase.NO_MORE_BETS
    if verdict is not RollVerdict.VALID:
        kept = tuple(f for f in faces if isinstance(f, int) and not isinstance(f, bool) and 1 <= f <= 6)
        record = Rethrow(roll=1 if first else 2, verdict=verdict, faces=kept, reason=reason)
        return replace(rnd, rethrows=(*rnd.rethrows, record))
    if first:
        expected, clause = int(rnd.rules.dice), rnd.rules.clause("dice")
    else:
        expected, clause = rnd.dice_to_rethrow, rnd.rules.clause("extra_roll_dice")
    problems = check_faces(faces, expected=expected, clause=clause, field=field)
    if problems:
        raise RollRefusedError(problems)
    if first:
        roll = classify(faces, dice=rnd.rules.dice, no_match_pip_street=rnd.settings.no_match_pip_street)
        return replace(rnd, phase=Phase.FIRST_ROLL, first_roll=roll)
    roll_one = rnd.first_roll
    if roll_one is None or roll_one.winner is None:  # pragma: no cover - guarded by the phases
        raise RoundStateError("an Extra Roll needs a first roll with a winning face")
    face_counts(faces)
    extra = ExtraRoll(
        winner=roll_one.winner,
        kept=roll_one.match_count,
        faces=tuple(faces),
        new_matches=new_matches(winner=roll_one.winner, rethrown=faces),
    )
    return replace(rnd, phase=Phase.EXTRA_ROLL, extra_roll=extra)


def settle_first_roll(rnd: Round) -> Round:
    """Settle the first-roll wagers (593.4(f), 675a.6(i)); then await the Extra Roll if one was bought.

    When the Extra Roll has no die to rethrow (ten of a kind), it is recorded as an empty throw and the
    round completes.
    """
    _require(rnd, Phase.FIRST_ROLL, doing="settle the first roll")
    if rnd.first_roll is None:  # pragma: no cover - guarded by the phases
        raise RoundStateError("no first roll")
    settled, pending = _settle_first_roll(
        rnd.wagers, roll=rnd.first_roll, paytable=rnd.paytable, settings=rnd.settings, rules=rnd.rules
    )
    after = replace(rnd, settlements=_with_settlements(rnd, settled), pending=pending)
    if not (rnd.rules.extra_roll and rnd.extra_roll_bought):
        return replace(after, phase=Phase.COMPLETE)
    if rnd.first_roll.winner is None or after.dice_to_rethrow == 0:
        # Nothing to rethrow: the final count is the first count.
        winner = rnd.first_roll.winner or 0
        extra = ExtraRoll(winner=winner, kept=rnd.first_roll.match_count, faces=(), new_matches=0)
        return settle_extra_roll(replace(after, phase=Phase.EXTRA_ROLL, extra_roll=extra))
    return replace(after, phase=Phase.AWAITING_EXTRA_ROLL)


def settle_extra_roll(rnd: Round) -> Round:
    """Settle the Like Kind wagers left on the layout on the final count (593.4(h)); complete the round."""
    _require(rnd, Phase.EXTRA_ROLL, doing="settle the Extra Roll")
    if rnd.extra_roll is None:  # pragma: no cover - guarded by the phases
        raise RoundStateError("no Extra Roll")
    settled = _settle_extra_roll(
        rnd.wagers,
        pending=rnd.pending,
        final_count=rnd.extra_roll.final_count,
        paytable=rnd.paytable,
        settings=rnd.settings,
        rules=rnd.rules,
    )
    return replace(rnd, phase=Phase.COMPLETE, settlements=_with_settlements(rnd, settled), pending=())


@dataclass(frozen=True)
class SeatTotals:
    """Money of one seat in a round: staked, won (net wins), lost (stakes lost or collected), net."""

    staked: Decimal
    won: Decimal
    lost: Decimal

    @property
    def net(self) -> Decimal:
        """won - lost: what the seat is up (positive) or down (negative)."""
        return self.won - self.lost


def seat_totals(rnd: Round) -> dict[int, SeatTotals]:
    """Per seat: staked, won and lost over the decisions made so far (undecided wagers count as staked)."""
    zero = Decimal("0.00")
    staked: dict[int, Decimal] = {}
    won: dict[int, Decimal] = {}
    lost: dict[int, Decimal] = {}
    for w in rnd.wagers:
        staked[w.seat] = staked.get(w.seat, zero) + w.amount
    for s in rnd.settlements:
        seat = s.wager.seat
        if s.result is Result.WIN:
            won[seat] = won.get(seat, zero) + s.win
        else:
            lost[seat] = lost.get(seat, zero) + s.wager.amount
    return {
        seat: SeatTotals(staked=staked[seat], won=won.get(seat, zero), lost=lost.get(seat, zero))
        for seat in sorted(staked)
    }
