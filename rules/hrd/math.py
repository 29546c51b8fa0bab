"""Exact game math by enumeration: every multiset of faces, weighted by its multinomial count.

A throw of n fair dice is a multiset of faces, i.e. counts (c1..c6) with sum n. It occurs with probability
n! / (c1! ... c6!) / 6^n. Enumerating the C(n+5, 5) multisets (3003 for ten dice, 462 for six) with
`fractions.Fraction` gives exact probabilities: no simulation, no floating point. The Extra Roll rethrows
the n - k dice that do not show the winning face; each shows it with probability 1/6, so the final count
is k + Binomial(n - k, 1/6), again exact.

Values are per unit staked: expected value EV = P(win) * odds - P(lose); house edge = -EV. Written by hand
because no well-kept library enumerates dice multisets with exact weights; the code is a few lines.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from rules.hrd.dice import FACES, NO_MATCH, winner_of_counts
from rules.hrd.paytable import Paytable
from rules.hrd.settings import ExtraRollReach, MillionaireRowCircles, NoMatchPipStreet, Settings
from rules.hrd.wagers import GameRules


def compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every tuple of `parts` non-negative integers summing to `total` (the multisets of a throw)."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total, -1, -1):
        for rest in compositions(total - first, parts - 1):
            yield (first, *rest)


def multinomial(counts: tuple[int, ...]) -> int:
    """n! / (c1! ... ck!): how many ordered throws give these counts."""
    result = math.factorial(sum(counts))
    for c in counts:
        result //= math.factorial(c)
    return result


@dataclass(frozen=True)
class FirstRollMath:
    """The distribution of a first roll: by Pip Street winner and by match count.

    `winner` maps face -> probability; under `no_match_pip_street` "none" the no-match probability has
    no winner and is in `no_winner`.
    """

    dice: int
    multisets: int
    winner: Mapping[int, Fraction]
    no_winner: Fraction
    match_count: Mapping[int, Fraction]


@cache
def _first_roll(dice: int, no_match_pip_street: NoMatchPipStreet) -> FirstRollMath:
    total = Fraction(1, 6**dice)
    winner = dict.fromkeys(FACES, Fraction(0))
    count: dict[int, Fraction] = {}
    no_winner = Fraction(0)
    multisets = 0
    for counts in compositions(dice, 6):
        multisets += 1
        p = multinomial(counts) * total
        top = max(counts)
        count[top] = count.get(top, Fraction(0)) + p
        if top == NO_MATCH and no_match_pip_street is NoMatchPipStreet.NONE:
            no_winner += p
        else:
            winner[winner_of_counts(counts)] += p
    return FirstRollMath(
        dice=dice,
        multisets=multisets,
        winner=winner,
        no_winner=no_winner,
        match_count=dict(sorted(count.items())),
    )


def first_roll(dice: int, *, no_match_pip_street: NoMatchPipStreet = NoMatchPipStreet.ACE) -> FirstRollMath:
    """Exact first-roll distribution of `dice` dice."""
    return _first_roll(dice, no_match_pip_street)


def final_count_distribution(*, dice: int, kept: int) -> dict[int, Fraction]:
    """P(final count = f | first count = kept): kept + Binomial(dice - kept, 1/6) (593.4(g)-(h))."""
    rethrown = dice - kept
    return {
        kept + j: Fraction(math.comb(rethrown, j) * 5 ** (rethrown - j), 6**rethrown)
        for j in range(rethrown + 1)
    }


@dataclass(frozen=True)
class WagerValue:
    """One wager's exact value per unit staked."""

    kind: str  # "pip_street", "like_kind", "millionaire_row", "extra_roll", ...
    spot: str  # face, circle, or what the line covers
    probability: Fraction  # of winning
    pays: str  # the odds text
    expected_value: Fraction  # per unit of the line's first wager; the line stakes `units` in all
    units: int = 1  # units staked by the line (e.g. 8: seven Like Kind circles and one Extra Roll)
    clause: str = ""  # the clauses behind the figure: how the wager wins and what it pays
    reading: str = ""  # the setting=value whose reading the figure uses ("" when no setting bears on it)

    @property
    def house_edge(self) -> Fraction:
        """-EV per unit staked (over all `units` of the line)."""
        return -self.expected_value / self.units


