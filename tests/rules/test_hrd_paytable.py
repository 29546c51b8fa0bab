"""Paytables: the regulation defaults, the JSON file format and its errors, exact odds."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from rules.hrd.dice import NO_MATCH
from rules.hrd.paytable import REGULATION_TABLES, default_paytable, parse_odds, parse_paytable

PAYTABLES = Path(__file__).resolve().parents[2] / "rules" / "hrd" / "paytables"


@pytest.mark.parametrize(
    ("text", "win"),
    [
        ("3 to 5", Fraction(3, 5)),
        ("1 to 2", Fraction(1, 2)),
        ("2.5 to 1", Fraction(5, 2)),
        ("5,000 to 1", Fraction(5000)),
        ("1,000,000 to 1", Fraction(1_000_000)),
    ],
)
def test_odds_are_exact_fractions(text: str, win: Fraction) -> None:
    assert parse_odds(text).win == win


@pytest.mark.parametrize("text", ["3:5", "3 to 0", "0 to 1", "to 1", "three to five", "1,,0 to 1", ""])
def test_bad_odds_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_odds(text)


def test_593_5_regulation_table_ten_dice() -> None:
    t = default_paytable("hrd10")
    assert {f: o.win for f, o in t.pip_street.items()} == {2: 6, 3: 6, 4: 5, 5: 4, 6: 4, 1: 3}
    assert {n: o.win for n, o in t.like_kind.items()} == {
        8: 5000,
        7: 400,
        6: 30,
        5: 4,
        4: 1,
        3: Fraction(3, 5),
        2: 12,
    }
    assert {n: o.win for n, o in t.millionaire_row.items()} == {10: 1_000_000, 9: 50_000}
    assert {n: o.win for n, o in t.extra_roll.items()} == {8: 50, 7: 10, 6: 4, 5: 2, 4: 1, 3: 8}


def test_675a_6_j_k_regulation_table_six_dice() -> None:
    t = default_paytable("hrd6")
    assert {f: o.win for f, o in t.pip_street.items()} == {2: 8, 3: 6, 4: 5, 5: 4, 6: 3, 1: 2}
    assert {n: o.win for n, o in t.like_kind.items()} == {
        6: 6000,
        5: 200,
        4: 15,
        3: 2,
        2: Fraction(1, 2),
        NO_MATCH: 60,
    }
    assert not t.extra_roll and not t.millionaire_row


@pytest.mark.parametrize("game", ["hrd10", "hrd6"])
def test_shipped_regulation_files_equal_the_built_in_tables(game: str) -> None:
    raw = json.loads((PAYTABLES / f"{game}-regulation.json").read_text())
    assert raw == REGULATION_TABLES[game]
    table, problems = parse_paytable(raw, game=game)
    assert problems == [] and table is not None


def test_example_submission_file_loads_with_its_own_odds() -> None:
    raw = json.loads((PAYTABLES / "hrd10-example-submission.json").read_text())
    table, problems = parse_paytable(raw, game="hrd10")
    assert problems == [] and table is not None
    assert table.like_kind[3].win == Fraction(1, 2)
    assert table.pip_street[1].win == Fraction(5, 2)


def test_paytable_errors_name_the_table_they_replace() -> None:
    raw = json.loads(json.dumps(REGULATION_TABLES["hrd10"]))
    raw["like_kind"]["3"] = "3 by 5"
    del raw["extra_roll"]["8"]
    raw["pip_street"]["7"] = "1 to 1"
    raw["jackpot"] = {}
    _, problems = parse_paytable(raw, game="hrd10")
    assert [(p.clause, p.field) for p in problems] == [
        ("paytable", "paytable.jackpot"),
        ("593.5(a)", "paytable.pip_street.7"),
        ("593.5(b)", "paytable.like_kind.3"),
        ("593.5(d)", "paytable.extra_roll.8"),
    ]


def test_odds_beyond_a_billion_to_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at most"):
        parse_odds("1,000,000,001 to 1")
