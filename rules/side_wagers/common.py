"""What the four side-wager engines share: money, odds, wagers, settings, seat totals, fraction printing.

Every reader here appends `Problem`s to a list instead of raising at the first one, so a refused document
lists every problem at once (the engines raise `DocumentRefusedError` with the whole list at the end).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from rules.cards import Card, CardError, Shoe, parse_card
from rules.games import DocumentRefusedError, MathOptions, Problem
from rules.money import pay_cents

CENT = Decimal("0.01")


# ---------------------------------------------------------------- money and odds


def parse_amount(value: object, *, field: str, problems: list[Problem]) -> Decimal | None:
    """A wager amount: a decimal string ("5.00"), an integer or a Decimal; positive, whole cents. None if
    refused (a float is refused: money is never a float)."""
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        kind = "a float" if isinstance(value, float) else repr(value)
        problems.append(Problem("document", f'an amount is a decimal string like "5.00", not {kind}', field))
        return None
    try:
        # A Decimal comes from JSON parsed with parse_float=Decimal (the CLI and the API do): exact, so fine.
        amount = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation:
        problems.append(Problem("document", f"{value!r} is not a decimal amount", field))
        return None
    if not amount.is_finite() or amount <= 0:
        problems.append(Problem("document", f"an amount must be positive, not {value!r}", field))
        return None
    if amount != amount.quantize(CENT):
        problems.append(Problem("document", f"{value!r} has fractions of a cent", field))
        return None
    return amount


def money_str(amount: Decimal) -> str:
    """Decimal money as a string with at least two decimals ("12.5" -> "12.50"; "0.125" stays)."""
    if amount == amount.quantize(CENT):
        return str(amount.quantize(CENT))
    return str(amount.normalize())


def pay(amount: Decimal, odds: Fraction) -> Decimal:
    """Net win of `amount` at `odds` to 1, exact when it is a whole number of cents, else rounded down.

    Every table in the regulations (29, 49..499, 25, 2.5, 80, 8, 4, 3, 2, 15, 50, 250 to 1) gives whole
    cents on whole-cent wagers; only a loaded paytable with odds like "7 to 3" can give less than a cent,
    and a casino pays no fractions of a cent, so the remainder is dropped (rounded down).
    """
    return pay_cents(amount, odds)


def odds_str(odds: Fraction) -> str:
    """Fraction odds as the regulations write them: 25 -> "25 to 1", 5/2 -> "2.5 to 1", 6/5 -> "6 to 5"."""
    if odds.denominator == 1:
        return f"{odds.numerator} to 1"
    as_decimal = Decimal(odds.numerator) / Decimal(odds.denominator)
    if Fraction(as_decimal) == odds:
        return f"{as_decimal.normalize()} to 1"
    return f"{odds.numerator} to {odds.denominator}"


def parse_odds(value: object) -> Fraction:
    """Odds written "25 to 1", "2.5 to 1", "6 to 5", or a bare number meaning "to 1".

    Raises:
        ValueError: not odds, or not positive.
    """
    if isinstance(value, bool | float):
        raise ValueError(f'write odds as a string like "25 to 1", not {value!r}')
    if isinstance(value, int):
        left, right = Fraction(value), Fraction(1)
    elif isinstance(value, str):
        parts = value.lower().split(" to ")
        if len(parts) == 1:
            parts.append("1")
        if len(parts) != 2:
            raise ValueError(f'{value!r} is not odds like "25 to 1"')
        try:
            left, right = (Fraction(Decimal(part.strip())) for part in parts)
        except (InvalidOperation, ValueError):
            raise ValueError(f'{value!r} is not odds like "25 to 1"') from None
    else:
        raise ValueError(f'{value!r} is not odds like "25 to 1"')
    if left <= 0 or right <= 0:
        raise ValueError(f"odds must be positive, not {value!r}")
    return left / right


# ---------------------------------------------------------------- fractions for math reports


def fraction_str(value: Fraction) -> str:
    """Exact fraction as "p/q" (whole numbers as "p/1", so programs always split on "/")."""
    return f"{value.numerator}/{value.denominator}"


def percent_str(value: Fraction, digits: int = 4) -> str:
    """A fraction as a percentage rounded for people, e.g. 239/1369 -> "17.4580%"; a probability too small
    to show in `digits` decimals is "<0.0001%" (the exact fraction sits next to it)."""
    scaled = Decimal(value.numerator) * 100 / Decimal(value.denominator)
    step = Decimal(1).scaleb(-digits)
    if 0 < scaled < step:
        return f"<{step}%"
    return f"{scaled.quantize(step)}%"


def refuse_options(game: str, options: MathOptions, *, allowed: Iterable[str]) -> None:
    """Refuse math options this game does not read (a deck count for roulette, a distribution for cards,
    settings for a game whose math has none).

    Raises:
        DocumentRefusedError: an option that does not apply to `game` was given.
    """
    allowed_set = set(allowed)
    given = {
        "paytable": options.paytable is not None,
        "decks": options.decks is not None,
        "distribution": options.distribution is not None,
        "settings": bool(options.settings),
    }
    problems = [
        Problem("document", f"{game} takes no {name} option", name)
        for name, present in given.items()
        if present and name not in allowed_set
    ]
    if problems:
        raise DocumentRefusedError(problems)


# ---------------------------------------------------------------- wagers and seats


@dataclass(frozen=True)
class Wager:
    """One wager of a settle document, as read: its place in the list, seat, kind, amount and raw fields."""

    index: int
    seat: int
    kind: str
    amount: Decimal
    raw: Mapping[str, Any]

    @property
    def field(self) -> str:
        """Where the wager sits in the document, for error messages."""
        return f"wagers[{self.index}]"


def read_wagers(
    doc: Mapping[str, Any], *, kinds: Sequence[str], fields: Sequence[str] = (), problems: list[Problem]
) -> list[Wager]:
    """The document's "wagers": a non-empty list of {"seat": int >= 1, "kind": one of `kinds`, "amount"},
    plus the game's own `fields`; any other field is refused (a typo is never silently ignored)."""
    raw_list = doc.get("wagers")
    if not isinstance(raw_list, list) or not raw_list:
        problems.append(Problem("document", '"wagers" must be a non-empty list', "wagers"))
        return []
    wagers: list[Wager] = []
    for index, raw in enumerate(raw_list):
        where = f"wagers[{index}]"
        if not isinstance(raw, Mapping):
            problems.append(Problem("document", "each wager is a JSON object", where))
            continue
        known = ("seat", "kind", "amount", *fields)
        for name in raw:
            if name not in known:
                problems.append(
                    Problem(
                        "document",
                        f"unknown wager field {name!r}; known: {', '.join(known)}",
                        f"{where}.{name}",
                    )
                )
        seat = raw.get("seat")
        if isinstance(seat, bool) or not isinstance(seat, int) or seat < 1:
            problems.append(
                Problem("document", f"seat must be a whole number >= 1, not {seat!r}", f"{where}.seat")
            )
            seat = None
        kind = raw.get("kind")
        if not isinstance(kind, str) or kind not in kinds:
            problems.append(
                Problem("document", f"kind must be one of {', '.join(kinds)}, not {kind!r}", f"{where}.kind")
            )
            kind = None
        amount = parse_amount(raw.get("amount"), field=f"{where}.amount", problems=problems)
        if seat is not None and kind is not None and amount is not None:
            wagers.append(Wager(index=index, seat=seat, kind=kind, amount=amount, raw=raw))
    return wagers


