"""The game module for "hrd10" and "hrd6" (see `rules.games`): the settle calculator and the exact math.

The settle document (`throwbox settle`, `POST /v1/settle`)::

    {"game": "hrd10",                                  # or "hrd6"
     "wagers": [{"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
                {"seat": 1, "kind": "like_kind", "count": 4, "amount": "5.00"},   # hrd6: 2..6 or "no_match"
                {"seat": 1, "kind": "extra_roll", "amount": "5.00"},              # hrd10 only
                {"seat": 2, "kind": "millionaire_row", "count": 9, "amount": "1.00"}],  # hrd10 only
     "rolls": [[5,5,5,5,6,6,6,1,1,4], [5,5,2,3,4,6]],  # the second lists only the rethrown dice and is
                                                      # present only when an Extra Roll was bought
     "settings": {"extra_roll_reach": "all_circles"},  # optional, see rules.hrd.settings
     "paytable": {...}}                                # optional, see rules.hrd.paytable

Amounts are strings ("5.00") or integers; JSON numbers with a fraction are read exactly when the caller
parses with `parse_float=Decimal` (the CLI and the route do); a binary float is refused. The answer lists one
settlement per wager in the same order, per-seat totals, and the rolls as classified. The settling is done
by the round state machine (`rules.hrd.round`), so there is one implementation of the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from rules.games import DocumentRefusedError, MathOptions, MathReport, MathTable, Problem
from rules.hrd.dice import NO_MATCH, classify
from rules.hrd.math import GameMath, WagerValue, game_math
from rules.hrd.paytable import Paytable, default_paytable, parse_paytable
from rules.hrd.round import (
    Round,
    check_faces,
    no_more_bets,
    open_round,
    place_wagers,
    record_roll,
    seat_totals,
    settle_extra_roll,
    settle_first_roll,
)
from rules.hrd.settings import SETTING_CLAUSES, MillionaireRowCircles, Settings, parse_settings
from rules.hrd.settlement import Settlement
from rules.hrd.wagers import GAMES, GameRules, Wager, WagerKind, circle_name, validate_wagers

_DOC_KEYS = ("game", "wagers", "rolls", "settings", "paytable")
_WAGER_KEYS = ("seat", "kind", "amount", "face", "count")


# --- reading the document -------------------------------------------------------------------------------


def _amount(value: object, where: str) -> tuple[Decimal | None, list[Problem]]:
    if isinstance(value, bool | float):
        return None, [
            Problem(
                "document",
                f'give amounts as strings like "5.00" (a binary float is not exact): {value!r}',
                where,
            )
        ]
    if isinstance(value, int | Decimal):
        return Decimal(value), []
    if isinstance(value, str):
        try:
            amount = Decimal(value.strip())
        except InvalidOperation:
            return None, [Problem("document", f"amount {value!r} is not a number", where)]
        return amount, []
    return None, [Problem("document", f'amount must be a string like "5.00", got {value!r}', where)]


def _int_field(value: object, where: str, what: str) -> tuple[int | None, list[Problem]]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None, [Problem("document", f"{what} must be an integer, got {value!r}", where)]
    return value, []


def _wager(
    raw: object, where: str, *, rules: GameRules, settings: Settings
) -> tuple[Wager | None, list[Problem]]:
    if not isinstance(raw, Mapping):
        return None, [
            Problem("document", "a wager is an object with seat, kind, amount and face or count", where)
        ]
    problems: list[Problem] = []
    for key in raw:
        if key not in _WAGER_KEYS:
            problems.append(
                Problem(
                    "document",
                    f"unknown wager field {key!r}; fields: {', '.join(_WAGER_KEYS)}",
                    f"{where}.{key}",
                )
            )
    for key in ("seat", "kind", "amount"):
        if key not in raw:
            problems.append(Problem("document", f"a wager needs {key!r}", f"{where}.{key}"))
    if problems:
        return None, problems
    kinds = [k.value for k in WagerKind]
    if raw["kind"] not in kinds:
        return None, [
            Problem(
                "document", f"kind must be one of {', '.join(kinds)}; got {raw['kind']!r}", f"{where}.kind"
            )
        ]
    kind = WagerKind(raw["kind"])
    seat, p_seat = _int_field(raw["seat"], f"{where}.seat", "seat")
    amount, p_amount = _amount(raw["amount"], f"{where}.amount")
    problems = p_seat + p_amount
    face: int | None = None
    count: int | None = None
    if "face" in raw:
        face, p = _int_field(raw["face"], f"{where}.face", "face")
        problems += p
    elif kind is WagerKind.PIP_STREET:
        problems.append(
            Problem(rules.clause("pip_street_face"), "a Pip Street wager needs a face 1..6", f"{where}.face")
        )
    if "count" in raw:
        raw_count = raw["count"]
        if raw_count == "no_match" and not isinstance(raw_count, bool):
            if NO_MATCH in rules.like_kind_circles and kind is WagerKind.LIKE_KIND:
                count = NO_MATCH
            else:
                problems.append(
                    Problem(
                        rules.clause("like_kind_circle"),
                        'the "no_match" circle is a Like Kind circle of the 6-dice game only',
                        f"{where}.count",
                    )
                )
        else:
            count, p = _int_field(raw_count, f"{where}.count", "count")
            problems += p
    elif kind is WagerKind.LIKE_KIND or (
        kind is WagerKind.MILLIONAIRE_ROW
        and settings.millionaire_row_circles is MillionaireRowCircles.SEPARATE
    ):
        circles = (
            "9 or 10"
            if kind is WagerKind.MILLIONAIRE_ROW
            else ", ".join(circle_name(c) for c in rules.like_kind_circles)
        )
        clause = rules.clause(
            "millionaire_row_circle" if kind is WagerKind.MILLIONAIRE_ROW else "like_kind_circle"
        )
        problems.append(Problem(clause, f"a {kind.value} wager needs a count ({circles})", f"{where}.count"))
    if problems or seat is None or amount is None:
        return None, problems
    return Wager(seat=seat, kind=kind, amount=amount, face=face, count=count), []


def _read(doc: Mapping[str, Any]) -> tuple[GameRules, Settings, Paytable, list[Wager], list[Any]]:
    """Read and check the whole document; raise with every problem found."""
    game = doc.get("game")
    rules = GAMES.get(game) if isinstance(game, str) else None
    if rules is None:
        raise DocumentRefusedError(
            [Problem("document", f"unknown game {game!r}; known: hrd10, hrd6", "game")]
        )
    problems: list[Problem] = []
    for key in doc:
        if key not in _DOC_KEYS:
            problems.append(
                Problem("document", f"unknown field {key!r}; fields: {', '.join(_DOC_KEYS)}", str(key))
            )
    settings, p = parse_settings(doc.get("settings"))
    problems += p
    paytable: Paytable | None = default_paytable(rules.game)
    if "paytable" in doc:
        paytable, p = parse_paytable(doc["paytable"], game=rules.game)
        problems += p

    raw_wagers = doc.get("wagers")
    wagers: list[Wager] = []
    names: list[str] = []
    if not isinstance(raw_wagers, list):
        problems.append(Problem("document", "wagers must be a list (it may be empty)", "wagers"))
        raw_wagers = []
    for i, raw in enumerate(raw_wagers):
        wager, p = _wager(raw, f"wagers[{i}]", rules=rules, settings=settings)
        problems += p
        if wager is not None:
            wagers.append(wager)
            names.append(f"wagers[{i}]")
    problems += validate_wagers(wagers, rules=rules, settings=settings, names=names)
    bought = rules.extra_roll and any(
        isinstance(raw, Mapping) and raw.get("kind") == WagerKind.EXTRA_ROLL.value for raw in raw_wagers
    )

    rolls = doc.get("rolls")
    if not isinstance(rolls, list) or not 1 <= len(rolls) <= 2:
        problems.append(
            Problem(
                "document",
                "rolls must be a list of one roll (a list of faces), and a second when an Extra "
                "Roll was bought",
                "rolls",
            )
        )
        rolls = []
    else:
        first_problems = check_faces(
            rolls[0], expected=int(rules.dice), clause=rules.clause("dice"), field="rolls[0]"
        )
        problems += first_problems
        if len(rolls) == 2 and not bought:
            problems.append(
                Problem(
                    rules.clause("extra_roll_dice"),
                    "a second roll is thrown only when a player placed an Extra Roll wager"
                    if rules.extra_roll
                    else f"{rules.game} has no second roll",
                    "rolls[1]",
                )
            )
        elif bought and not first_problems:
            first = classify(rolls[0], dice=rules.dice, no_match_pip_street=settings.no_match_pip_street)
            rethrown = int(rules.dice) - first.match_count
            if len(rolls) == 2:
                problems += check_faces(
                    rolls[1], expected=rethrown, clause=rules.clause("extra_roll_dice"), field="rolls[1]"
                )
            elif rethrown > 0:
                problems.append(
                    Problem(
                        rules.clause("extra_roll_dice"),
                        f"an Extra Roll was bought: rolls[1] must list the {rethrown} rethrown dice "
                        f"(all but the {first.match_count} dice showing {first.winner})",
                        "rolls",
                    )
                )
    if problems or paytable is None:
        raise DocumentRefusedError(problems)
    return rules, settings, paytable, wagers, rolls


# --- the answer ------------------------------------------------------------------------------------------


def _money(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01")))


def _count_out(count: int, rules: GameRules) -> int | str:
    return "no_match" if count == NO_MATCH and NO_MATCH in rules.like_kind_circles else count


def _settlement_out(s: Settlement, rules: GameRules) -> dict[str, Any]:
    w = s.wager
    out: dict[str, Any] = {"seat": w.seat, "kind": w.kind.value}
    if w.face is not None:
        out["face"] = w.face
    if w.count is not None:
        out["count"] = _count_out(w.count, rules)
    out.update(
        {
            "amount": _money(w.amount),
            "result": s.result.value,
            "win": _money(s.win),
            "roll": s.roll,
            "odds": s.odds.text if s.odds is not None else None,
            "clause": s.clause,
        }
    )
    return out


def round_answer(rnd: Round) -> dict[str, Any]:
    """The settle answer for a completed round (also usable by the service for its own rounds)."""
    first = rnd.first_roll
    extra = rnd.extra_roll
    return {
        "game": rnd.game,
        "first_roll": None
        if first is None
        else {
            "faces": list(first.faces),
            "winner": first.winner,
            "match_count": _count_out(first.match_count, rnd.rules),
        },
        "extra_roll": None
        if extra is None
        else {
            "kept": extra.kept,
            "faces": list(extra.faces),
            "new_matches": extra.new_matches,
            "final_count": extra.final_count,
        },
        "settlements": [_settlement_out(s, rnd.rules) for s in rnd.settlements_in_wager_order()],
        "seats": {
            str(seat): {
                "staked": _money(t.staked),
                "won": _money(t.won),
                "lost": _money(t.lost),
                "net": _money(t.net),
            }
            for seat, t in seat_totals(rnd).items()
        },
        "settings": rnd.settings.as_dict(),
        "paytable": rnd.paytable.name,
    }


def settle_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Settle one round given as a settle document (see the module docstring).

    Raises:
        DocumentRefusedError: the document is malformed or breaks a rule; every problem is listed.
    """
    rules, settings, paytable, wagers, rolls = _read(doc)
    rnd = open_round(rules.game, paytable=paytable, settings=settings)
    rnd = no_more_bets(place_wagers(rnd, wagers))
    rnd = settle_first_roll(record_roll(rnd, rolls[0], field="rolls[0]"))
    if rnd.extra_roll is None and len(rolls) == 2:
        rnd = settle_extra_roll(record_roll(rnd, rolls[1], field="rolls[1]"))
    return round_answer(rnd)


