"""Lightning Roulette (58 Pa. Code 617b.3): straight wagers on a single-zero wheel with RNG "Lucky Numbers".

After "no more bets" a random number generator picks 1 to 5 Lucky Numbers, each with a payout from the
list in 617b.3(g) (499, 399, 349, 299, 249, 199, 149, 99 or 49 to 1). A winning straight wager on a Lucky
Number is paid its displayed payout (617b.3(e)); any other winning straight wager is paid 29 to 1 (617b.3(f)).
The engine settles straight wagers only: other Roulette wagers are not part of 617b.3.

Settle document (the spin is the number the ball came to rest in, 0..36)::

    {"game": "lightning_roulette",
     "wagers": [{"seat": 1, "kind": "straight", "number": 17, "amount": "1.00"}],
     "lucky_numbers": [{"number": 17, "pays": 499}, {"number": 0, "pays": 49}],
     "spin": 17}

Math (`math_report`): the house edge of a straight wager as a function of the RNG's distribution, read from
a distribution document (see `read_distribution`)::

    {"format": "throwbox.lightning_roulette.distribution/1",
     "lucky_count_weights": {"1": 1, "2": 1, "3": 1, "4": 1, "5": 1},
     "pays_weights": {"49": 10, "99": 5, "149": 3, "199": 2, "249": 1,
                      "299": 1, "349": 1, "399": 1, "499": 1}}

Weights are non-negative integers or exact decimal/fraction strings ("0.25", "1/3"), normalised by their sum.
The model: the RNG draws how many Lucky Numbers (k) from the first distribution, picks k different numbers
uniformly from the 37, and gives each a payout drawn independently from the second. Then, for a straight
wager on any number, with E[k] and E[m] the means of k and of the payout m,

    P(win) = 1/37,  P(win on a Lucky Number) = E[k]/37^2,
    house edge = 1 - (1/37) * (1 + 29 + (E[k]/37) * (E[m] - 29)) = (259 - E[k] * (E[m] - 29)) / 1369.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from rules.games import DocumentRefusedError, MathOptions, MathReport, MathTable, Problem
from rules.side_wagers.common import (
    check_fields,
    fraction_str,
    odds_str,
    pay,
    percent_str,
    read_wagers,
    refuse_if,
    refuse_options,
    seat_totals,
    settlement,
)

GAME = "lightning_roulette"
NUMBERS = range(37)  # a single-zero wheel: 0..36 (617b.3(a))
WHEEL_SIZE = len(NUMBERS)
PERMITTED_PAYS: tuple[int, ...] = (499, 399, 349, 299, 249, 199, 149, 99, 49)  # 617b.3(g), "N to 1"
ORDINARY_PAY = 29  # 617b.3(f): a winning straight not on a Lucky Number
MIN_LUCKY, MAX_LUCKY = 1, 5  # 617b.3(d)
DISTRIBUTION_FORMAT = "throwbox.lightning_roulette.distribution/1"


def _number(value: object, *, field: str, clause: str, problems: list[Problem]) -> int | None:
    """A number on the single-zero layout, 0..36; "00" and anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in NUMBERS:
        problems.append(
            Problem(clause, f"a single-zero wheel has the numbers 0..36 (no 00), not {value!r}", field)
        )
        return None
    return value


def read_lucky_numbers(value: object, problems: list[Problem]) -> dict[int, int] | None:
    """The RNG's draw: 1 to 5 different numbers, each with a payout from 617b.3(g). None if refused."""
    if not isinstance(value, list):
        problems.append(
            Problem("document", '"lucky_numbers" is a list of {"number": n, "pays": m}', "lucky_numbers")
        )
        return None
    ok = True
    if not MIN_LUCKY <= len(value) <= MAX_LUCKY:
        problems.append(
            Problem(
                "617b.3(d)",
                f"the RNG selects between {MIN_LUCKY} and {MAX_LUCKY} Lucky Numbers, not {len(value)}",
                "lucky_numbers",
            )
        )
        ok = False
    draw: dict[int, int] = {}
    seen: set[int] = set()
    for i, entry in enumerate(value):
        where = f"lucky_numbers[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(Problem("document", 'each Lucky Number is {"number": n, "pays": m}', where))
            ok = False
            continue
        number = _number(entry.get("number"), field=f"{where}.number", clause="617b.3(a)", problems=problems)
        pays = entry.get("pays")
        pays_ok = isinstance(pays, int) and not isinstance(pays, bool) and pays in PERMITTED_PAYS
        if not pays_ok:
            listed = ", ".join(str(p) for p in PERMITTED_PAYS)
            problems.append(
                Problem(
                    "617b.3(g)", f"a Lucky Number pays one of {listed} (to 1), not {pays!r}", f"{where}.pays"
                )
            )
            ok = False
        if number is None:
            ok = False
            continue
        if number in seen:
            problems.append(
                Problem(
                    "617b.3(d)", f"{number} is drawn twice; the Lucky Numbers are different numbers", where
                )
            )
            ok = False
        seen.add(number)
        if pays_ok and isinstance(pays, int):
            draw[number] = pays
    return draw if ok else None


