"""Settlement of roll one and the Extra Roll: the one implementation of the payout rules.

Used by the round state machine (`round`) and through it by the settle calculator (`document`).

- At "no more bets" every Extra Roll stake is collected (593.4(a), 675a.4(a)): result "collected".
- Roll one (593.4(f), 675a.6(i)): Pip Street pays on the winning face (593.5(a) / 675a.6(j)); Like Kind pays
  on a circle equal to the match count (593.5(b) / 675a.6(k)); a circle below the count loses; a circle above
  it loses unless the seat's Extra Roll wager reaches it (setting `extra_roll_reach`), in which case it
  stays on the layout (593.4(f)(2)(ii)); Millionaire Row pays on 9 or 10 of a kind (593.5(c)), on roll one
  only: a circle on its own count, or one stake on both circles at the price of the count thrown (setting
  `millionaire_row_circles`).
- The Extra Roll (593.4(g)-(h), 675a.4(g)-(h)): the dice of the winning face stay, the rest are rethrown
  once; final count = kept + rethrown dice showing the winning face. Each circle left on the layout wins at
  the Extra Roll odds (593.5(d)) when it equals the final count and loses otherwise; a final count of 9 or
  10 has no Like Kind circle, so it pays none. A circle paid on roll one was settled then and is never
  looked at again (593.4(h) proviso): nothing is paid twice.

A win is the stake times the odds, rounded to the cent by the `payout_rounding` setting; the stake is
returned on top and is not part of `win`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from rules.hrd.dice import RollClass
from rules.hrd.paytable import Odds, Paytable
from rules.hrd.settings import ExtraRollReach, PayoutRounding, Settings
from rules.hrd.wagers import GameRules, Wager, WagerKind
from rules.money import pay_cents

ZERO = Decimal("0.00")


class Result(StrEnum):
    """How a wager ended."""

    WIN = "win"
    LOSE = "lose"
    COLLECTED = "collected"  # the Extra Roll stake, taken at "no more bets" to buy the second roll


@dataclass(frozen=True)
class Settlement:
    """The decision on one wager.

    Attributes:
        wager_index: position of the wager in the round's wager list.
        wager: the wager.
        result: win, lose or collected.
        win: the net amount won (stake returned on top); 0.00 unless `result` is win.
        roll: 1 or 2, the roll that decided it; an Extra Roll stake, collected at "no more bets"
            before roll one (593.4(a)), is reported with roll 1.
        odds: the odds paid (win only).
        clause: the clause that decided it.
    """

    wager_index: int
    wager: Wager
    result: Result
    win: Decimal
    roll: int
    odds: Odds | None
    clause: str


def payout(amount: Decimal, odds: Odds, *, rounding: PayoutRounding) -> Decimal:
    """Stake times odds, in whole cents (`rounding` says how a fraction of a cent goes)."""
    return pay_cents(amount, odds.win, half_up=rounding is PayoutRounding.HALF_UP)


def _win(index: int, wager: Wager, odds: Odds, *, roll: int, clause: str, settings: Settings) -> Settlement:
    return Settlement(
        wager_index=index,
        wager=wager,
        result=Result.WIN,
        win=payout(wager.amount, odds, rounding=settings.payout_rounding),
        roll=roll,
        odds=odds,
        clause=clause,
    )


def _lose(index: int, wager: Wager, *, roll: int, clause: str) -> Settlement:
    return Settlement(
        wager_index=index, wager=wager, result=Result.LOSE, win=ZERO, roll=roll, odds=None, clause=clause
    )


def collect_extra_roll_stakes(wagers: Sequence[Wager], *, rules: GameRules) -> tuple[Settlement, ...]:
    """Collect every Extra Roll stake at "no more bets" (593.4(a))."""
    return tuple(
        Settlement(
            wager_index=i,
            wager=w,
            result=Result.COLLECTED,
            win=ZERO,
            roll=1,
            odds=None,
            clause=rules.clause("extra_roll_collect"),
        )
        for i, w in enumerate(wagers)
        if w.kind is WagerKind.EXTRA_ROLL
    )


def extra_roll_bought(wagers: Sequence[Wager]) -> bool:
    """True when any player placed an Extra Roll wager, so the dice are rethrown (593.4(g))."""
    return any(w.kind is WagerKind.EXTRA_ROLL for w in wagers)


def reaches(wagers: Sequence[Wager], index: int, *, settings: Settings) -> bool:
    """Whether the seat's Extra Roll wager keeps Like Kind wager `index` on the layout (see the setting
    `extra_roll_reach`)."""
    like = wagers[index]
    all_circles = settings.extra_roll_reach is ExtraRollReach.ALL_CIRCLES
    return any(
        w.kind is WagerKind.EXTRA_ROLL and w.seat == like.seat and (all_circles or w.count == like.count)
        for w in wagers
    )


def settle_first_roll(
    wagers: Sequence[Wager],
    *,
    roll: RollClass,
    paytable: Paytable,
    settings: Settings,
    rules: GameRules,
) -> tuple[tuple[Settlement, ...], tuple[int, ...]]:
    """Settle every wager that roll one decides; return them and the indices left for the Extra Roll.

    Extra Roll stakes are not settled here (see `collect_extra_roll_stakes`).
    """
    settled: list[Settlement] = []
    pending: list[int] = []
    count = roll.match_count
    for i, w in enumerate(wagers):
        if w.kind is WagerKind.PIP_STREET:
            if w.face is not None and w.face == roll.winner:
                odds = paytable.pip_street[w.face]
                settled.append(
                    _win(i, w, odds, roll=1, clause=rules.clause("pip_street_pay"), settings=settings)
                )
            else:
                settled.append(_lose(i, w, roll=1, clause=rules.clause("pip_street_settle")))
        elif w.kind is WagerKind.LIKE_KIND:
            if w.count == count:
                settled.append(
                    _win(
                        i,
                        w,
                        paytable.like_kind[count],
                        roll=1,
                        clause=rules.clause("like_kind_pay"),
                        settings=settings,
                    )
                )
            elif w.count is not None and w.count > count and reaches(wagers, i, settings=settings):
                pending.append(i)
            elif reaches(wagers, i, settings=settings):
                settled.append(_lose(i, w, roll=1, clause=rules.clause("like_kind_settle_er")))
            else:
                settled.append(_lose(i, w, roll=1, clause=rules.clause("like_kind_settle")))
        elif w.kind is WagerKind.MILLIONAIRE_ROW:
            # One stake on both circles (setting millionaire_row_circles "one_stake") has no count.
            if w.count == count or (w.count is None and count in paytable.millionaire_row):
                settled.append(
                    _win(
                        i,
                        w,
                        paytable.millionaire_row[count],
                        roll=1,
                        clause=rules.clause("millionaire_row_pay"),
                        settings=settings,
                    )
                )
            else:
                settled.append(_lose(i, w, roll=1, clause=rules.clause("millionaire_row_settle")))
    return tuple(settled), tuple(pending)


def settle_extra_roll(
    wagers: Sequence[Wager],
    *,
    pending: Sequence[int],
    final_count: int,
    paytable: Paytable,
    settings: Settings,
    rules: GameRules,
) -> tuple[Settlement, ...]:
    """Settle the Like Kind wagers left on the layout after roll one, on the final count (593.4(h))."""
    settled: list[Settlement] = []
    for i in pending:
        w = wagers[i]
        if w.kind is not WagerKind.LIKE_KIND:
            raise ValueError(f"wager {i} is not a Like Kind wager; only those wait for the Extra Roll")
        if w.count == final_count and final_count in paytable.extra_roll:
            settled.append(
                _win(
                    i,
                    w,
                    paytable.extra_roll[final_count],
                    roll=2,
                    clause=rules.clause("extra_roll_pay"),
                    settings=settings,
                )
            )
        else:
            settled.append(_lose(i, w, roll=2, clause=rules.clause("extra_roll_settle")))
    return tuple(settled)