# --- exact math ------------------------------------------------------------------------------------------


def frac(value: Fraction) -> str:
    """A fraction written exactly as "p/q" (also for whole numbers: "1/1")."""
    return f"{value.numerator}/{value.denominator}"


def approx(value: Fraction, places: int = 6) -> str:
    """A fraction as a rounded decimal, for people."""
    return str((Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal(1).scaleb(-places)))


def percent(value: Fraction) -> str:
    """A fraction as a percentage with four decimals."""
    return approx(value * 100, 4)


def _line(v: WagerValue) -> dict[str, Any]:
    return {
        "kind": v.kind,
        "spot": v.spot,
        "pays": v.pays,
        "units": v.units,
        "probability": frac(v.probability),
        "expected_value": frac(v.expected_value),
        "house_edge": frac(v.house_edge),
        "house_edge_percent": percent(v.house_edge),
        "clause": v.clause,
        "reading": v.reading or None,
    }


def _data(m: GameMath) -> dict[str, Any]:
    rules = m.rules
    data: dict[str, Any] = {
        "game": rules.game,
        "dice": int(rules.dice),
        "multisets": m.first.multisets,
        "paytable": m.paytable.name,
        "settings": m.settings.as_dict(),
        "first_roll": {
            "winner": {str(face): frac(p) for face, p in m.first.winner.items()},
            "no_winner": frac(m.first.no_winner),
            "match_count": {str(_count_out(k, rules)): frac(p) for k, p in m.first.match_count.items()},
        },
        "wagers": [_line(v) for v in m.wagers],
        "sums": {
            "winner_and_no_winner": frac(sum(m.first.winner.values(), m.first.no_winner)),
            "match_count": frac(sum(m.first.match_count.values(), Fraction(0))),
        },
        "extra_roll": None,
    }
    if rules.extra_roll:
        data["extra_roll"] = {
            "final_count_given_first": {
                str(k): {str(f): frac(p) for f, p in dist.items()} for k, dist in m.final_given_first.items()
            },
            "circles": [
                {
                    "circle": c.circle,
                    "p_win_without": frac(c.p_win_without),
                    "ev_without": frac(c.ev_without),
                    "p_win_roll_one": frac(c.p_win_roll_one),
                    "p_win_extra_roll": frac(c.p_win_extra_roll),
                    "ev_with": frac(c.ev_with),
                    "gain": frac(c.gain),
                }
                for c in m.circles
            ],
            "lines": [_line(v) for v in m.extra_roll_lines],
        }
        data["sums"]["final_count_given_first"] = {
            str(k): frac(sum(dist.values(), Fraction(0))) for k, dist in m.final_given_first.items()
        }
    return data