@dataclass(frozen=True)
class CircleValue:
    """A Like Kind circle with and without the Extra Roll reaching it (per unit on the circle, not
    counting the Extra Roll stake)."""

    circle: int
    p_win_without: Fraction
    ev_without: Fraction
    p_win_roll_one: Fraction
    p_win_extra_roll: Fraction
    ev_with: Fraction

    @property
    def gain(self) -> Fraction:
        """What the Extra Roll adds to the circle's value per unit."""
        return self.ev_with - self.ev_without


@dataclass(frozen=True)
class GameMath:
    """Everything `throwbox math` prints for one High Roll Dice game."""

    rules: GameRules
    paytable: Paytable
    settings: Settings
    first: FirstRollMath
    wagers: tuple[WagerValue, ...]
    final_given_first: Mapping[int, Mapping[int, Fraction]]  # first count -> final count -> probability
    circles: tuple[CircleValue, ...]
    extra_roll_lines: tuple[WagerValue, ...]  # the Extra Roll stake's value for the circles it covers


def _ev(p: Fraction, win: Fraction) -> Fraction:
    return p * win - (1 - p)


def _extra_roll_lines(
    circles: list[CircleValue], *, settings: Settings, paytable: Paytable, rules: GameRules
) -> list[WagerValue]:
    """The Extra Roll stake's value, alone and together with the Like Kind circles it covers.

    The stake (1 unit, always collected at "no more bets") buys the chance that a circle above the first
    count is reached on the final count; alone, its value is the gain it gives the circles it covers, less 1.
    """
    pays = ", ".join(f"{k}: {o.text}" for k, o in sorted(paytable.extra_roll.items()))
    clause = f"{rules.clause('extra_roll_settle')}, {rules.clause('extra_roll_pay')}"
    both = f"{rules.clause('like_kind_pay')}, {clause}"
    reading = f"extra_roll_reach={settings.extra_roll_reach.value}"
    lines: list[WagerValue] = []
    for c in circles:
        lines.append(
            WagerValue(
                "extra_roll",
                f"alone, covering circle {c.circle}",
                c.p_win_extra_roll,
                pays,
                c.gain - 1,
                clause=clause,
                reading=reading,
            )
        )
    for c in circles:
        p = c.p_win_roll_one + c.p_win_extra_roll
        lines.append(
            WagerValue(
                "like_kind+extra_roll",
                f"circle {c.circle} + Extra Roll",
                p,
                pays,
                c.ev_with - 1,
                units=2,
                clause=both,
                reading=reading,
            )
        )
    p_any = sum((c.p_win_extra_roll for c in circles), Fraction(0))
    gain = sum((c.gain for c in circles), Fraction(0))
    ev_all = sum((c.ev_with for c in circles), Fraction(0))
    n = len(circles)
    # With every circle covered, the line wins something exactly when roll one lands on a circle (2..8);
    # it can win twice (roll one on the first count, the Extra Roll on a higher circle).
    p_some = sum((c.p_win_roll_one for c in circles), Fraction(0))
    if settings.extra_roll_reach is ExtraRollReach.ALL_CIRCLES:
        lines.append(
            WagerValue(
                "extra_roll",
                "alone, covering circles 2..8",
                p_any,
                pays,
                gain - 1,
                clause=clause,
                reading=reading,
            )
        )
        lines.append(
            WagerValue(
                "like_kind+extra_roll",
                "circles 2..8 + one Extra Roll",
                p_some,
                pays,
                ev_all - 1,
                units=n + 1,
                clause=both,
                reading=reading,
            )
        )
    else:
        lines.append(
            WagerValue(
                "like_kind+extra_roll",
                f"circles 2..8 + {n} Extra Rolls",
                p_some,
                pays,
                ev_all - n,
                units=2 * n,
                clause=both,
                reading=reading,
            )
        )
    return lines