def settle_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Settle the straight wagers of one Lightning Roulette spin.

    Raises:
        DocumentRefusedError: every problem found, each naming its clause.
    """
    problems: list[Problem] = []
    check_fields(doc, known=("game", "wagers", "lucky_numbers", "spin"), problems=problems)
    wagers = read_wagers(doc, kinds=("straight",), fields=("number",), problems=problems)
    numbers: dict[int, int] = {}
    for wager in wagers:
        number = _number(
            wager.raw.get("number"), field=f"{wager.field}.number", clause="617b.3(a)", problems=problems
        )
        if number is not None:
            numbers[wager.index] = number
    draw = read_lucky_numbers(doc.get("lucky_numbers"), problems)
    spin = _number(doc.get("spin"), field="spin", clause="617b.3(a)", problems=problems)
    refuse_if(problems)
    if draw is None or spin is None:  # unreachable: a refused part always adds a problem
        raise DocumentRefusedError([Problem("document", "lucky_numbers or spin unreadable", None)])

    rows = []
    for wager in wagers:
        number = numbers[wager.index]
        if number != spin:
            lost = {"lucky": number in draw}
            rows.append(settlement(wager, result="lose", win=Decimal(0), echo={"number": number}, extra=lost))
            continue
        lucky = number in draw
        odds = Fraction(draw[number] if lucky else ORDINARY_PAY)
        clause = "617b.3(e)" if lucky else "617b.3(f)"
        extra: dict[str, Any] = {"lucky": lucky, "odds": odds_str(odds), "clause": clause}
        win = pay(wager.amount, odds)
        rows.append(settlement(wager, result="win", win=win, echo={"number": number}, extra=extra))
    return {
        "game": GAME,
        "spin": spin,
        "lucky_numbers": [{"number": n, "pays": m} for n, m in draw.items()],
        "spin_is_lucky": spin in draw,
        "settlements": rows,
        "seats": seat_totals(wagers, rows),
    }


# ---------------------------------------------------------------- math


def _weight(value: object) -> Fraction:
    if isinstance(value, bool | float):
        raise ValueError(f'write weights as integers or strings like "0.25" or "1/3", not {value!r}')
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return Fraction(text) if "/" in text else Fraction(Decimal(text))
        except (InvalidOperation, ValueError, ZeroDivisionError):
            raise ValueError(f"{value!r} is not a number") from None
    raise ValueError(f"{value!r} is not a number")


def _weights(
    raw: object, *, name: str, allowed: tuple[int, ...], clause: str, problems: list[Problem]
) -> dict[int, Fraction] | None:
    if not isinstance(raw, Mapping) or not raw:
        problems.append(Problem("document", f'"{name}" must be a non-empty object', name))
        return None
    weights: dict[int, Fraction] = {}
    ok = True
    for key, value in raw.items():
        where = f"{name}.{key}"
        try:
            outcome = int(str(key))
        except ValueError:
            problems.append(Problem("document", f"{key!r} is not a whole number", where))
            ok = False
            continue
        if outcome not in allowed:
            listed = ", ".join(str(a) for a in allowed)
            problems.append(Problem(clause, f"{outcome} is not allowed here; allowed: {listed}", where))
            ok = False
            continue
        try:
            weight = _weight(value)
        except ValueError as err:
            problems.append(Problem("document", str(err), where))
            ok = False
            continue
        if weight < 0:
            problems.append(Problem("document", f"a weight cannot be negative ({value!r})", where))
            ok = False
            continue
        weights[outcome] = weights.get(outcome, Fraction(0)) + weight
    total = sum(weights.values(), Fraction(0))
    if ok and total == 0:
        problems.append(Problem("document", "the weights sum to 0", name))
        ok = False
    if not ok:
        return None
    return {k: w / total for k, w in sorted(weights.items()) if w}


def read_distribution(doc: Mapping[str, Any]) -> tuple[dict[int, Fraction], dict[int, Fraction]]:
    """The RNG's distribution: (P(k Lucky Numbers), P(payout m to 1)), exact, each summing to 1.

    Raises:
        DocumentRefusedError: a malformed distribution, or one that puts weight on a count outside 1..5
            (617b.3(d)) or a payout outside the list (617b.3(g)).
    """
    problems: list[Problem] = []
    if not isinstance(doc, Mapping):
        raise DocumentRefusedError([Problem("document", "the distribution must be a JSON object", None)])
    fmt = doc.get("format", DISTRIBUTION_FORMAT)
    if fmt != DISTRIBUTION_FORMAT:
        problems.append(Problem("document", f"unknown distribution format {fmt!r}", "format"))
    unknown = set(doc) - {"format", "lucky_count_weights", "pays_weights", "name", "notes"}
    for key in sorted(unknown):
        problems.append(Problem("document", f"unknown field {key!r}", key))
    counts = _weights(
        doc.get("lucky_count_weights"),
        name="lucky_count_weights",
        allowed=tuple(range(MIN_LUCKY, MAX_LUCKY + 1)),
        clause="617b.3(d)",
        problems=problems,
    )
    pays = _weights(
        doc.get("pays_weights"),
        name="pays_weights",
        allowed=PERMITTED_PAYS,
        clause="617b.3(g)",
        problems=problems,
    )
    refuse_if(problems)
    if counts is None or pays is None:  # unreachable: a refused part always adds a problem
        raise DocumentRefusedError([Problem("document", "unreadable distribution", None)])
    return counts, pays


def house_edge(*, mean_lucky: Fraction, mean_pays: Fraction) -> Fraction:
    """House edge of a straight wager given E[k] Lucky Numbers and mean payout E[m] (to 1)."""
    win = Fraction(1, WHEEL_SIZE)
    lucky_given_win = mean_lucky / WHEEL_SIZE
    mean_pay_on_win = lucky_given_win * mean_pays + (1 - lucky_given_win) * ORDINARY_PAY
    return 1 - win * (1 + mean_pay_on_win)


def math_report(game: str, options: MathOptions) -> MathReport:
    """House edge of a straight wager: per (count, payout) pair, and for a given RNG distribution."""
    refuse_options(game, options, allowed=("distribution",))
    grid_rows = tuple(
        (
            f"{m} to 1",
            *(percent_str(house_edge(mean_lucky=Fraction(k), mean_pays=Fraction(m))) for k in range(1, 6)),
        )
        for m in PERMITTED_PAYS
    )
    grid = MathTable(
        title="House edge of a straight wager if every draw had k Lucky Numbers, all paying m to 1 "
        "(617b.3(d)-(g))",
        columns=("m", *(f"k={k}" for k in range(1, 6))),
        rows=grid_rows,
    )
    data: dict[str, Any] = {
        "game": GAME,
        "wheel": "single zero, 37 numbers",
        "ordinary_pays": f"{ORDINARY_PAY} to 1",
        "permitted_lucky_pays": [f"{m} to 1" for m in PERMITTED_PAYS],
        "formula": "house_edge = (259 - E(k) * (E(m) - 29)) / 1369",
        "grid": {
            f"k={k},m={m}": fraction_str(house_edge(mean_lucky=Fraction(k), mean_pays=Fraction(m)))
            for k in range(1, 6)
            for m in PERMITTED_PAYS
        },
    }
    tables = [grid]
    notes = [
        "A straight wager wins with probability 1/37; a win on a Lucky Number pays its payout, any other "
        "win 29 to 1 (617b.3(e), (f)).",
        "House edge = (259 - E(k) * (E(m) - 29)) / 1369, for an RNG that picks k different numbers uniformly "
        "and gives each an independent payout m; it depends on the distribution only through the means E(k) "
        "and E(m).",
    ]
    if options.distribution is None:
        notes.append("No distribution given: pass one (--distribution FILE) for its exact house edge.")
    else:
        counts, pays = read_distribution(options.distribution)
        mean_lucky = sum((k * p for k, p in counts.items()), Fraction(0))
        mean_pays = sum((m * p for m, p in pays.items()), Fraction(0))
        edge = house_edge(mean_lucky=mean_lucky, mean_pays=mean_pays)
        lucky_win = Fraction(1, WHEEL_SIZE) * mean_lucky / WHEEL_SIZE
        outcome_rows = [
            ("win, not a Lucky Number", "29 to 1", fraction_str(Fraction(1, WHEEL_SIZE) - lucky_win)),
            *(
                (f"win on a Lucky Number paying {m} to 1", f"{m} to 1", fraction_str(lucky_win * p))
                for m, p in pays.items()
            ),
            ("lose", "loses", fraction_str(Fraction(WHEEL_SIZE - 1, WHEEL_SIZE))),
        ]
        tables.append(
            MathTable(
                title=f"The given RNG distribution: house edge {percent_str(edge)} ({fraction_str(edge)}; "
                "617b.3(d)-(g))",
                columns=("outcome of a straight wager", "pays", "probability"),
                rows=tuple(outcome_rows),
            )
        )
        tables.append(
            MathTable(
                title="The distribution as read (normalised)",
                columns=("quantity", "value", "probability"),
                rows=(
                    *((f"Lucky Numbers drawn: {k}", str(k), fraction_str(p)) for k, p in counts.items()),
                    *(
                        (f"a Lucky Number's payout: {m} to 1", str(m), fraction_str(p))
                        for m, p in pays.items()
                    ),
                ),
            )
        )
        data["distribution"] = {
            "lucky_count": {str(k): fraction_str(p) for k, p in counts.items()},
            "pays": {str(m): fraction_str(p) for m, p in pays.items()},
            "mean_lucky_count": fraction_str(mean_lucky),
            "mean_pays": fraction_str(mean_pays),
            "win_on_lucky": fraction_str(lucky_win),
            "house_edge": fraction_str(edge),
            "house_edge_percent": percent_str(edge),
        }
    return MathReport(
        game=GAME,
        title="Lightning Roulette straight wager (617b.3)",
        tables=tuple(tables),
        data=data,
        notes=tuple(notes),
    )