def _tables(m: GameMath) -> tuple[MathTable, ...]:
    tables = [
        MathTable(
            title=f"{m.rules.game}: every wager, per unit staked ({m.paytable.name})",
            columns=("wager", "spot", "pays", "P(win)", "P(win) ≈", "house edge %", "clause", "reading"),
            rows=tuple(
                (
                    v.kind,
                    v.spot,
                    v.pays,
                    frac(v.probability),
                    approx(v.probability),
                    percent(v.house_edge),
                    v.clause,
                    v.reading or "-",
                )
                for v in m.wagers
            ),
        )
    ]
    if m.rules.extra_roll:
        tables.append(
            MathTable(
                title="Extra Roll: final count given the first count (kept + Binomial(10 - kept, 1/6); "
                f"{m.rules.clause('extra_roll_dice')}, {m.rules.clause('extra_roll_settle')})",
                columns=("first count", "final count", "P", "P ≈"),
                rows=tuple(
                    (str(k), str(f), frac(p), approx(p))
                    for k, dist in m.final_given_first.items()
                    for f, p in dist.items()
                ),
            )
        )
        tables.append(
            MathTable(
                title="Like Kind circles with and without the Extra Roll (per unit on the circle; "
                f"the Extra Roll stake not counted; {m.rules.clause('like_kind_pay')} on roll one, "
                f"{m.rules.clause('extra_roll_pay')} on the Extra Roll; "
                f"extra_roll_reach={m.settings.extra_roll_reach.value})",
                columns=(
                    "circle",
                    "P(win) without",
                    "EV without",
                    "P(win) roll one",
                    "P(win) Extra Roll",
                    "EV with",
                    "EV with ≈",
                    "gain ≈",
                ),
                rows=tuple(
                    (
                        str(c.circle),
                        frac(c.p_win_without),
                        approx(c.ev_without),
                        frac(c.p_win_roll_one),
                        frac(c.p_win_extra_roll),
                        frac(c.ev_with),
                        approx(c.ev_with),
                        approx(c.gain),
                    )
                    for c in m.circles
                ),
            )
        )
        tables.append(
            MathTable(
                title=f"Extra Roll stake (collected at no more bets) and Like Kind + Extra Roll lines "
                f"(extra_roll_reach: {m.settings.extra_roll_reach.value})",
                columns=("line", "units staked", "P(win)", "EV per line ≈", "house edge %", "clause"),
                rows=tuple(
                    (
                        f"{v.kind}: {v.spot}",
                        str(v.units),
                        frac(v.probability),
                        approx(v.expected_value),
                        percent(v.house_edge),
                        v.clause,
                    )
                    for v in m.extra_roll_lines
                ),
            )
        )
    return tuple(tables)


