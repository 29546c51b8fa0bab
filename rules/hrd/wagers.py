"""Wagers and wager validation: each broken rule is one `Problem` naming its clause.

The rules checked, with the clause each refusal names (hrd10 / hrd6):

- a seat is one of the five betting positions: 593.1(a) / 675a.6(b)
- a Pip Street wager is needed to play (any other wager at the seat needs one): 593.2(e)(1) / 675a.6(d)
- a Pip Street wager is on a face 1..6: 593.1(b)(2)(iii) / 675a.6(b)(2)
- a Like Kind wager equals the player's Pip Street wager: 593.2(e)(2) / 675a.6(d)
- Like Kind circles 2..8: 593.1(b)(2)(i); 2..6 and "no match": 675a.6(b)(1)
- an Extra Roll wager only with a Like Kind wager and equal to it: 593.2(e)(3); none with six dice:
  675a.6(d)
- all Pip Street, Like Kind and Extra Roll wagers of a seat of equal value: 593.1(b)(2)(iv) / 675a.6(b)(3)
- Millionaire Row circles 9 and 10: 593.1(b)(2)(ii); at most $1: 593.2(e)(4); none with six dice: 675a.6(d)
- no wager after "no more bets": 593.2(a) / 675a.6(g)

A seat with only Millionaire Row wagers is accepted by default (setting `millionaire_row_alone`). With
`millionaire_row_circles` "one_stake" a Millionaire Row wager names no circle (one stake on both).
Amounts are positive and in whole cents (clause "document"); one spot holds one wager per seat ("document":
place the combined amount once). With `extra_roll_reach` "one_circle" an Extra Roll wager names the Like
Kind circle it covers in `count`; with "all_circles" (the default) it has no count and one per seat covers
all of that seat's circles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from types import MappingProxyType

from rules.games import Problem
from rules.hrd.dice import NO_MATCH, DiceCount
from rules.hrd.settings import (
    DEFAULT_SETTINGS,
    ExtraRollReach,
    MillionaireRowAlone,
    MillionaireRowCircles,
    Settings,
)

SEATS: tuple[int, ...] = (1, 2, 3, 4, 5)
MILLIONAIRE_ROW_MAX = Decimal("1.00")
CENT = Decimal("0.01")
# No table takes a larger wager; the bound keeps every amount and payout exact in `decimal`'s 28 digits.
MAX_AMOUNT = Decimal("1000000000.00")


class WagerKind(StrEnum):
    """The wagers of High Roll Dice (593.2(e))."""

    PIP_STREET = "pip_street"
    LIKE_KIND = "like_kind"
    EXTRA_ROLL = "extra_roll"
    MILLIONAIRE_ROW = "millionaire_row"


@dataclass(frozen=True)
class Wager:
    """One wager at one seat.

    Attributes:
        seat: betting position 1..5.
        kind: which wager.
        amount: the stake, a Decimal in whole cents.
        face: the Pip Street face 1..6 (Pip Street only).
        count: the circle: Like Kind 2..8 (hrd10) or 2..6 / `NO_MATCH` (hrd6); Millionaire Row 9 or 10
            (none with `millionaire_row_circles` "one_stake");
            Extra Roll only with `extra_roll_reach` "one_circle" (the Like Kind circle it covers).
    """

    seat: int
    kind: WagerKind
    amount: Decimal
    face: int | None = None
    count: int | None = None

    def spot(self) -> tuple[int, str, int | None, int | None]:
        """Where on the layout the wager lies; two wagers on one spot are refused."""
        return (self.seat, self.kind.value, self.face, self.count)


@dataclass(frozen=True)
class GameRules:
    """What differs between the 10-dice game and the 6-dice variation, with the clauses to cite."""

    game: str
    dice: DiceCount
    like_kind_circles: tuple[int, ...]
    extra_roll: bool
    millionaire_row: bool
    clauses: Mapping[str, str]

    def clause(self, rule: str) -> str:
        """The clause that states `rule` in this game."""
        return self.clauses[rule]


HRD10 = GameRules(
    game="hrd10",
    dice=DiceCount.TEN,
    like_kind_circles=(2, 3, 4, 5, 6, 7, 8),
    extra_roll=True,
    millionaire_row=True,
    clauses=MappingProxyType(
        {
            "seat": "593.1(a)",
            "needs_pip_street": "593.2(e)(1)",
            "pip_street_face": "593.1(b)(2)(iii)",
            "like_kind_equal": "593.2(e)(2)",
            "like_kind_circle": "593.1(b)(2)(i)",
            "extra_roll": "593.2(e)(3)",
            "equal_value": "593.1(b)(2)(iv)",
            "millionaire_row_circle": "593.1(b)(2)(ii)",
            "millionaire_row_max": "593.2(e)(4)",
            "after_no_more_bets": "593.2(a)",
            "winner": "593.2(e)(1)",
            "match_count": "593.2(e)(2)",
            "dice": "593.3(a)",
            "extra_roll_dice": "593.4(g)",
            "pip_street_pay": "593.5(a)",
            "pip_street_settle": "593.4(f)(1)",
            "like_kind_pay": "593.5(b)",
            "like_kind_settle": "593.4(f)(2)(i)",
            "like_kind_settle_er": "593.4(f)(2)(ii)",
            "millionaire_row_pay": "593.5(c)",
            "millionaire_row_settle": "593.4(f)(3)",
            "extra_roll_pay": "593.5(d)",
            "extra_roll_settle": "593.4(h)",
            "extra_roll_collect": "593.4(a)",
        }
    ),
)

HRD6 = GameRules(
    game="hrd6",
    dice=DiceCount.SIX,
    like_kind_circles=(NO_MATCH, 2, 3, 4, 5, 6),
    extra_roll=False,
    millionaire_row=False,
    clauses=MappingProxyType(
        {
            "seat": "675a.6(b)",
            "needs_pip_street": "675a.6(d)",
            "pip_street_face": "675a.6(b)(2)",
            "like_kind_equal": "675a.6(d)",
            "like_kind_circle": "675a.6(b)(1)",
            "extra_roll": "675a.6(d)",
            "equal_value": "675a.6(b)(3)",
            "millionaire_row_circle": "675a.6(d)",
            "millionaire_row_max": "675a.6(d)",
            "after_no_more_bets": "675a.6(g)",
            "winner": "675a.6(d)",
            "match_count": "675a.6(d)",
            "dice": "675a.6(e)",
            "extra_roll_dice": "675a.6(d)",
            "pip_street_pay": "675a.6(j)",
            "pip_street_settle": "675a.6(i)",
            "like_kind_pay": "675a.6(k)",
            "like_kind_settle": "675a.6(i)",
            "like_kind_settle_er": "675a.6(i)",
            "millionaire_row_pay": "675a.6(d)",
            "millionaire_row_settle": "675a.6(d)",
            "extra_roll_pay": "675a.6(d)",
            "extra_roll_settle": "675a.6(d)",
            "extra_roll_collect": "675a.6(d)",
        }
    ),
)

GAMES: Mapping[str, GameRules] = MappingProxyType({"hrd10": HRD10, "hrd6": HRD6})


def circle_name(count: int) -> str:
    """How a Like Kind circle is written in documents: "2".."8", or "no_match"."""
    return "no_match" if count == NO_MATCH else str(count)


def _check_one(wager: Wager, where: str, *, rules: GameRules, settings: Settings) -> list[Problem]:
    """Problems of a wager on its own (not against the seat's other wagers)."""
    problems: list[Problem] = []
    if isinstance(wager.seat, bool) or wager.seat not in SEATS:
        problems.append(
            Problem(
                rules.clause("seat"),
                f"seat must be one of the betting positions 1..5, got {wager.seat!r}",
                f"{where}.seat",
            )
        )
    amount = wager.amount
    if not isinstance(amount, Decimal) or not amount.is_finite() or amount <= 0:
        problems.append(
            Problem("document", f"amount must be a positive sum of money, got {amount!r}", f"{where}.amount")
        )
    elif amount > MAX_AMOUNT:
        problems.append(
            Problem("document", f"amount must be at most {MAX_AMOUNT:,}, got {amount}", f"{where}.amount")
        )
    elif amount != amount.quantize(CENT):
        problems.append(
            Problem("document", f"amount must be in whole cents, got {amount}", f"{where}.amount")
        )
    kind = wager.kind
    if kind is WagerKind.PIP_STREET:
        if isinstance(wager.face, bool) or wager.face not in (1, 2, 3, 4, 5, 6):
            problems.append(
                Problem(
                    rules.clause("pip_street_face"),
                    f"a Pip Street wager is on a face 1..6, got {wager.face!r}",
                    f"{where}.face",
                )
            )
        if wager.count is not None:
            problems.append(
                Problem("document", "a Pip Street wager has a face, not a count", f"{where}.count")
            )
    elif kind is WagerKind.LIKE_KIND:
        if isinstance(wager.count, bool) or wager.count not in rules.like_kind_circles:
            names = ", ".join(circle_name(c) for c in rules.like_kind_circles)
            problems.append(
                Problem(
                    rules.clause("like_kind_circle"),
                    f"{rules.game} has Like Kind circles {names}; got {wager.count!r}",
                    f"{where}.count",
                )
            )
    elif kind is WagerKind.EXTRA_ROLL:
        if not rules.extra_roll:
            problems.append(
                Problem(rules.clause("extra_roll"), f"{rules.game} has no Extra Roll wager", f"{where}.kind")
            )
        elif settings.extra_roll_reach is ExtraRollReach.ALL_CIRCLES and wager.count is not None:
            problems.append(
                Problem(
                    "settings",
                    "an Extra Roll wager names a circle only with extra_roll_reach one_circle; with "
                    "all_circles it covers all of the seat's Like Kind circles",
                    f"{where}.count",
                )
            )
        elif settings.extra_roll_reach is ExtraRollReach.ONE_CIRCLE and (
            isinstance(wager.count, bool) or wager.count not in rules.like_kind_circles
        ):
            problems.append(
                Problem(
                    "settings",
                    "with extra_roll_reach one_circle an Extra Roll wager names the Like Kind circle "
                    f"2..8 it covers in count; got {wager.count!r}",
                    f"{where}.count",
                )
            )
    elif kind is WagerKind.MILLIONAIRE_ROW:
        if not rules.millionaire_row:
            problems.append(
                Problem(
                    rules.clause("millionaire_row_circle"),
                    f"{rules.game} has no Millionaire Row wager",
                    f"{where}.kind",
                )
            )
        else:
            one_stake = settings.millionaire_row_circles is MillionaireRowCircles.ONE_STAKE
            if one_stake and wager.count is not None:
                problems.append(
                    Problem(
                        "settings",
                        "with millionaire_row_circles one_stake a Millionaire Row wager is one stake on both "
                        f"circles and names no count; got {wager.count!r}",
                        f"{where}.count",
                    )
                )
            elif not one_stake and (isinstance(wager.count, bool) or wager.count not in (9, 10)):
                problems.append(
                    Problem(
                        rules.clause("millionaire_row_circle"),
                        f"Millionaire Row circles are 9 and 10, got {wager.count!r}",
                        f"{where}.count",
                    )
                )
            if isinstance(amount, Decimal) and amount.is_finite() and amount > MILLIONAIRE_ROW_MAX:
                problems.append(
                    Problem(
                        rules.clause("millionaire_row_max"),
                        f"a Millionaire Row wager may not be more than $1, got {amount}",
                        f"{where}.amount",
                    )
                )
    else:  # pragma: no cover - WagerKind is closed; a new member must be handled above
        problems.append(Problem("document", f"unknown wager kind {kind!r}", f"{where}.kind"))
    if kind is not WagerKind.PIP_STREET and wager.face is not None:
        problems.append(Problem("document", f"a {kind.value} wager has no face", f"{where}.face"))
    return problems


def validate_wagers(
    wagers: Sequence[Wager],
    *,
    rules: GameRules,
    settings: Settings = DEFAULT_SETTINGS,
    field: str = "wagers",
    names: Sequence[str] | None = None,
) -> list[Problem]:
    """Every problem of a set of wagers (one round), in document order; empty when the set is valid.

    `field` prefixes the `Problem.field` paths: wager i is `f"{field}[{i}]"`, unless `names` gives each
    wager's path.
    """
    problems: list[Problem] = []
    where = list(names) if names is not None else [f"{field}[{i}]" for i in range(len(wagers))]
    if len(where) != len(wagers):
        raise ValueError("names must give one path per wager")
    for i, wager in enumerate(wagers):
        problems.extend(_check_one(wager, where[i], rules=rules, settings=settings))

    seen: dict[tuple[int, str, int | None, int | None], int] = {}
    for i, wager in enumerate(wagers):
        first = seen.setdefault(wager.spot(), i)
        if first != i:
            problems.append(
                Problem(
                    "document", f"{where[first]} is already on this spot; place one combined wager", where[i]
                )
            )

    seats: dict[int, list[int]] = {}
    for i, wager in enumerate(wagers):
        seats.setdefault(wager.seat, []).append(i)
    for seat, indices in seats.items():
        problems.extend(_check_seat(seat, indices, wagers, where, rules=rules, settings=settings))
    return problems


def _check_seat(
    seat: int,
    indices: list[int],
    wagers: Sequence[Wager],
    where: list[str],
    *,
    rules: GameRules,
    settings: Settings,
) -> list[Problem]:
    """Problems between the wagers of one seat (593.1(b)(2)(iv), 593.2(e)(1)-(3))."""
    problems: list[Problem] = []
    by_kind: dict[WagerKind, list[int]] = {kind: [] for kind in WagerKind}
    for i in indices:
        by_kind[wagers[i].kind].append(i)
    pip, like, extra = (
        by_kind[WagerKind.PIP_STREET],
        by_kind[WagerKind.LIKE_KIND],
        by_kind[WagerKind.EXTRA_ROLL],
    )

    side_bets_only = all(wagers[i].kind is WagerKind.MILLIONAIRE_ROW for i in indices)
    alone_ok = side_bets_only and settings.millionaire_row_alone is MillionaireRowAlone.ALLOWED
    if not pip and not alone_ok:
        i = next((i for i in indices if wagers[i].kind is not WagerKind.MILLIONAIRE_ROW), indices[0])
        problems.append(
            Problem(
                rules.clause("needs_pip_street"),
                f"seat {seat} has no Pip Street wager; a Pip Street wager is needed to play",
                where[i],
            )
        )
    elif pip:
        reference = wagers[pip[0]].amount
        for i in pip[1:]:
            if wagers[i].amount != reference:
                problems.append(
                    Problem(
                        rules.clause("equal_value"),
                        f"all of seat {seat}'s Pip Street, Like Kind and Extra Roll wagers must be of equal "
                        f"value: {wagers[i].amount} here, {reference} at {where[pip[0]]}",
                        f"{where[i]}.amount",
                    )
                )
        for i in like:
            if wagers[i].amount != reference:
                problems.append(
                    Problem(
                        rules.clause("like_kind_equal"),
                        f"a Like Kind wager equals the player's Pip Street wager: {wagers[i].amount} here, "
                        f"{reference} at {where[pip[0]]}",
                        f"{where[i]}.amount",
                    )
                )

    if rules.extra_roll and extra:
        if not like:
            for i in extra:
                problems.append(
                    Problem(
                        rules.clause("extra_roll"),
                        f"seat {seat} has an Extra Roll wager but no Like Kind wager",
                        where[i],
                    )
                )
        else:
            like_amount = wagers[like[0]].amount
            for i in extra:
                if wagers[i].amount != like_amount:
                    problems.append(
                        Problem(
                            rules.clause("extra_roll"),
                            f"an Extra Roll wager equals the player's Like Kind wager: {wagers[i].amount} "
                            f"here, {like_amount} at {where[like[0]]}",
                            f"{where[i]}.amount",
                        )
                    )
        if settings.extra_roll_reach is ExtraRollReach.ALL_CIRCLES:
            for i in extra[1:]:
                problems.append(
                    Problem(
                        rules.clause("extra_roll"),
                        f"seat {seat} already has an Extra Roll wager at {where[extra[0]]}; with "
                        "extra_roll_reach all_circles one covers every Like Kind circle",
                        where[i],
                    )
                )
        else:
            circles = {wagers[i].count for i in like}
            for i in extra:
                count = wagers[i].count
                if count in rules.like_kind_circles and count not in circles:
                    problems.append(
                        Problem(
                            rules.clause("extra_roll"),
                            f"seat {seat} has no Like Kind wager on circle {count} for this Extra Roll "
                            "wager to cover",
                            f"{where[i]}.count",
                        )
                    )
    return problems