def settlement(
    wager: Wager,
    *,
    result: str,
    win: Decimal,
    echo: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One settlement row: seat, kind, the wager's own fields (`echo`, as read), amount, then result ("win"
    or "lose"), the net "win", and what decided it (`extra`)."""
    row: dict[str, Any] = {"seat": wager.seat, "kind": wager.kind, **(echo or {})}
    row["amount"] = money_str(wager.amount)
    row["result"] = result
    row["win"] = money_str(win)
    if extra:
        row.update(extra)
    return row


def seat_totals(
    wagers: Sequence[Wager], settlements: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, str]]:
    """Per seat: "staked" (amounts), "won" (net wins), "lost" (stakes lost), "net" (won - lost)."""
    totals: dict[int, dict[str, Decimal]] = {}
    for wager, row in zip(wagers, settlements, strict=True):
        seat = totals.setdefault(wager.seat, {"staked": Decimal(0), "won": Decimal(0), "lost": Decimal(0)})
        seat["staked"] += wager.amount
        seat["won"] += Decimal(row["win"])
        if row["result"] == "lose":
            seat["lost"] += wager.amount
    return {
        str(seat): {
            "staked": money_str(t["staked"]),
            "won": money_str(t["won"]),
            "lost": money_str(t["lost"]),
            "net": money_str(t["won"] - t["lost"]),
        }
        for seat, t in sorted(totals.items())
    }


# ---------------------------------------------------------------- settings, decks, cards


def read_settings(
    raw: object, *, defaults: Mapping[str, Any], choices: Mapping[str, Sequence[Any]], problems: list[Problem]
) -> dict[str, Any]:
    """Interpretation settings: `defaults` overridden by `raw`; unknown names and values outside `choices`
    are problems (a setting is never guessed)."""
    settings = dict(defaults)
    if raw is None:
        return settings
    if not isinstance(raw, Mapping):
        problems.append(Problem("document", '"settings" must be a JSON object', "settings"))
        return settings
    for name, value in raw.items():
        if name not in defaults:
            known = ", ".join(defaults) or "none"
            problems.append(
                Problem("document", f"unknown setting {name!r}; known: {known}", f"settings.{name}")
            )
            continue
        allowed = choices[name]
        if isinstance(value, str) and all(isinstance(c, bool) for c in allowed):
            # `throwbox math --setting KEY=VALUE` passes every value as a string.
            value = {"true": True, "false": False}.get(value.strip().lower(), value)
        if not any(value == choice and type(value) is type(choice) for choice in allowed):
            listed = ", ".join(repr(c) for c in allowed)
            problems.append(
                Problem(
                    "document", f"setting {name!r} must be one of {listed}, not {value!r}", f"settings.{name}"
                )
            )
            continue
        settings[name] = value
    return settings


def read_decks(value: object, *, allowed: Sequence[int], clause: str, problems: list[Problem]) -> int | None:
    """The number of decks in the shoe, one of `allowed` (the regulation's list, cited as `clause`)."""
    listed = ", ".join(str(d) for d in allowed)
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(
            Problem("document", f'"decks" must be a whole number ({listed}), not {value!r}', "decks")
        )
        return None
    if value not in allowed:
        problems.append(Problem(clause, f"this wager is played with {listed} decks, not {value}", "decks"))
        return None
    return value


def math_decks(value: int | None, *, default: int, allowed: Sequence[int], game: str) -> int:
    """The deck count of a math report: `default` when not given, else one of `allowed`.

    Raises:
        DocumentRefusedError: a deck count the wager is not played with.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        listed = ", ".join(str(d) for d in allowed)
        raise DocumentRefusedError(
            [Problem("document", f"{game} math supports {listed} decks, not {value!r}", "decks")]
        )
    return value


def read_cards(
    value: object, *, field: str, count: int | None, problems: list[Problem], clause: str
) -> list[Card] | None:
    """A list of card strings; `count` cards exactly when given (a wrong count cites `clause`)."""
    if not isinstance(value, list):
        problems.append(
            Problem("document", f'cards are a list of strings like ["KS", "QS"], not {value!r}', field)
        )
        return None
    cards: list[Card] = []
    ok = True
    for i, text in enumerate(value):
        try:
            cards.append(parse_card(text))
        except CardError as err:
            problems.append(Problem("document", str(err), f"{field}[{i}]"))
            ok = False
    if count is not None and len(value) != count:
        problems.append(Problem(clause, f"expected exactly {count} cards, got {len(value)}", field))
        ok = False
    return cards if ok else None


def check_shoe(cards: Iterable[Card], *, decks: int, problems: list[Problem]) -> None:
    """An impossible set of cards: some card seen more often than the shoe holds it."""
    try:
        Shoe(decks).check(cards)
    except CardError as err:
        problems.append(Problem("document", f"impossible cards: {err}", "cards"))


def check_fields(doc: Mapping[str, Any], *, known: Sequence[str], problems: list[Problem]) -> None:
    """Refuse top-level fields the game does not read (a misspelt "setings" is never silently ignored)."""
    for name in doc:
        if name not in known:
            problems.append(
                Problem("document", f"unknown field {name!r}; known: {', '.join(known)}", str(name))
            )


def refuse_if(problems: list[Problem]) -> None:
    """Raise `DocumentRefusedError` with every problem found, if there is any."""
    if problems:
        raise DocumentRefusedError(problems)


def one_per_seat(
    wagers: Sequence[Wager],
    *,
    key: Callable[[Wager], object],
    clause: str,
    what: str,
    problems: list[Problem],
) -> None:
    """Refuse a second wager with the same `key` (e.g. seat, or seat and hand): the layout has one area."""
    seen: dict[object, int] = {}
    for wager in wagers:
        k = key(wager)
        if k in seen:
            problems.append(Problem(clause, f"a second {what} (the first is wagers[{seen[k]}])", wager.field))
        else:
            seen[k] = wager.index
