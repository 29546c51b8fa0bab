"""Money, odds and wager reading shared by the side-wager engines."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules import games
from rules.games import DocumentRefusedError, Problem
from rules.side_wagers import common
from rules.side_wagers.common import money_str, odds_str, parse_amount, parse_odds, pay, read_wagers


@pytest.mark.parametrize(
    ("value", "expected"),
    [("5.00", Decimal("5.00")), ("0.01", Decimal("0.01")), (7, Decimal(7)), (" 12.5 ", Decimal("12.5"))],
)
def test_parse_amount_accepts(value: object, expected: Decimal) -> None:
    problems: list[Problem] = []
    assert parse_amount(value, field="x", problems=problems) == expected
    assert problems == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (5.0, "not a float"),  # money is never a float
        ("abc", "not a decimal amount"),
        ("0", "must be positive"),
        ("-5.00", "must be positive"),
        ("NaN", "must be positive"),
        ("1.005", "fractions of a cent"),
        (True, "decimal string"),
        (None, "decimal string"),
    ],
)
def test_parse_amount_refuses(value: object, message: str) -> None:
    problems: list[Problem] = []
    assert parse_amount(value, field="wagers[0].amount", problems=problems) is None
    assert len(problems) == 1
    assert message in problems[0].message
    assert problems[0].field == "wagers[0].amount"


@pytest.mark.parametrize(
    ("text", "odds"),
    [
        ("25 to 1", Fraction(25)),
        ("2.5 to 1", Fraction(5, 2)),
        ("6 to 5", Fraction(6, 5)),
        (3, Fraction(3)),
        ("80", Fraction(80)),
    ],
)
def test_parse_odds(text: object, odds: Fraction) -> None:
    assert parse_odds(text) == odds


@pytest.mark.parametrize("text", ["", "to 1", "x to 1", "0 to 1", "-2 to 1", 2.5, "1 to 2 to 3", None])
def test_parse_odds_refuses(text: object) -> None:
    with pytest.raises(ValueError, match="odds"):
        parse_odds(text)


@pytest.mark.parametrize(
    ("odds", "text"),
    [
        (Fraction(25), "25 to 1"),
        (Fraction(5, 2), "2.5 to 1"),
        (Fraction(6, 5), "1.2 to 1"),
        (Fraction(7, 3), "7 to 3"),
    ],
)
def test_odds_str(odds: Fraction, text: str) -> None:
    assert odds_str(odds) == text
    assert parse_odds(text) == odds


def test_pay_is_exact_in_cents_and_rounds_down_a_fraction_of_a_cent() -> None:
    assert pay(Decimal("5.00"), Fraction(5, 2)) == Decimal("12.50")
    assert pay(Decimal("0.01"), Fraction(5, 2)) == Decimal("0.02")  # 0.025: half a cent dropped
    assert pay(Decimal("1.00"), Fraction(7, 3)) == Decimal("2.33")


@given(
    cents=st.integers(min_value=1, max_value=10_000_000),
    odds=st.sampled_from(
        [Fraction(x) for x in (2, 3, 4, 8, 15, 25, 29, 49, 50, 80, 99, 250, 499)] + [Fraction(5, 2)]
    ),
)
@settings(max_examples=200, deadline=None)
def test_pay_never_pays_more_than_the_odds(cents: int, odds: Fraction) -> None:
    amount = Decimal(cents) / 100
    won = pay(amount, odds)
    assert Fraction(won) <= Fraction(amount) * odds < Fraction(won) + Fraction(1, 100)
    assert won == won.quantize(Decimal("0.01"))


def test_money_str() -> None:
    assert money_str(Decimal("12.5")) == "12.50"
    assert money_str(Decimal("0")) == "0.00"
    assert money_str(Decimal("-3")) == "-3.00"


def test_read_wagers_lists_every_problem() -> None:
    problems: list[Problem] = []
    doc = {
        "wagers": [
            {"seat": 0, "kind": "straight", "amount": "1.00"},  # seat 0
            {"seat": 1, "kind": "split", "amount": "1.00"},  # unknown kind
            {"seat": 1, "kind": "straight", "amount": 1.5},  # float amount
            "not an object",
            {"seat": 2, "kind": "straight", "amount": "2.00"},  # fine
        ]
    }
    wagers = read_wagers(doc, kinds=("straight",), problems=problems)
    assert [w.index for w in wagers] == [4]
    assert [p.field for p in problems] == [
        "wagers[0].seat",
        "wagers[1].kind",
        "wagers[2].amount",
        "wagers[3]",
    ]


@pytest.mark.parametrize("wagers", [None, [], {}, "x"])
def test_read_wagers_needs_a_list(wagers: object) -> None:
    problems: list[Problem] = []
    assert read_wagers({"wagers": wagers}, kinds=("straight",), problems=problems) == []
    assert problems[0].field == "wagers"


def test_unknown_wager_fields_are_refused_not_ignored() -> None:
    problems: list[Problem] = []
    doc = {"wagers": [{"seat": 1, "kind": "straight", "number": 5, "amont": "1.00", "amount": "1.00"}]}
    wagers = read_wagers(doc, kinds=("straight",), fields=("number",), problems=problems)
    assert [(p.field, p.message.split(";")[0]) for p in problems] == [
        ("wagers[0].amont", "unknown wager field 'amont'")
    ]
    assert len(wagers) == 1  # the rest of the wager is still read, so every problem is listed


def test_decimal_amounts_from_json_numbers_are_exact_and_accepted() -> None:
    problems: list[Problem] = []
    assert parse_amount(Decimal("5.00"), field="x", problems=problems) == Decimal("5.00")
    assert problems == []


_JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 40)
    | st.floats(allow_nan=True)
    | st.text(max_size=4)
    | st.sampled_from(["KS", "10H", "AS", "JS", "5.00", "8+", "2 to 1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
_EXAMPLES = Path(common.__file__).parent / "examples"
_GAMES = ("lightning_roulette", "majestic_match", "buster_blackjack", "upcard_luck")


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*path, index))
    return out


@given(game=st.sampled_from(_GAMES), data=st.data())
@settings(max_examples=200, deadline=None)
def test_bad_input_is_refused_never_a_crash(game: str, data: st.DataObject) -> None:
    """Replace parts of a valid example with junk: the answer is a settlement or a refusal, nothing else."""
    doc = json.loads((_EXAMPLES / f"{game}.json").read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)))
        target = doc
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = data.draw(_JUNK)
    try:
        answer = games.settle(doc)
    except DocumentRefusedError as err:
        assert err.problems and all(p.clause and p.message for p in err.problems)
    else:
        json.dumps(answer)  # always JSON-ready