def _millionaire_row_lines(
    first: FirstRollMath, *, paytable: Paytable, settings: Settings, rules: GameRules
) -> list[WagerValue]:
    """Millionaire Row: a line per circle, or one line for one stake on both (`millionaire_row_circles`)."""
    if not paytable.millionaire_row:
        return []
    clause = f"{rules.clause('millionaire_row_max')}, {rules.clause('millionaire_row_pay')}"
    reading = f"millionaire_row_circles={settings.millionaire_row_circles.value}"
    if settings.millionaire_row_circles is MillionaireRowCircles.ONE_STAKE:
        p = sum((first.match_count.get(k, Fraction(0)) for k in paytable.millionaire_row), Fraction(0))
        won = sum(
            (first.match_count.get(k, Fraction(0)) * o.win for k, o in paytable.millionaire_row.items()),
            Fraction(0),
        )
        pays = ", ".join(f"{k}: {o.text}" for k, o in sorted(paytable.millionaire_row.items()))
        spot = " or ".join(str(k) for k in sorted(paytable.millionaire_row))
        return [WagerValue("millionaire_row", spot, p, pays, won - (1 - p), clause=clause, reading=reading)]
    lines: list[WagerValue] = []
    for count, odds in sorted(paytable.millionaire_row.items()):
        p = first.match_count.get(count, Fraction(0))
        lines.append(
            WagerValue(
                "millionaire_row",
                str(count),
                p,
                odds.text,
                _ev(p, odds.win),
                clause=clause,
                reading=reading,
            )
        )
    return lines


def game_math(*, rules: GameRules, paytable: Paytable, settings: Settings) -> GameMath:
    """Exact probability and house edge of every wager, and the Extra Roll's effect (10 dice)."""
    dice = int(rules.dice)
    first = first_roll(dice, no_match_pip_street=settings.no_match_pip_street)
    wagers: list[WagerValue] = []
    # The 6-dice no-match roll's Pip Street winner is a reading; with ten dice every roll has a winner.
    pip_reading = "" if dice > 6 else f"no_match_pip_street={settings.no_match_pip_street.value}"
    pip_clause = f"{rules.clause('winner')}, {rules.clause('pip_street_pay')}"
    for face in (2, 3, 4, 5, 6, 1):  # the layout's order, two on the player's left (593.1(b)(2)(iii))
        odds = paytable.pip_street[face]
        p = first.winner[face]
        wagers.append(
            WagerValue(
                "pip_street",
                str(face),
                p,
                odds.text,
                _ev(p, odds.win),
                clause=pip_clause,
                reading=pip_reading,
            )
        )
    like_clause = f"{rules.clause('match_count')}, {rules.clause('like_kind_pay')}"
    for circle in rules.like_kind_circles:
        odds = paytable.like_kind[circle]
        p = first.match_count.get(circle, Fraction(0))
        spot = "no_match" if circle == NO_MATCH else str(circle)
        wagers.append(WagerValue("like_kind", spot, p, odds.text, _ev(p, odds.win), clause=like_clause))
    wagers += _millionaire_row_lines(first, paytable=paytable, settings=settings, rules=rules)

    final_given_first: dict[int, dict[int, Fraction]] = {}
    circles: list[CircleValue] = []
    lines: list[WagerValue] = []
    if rules.extra_roll:
        for kept in sorted(first.match_count):
            final_given_first[kept] = final_count_distribution(dice=dice, kept=kept)
        for circle in rules.like_kind_circles:
            p_one = first.match_count.get(circle, Fraction(0))
            p_two = sum(
                (
                    first.match_count[k] * final_given_first[k].get(circle, Fraction(0))
                    for k in first.match_count
                    if k < circle
                ),
                Fraction(0),
            )
            win_one = paytable.like_kind[circle].win
            win_two = paytable.extra_roll[circle].win if circle in paytable.extra_roll else Fraction(0)
            ev_with = p_one * win_one + p_two * win_two - (1 - p_one - p_two)
            circles.append(
                CircleValue(
                    circle=circle,
                    p_win_without=p_one,
                    ev_without=_ev(p_one, win_one),
                    p_win_roll_one=p_one,
                    p_win_extra_roll=p_two,
                    ev_with=ev_with,
                )
            )
        lines = _extra_roll_lines(circles, settings=settings, paytable=paytable, rules=rules)
    return GameMath(
        rules=rules,
        paytable=paytable,
        settings=settings,
        first=first,
        wagers=tuple(wagers),
        final_given_first=final_given_first,
        circles=tuple(circles),
        extra_roll_lines=tuple(lines),
    )