# The settings whose reading changes a figure of `throwbox math`, by game, and what each value means.
_READINGS: dict[str, tuple[str, ...]] = {
    "hrd10": ("extra_roll_reach", "millionaire_row_circles"),
    "hrd6": ("no_match_pip_street",),
}
_READING_TEXT: dict[tuple[str, str], str] = {
    ("extra_roll_reach", "all_circles"): "one Extra Roll wager keeps every Like Kind circle of the seat "
    "above the first count",
    ("extra_roll_reach", "one_circle"): "each Extra Roll wager keeps only the circle it names",
    ("millionaire_row_circles", "separate"): "the nine and the ten circles are two wagers, each priced "
    "and paid on its own count",
    ("millionaire_row_circles", "one_stake"): "one Millionaire Row stake pays on nine or ten of a kind, "
    "at the price of the count thrown",
    ("no_match_pip_street", "ace"): "on a no-match roll the ace wins Pip Street by rank",
    ("no_match_pip_street", "none"): "on a no-match roll every Pip Street wager loses",
}


def math_report(game: str, options: MathOptions) -> MathReport:
    """Exact probability and house edge of every wager of "hrd10" or "hrd6" (see `rules.hrd.math`).

    Raises:
        DocumentRefusedError: an option this game does not take (--decks, --distribution), an unknown
            setting, or a paytable that does not validate.
    """
    rules = GAMES.get(game)
    if rules is None:
        raise DocumentRefusedError(
            [Problem("document", f"unknown game {game!r}; known: hrd10, hrd6", "game")]
        )
    problems: list[Problem] = []
    if options.decks is not None:
        problems.append(Problem("options", f"{game} is a dice game; it takes no --decks", "decks"))
    if options.distribution is not None:
        problems.append(
            Problem("options", f"{game} takes no --distribution (its dice are fair)", "distribution")
        )
    settings, p = parse_settings(options.settings)
    problems += p
    paytable: Paytable | None = default_paytable(game)
    if options.paytable is not None:
        paytable, p = parse_paytable(options.paytable, game=game)
        problems += p
    if problems or paytable is None:
        raise DocumentRefusedError(problems)
    m = game_math(rules=rules, paytable=paytable, settings=settings)
    notes = [
        f"Exact enumeration of the {m.first.multisets} multisets of {int(rules.dice)} dice with multinomial "
        "weights; fractions are exact (p/q), ≈ values are rounded.",
        "EV = P(win) x odds - P(lose) per unit staked; house edge = -EV / units staked.",
        f"Settings: {', '.join(f'{k}={v}' for k, v in settings.as_dict().items())}.",
    ]
    for key, value in settings.as_dict().items():
        if key in _READINGS.get(game, ()):
            notes.append(f"Reading {key}={value} ({SETTING_CLAUSES[key]}): {_READING_TEXT[key, value]}.")
    if rules.extra_roll:
        notes.append(
            "Millionaire Row's 593.5(c) dollar payouts are read as odds per $1 "
            "(its maximum wager, 593.2(e)(4))."
        )
    return MathReport(
        game=game,
        title=f"High Roll Dice {game}: exact game math",
        tables=_tables(m),
        data=_data(m),
        notes=tuple(notes),
    )
