"""The side wagers through the generic command line: `throwbox math GAME ...` and `throwbox settle DOC`."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from api.cli import app
from rules import games
from rules.side_wagers import common

EXAMPLES = Path(common.__file__).parent / "examples"
GAMES = ("lightning_roulette", "majestic_match", "buster_blackjack", "upcard_luck")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def math_json(*args: str) -> dict[str, Any]:
    code, out, err = run("math", *args, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def test_math_majestic_match_8_decks_json() -> None:
    data = math_json("majestic_match", "--decks", "8")
    pairs = comb(416, 2)
    assert Fraction(data["probabilities"]["royal_match"]) == Fraction(4 * 64, pairs)
    assert data["probability_sum"] == "1/1"
    assert (
        data["house_edge"]
        == games.math_report("majestic_match", games.MathOptions(decks=8)).data["house_edge"]
    )


def test_math_upcard_luck_reads_settings_from_the_command_line() -> None:
    default = math_json("upcard_luck", "--decks", "6")
    literal_8 = math_json("upcard_luck", "--decks", "6", "--setting", "ace_seven_is_soft_18=false")
    assert default["settings"]["ace_seven_is_soft_18"] is True
    assert literal_8["settings"]["ace_seven_is_soft_18"] is False
    assert Fraction(literal_8["house_edge"]) > Fraction(default["house_edge"])  # A-7 no longer wins


def test_math_lightning_roulette_with_a_distribution_file() -> None:
    data = math_json(
        "lightning_roulette", "--distribution", str(EXAMPLES / "lightning_roulette_distribution.json")
    )
    assert data["distribution"]["house_edge"] == "1/37"


def test_math_buster_blackjack_with_a_paytable_file() -> None:
    data = math_json(
        "buster_blackjack", "--decks", "8", "--paytable", str(EXAMPLES / "buster_blackjack_paytable.json")
    )
    assert set(data["house_edge"]) == {"s17", "h17"}
    assert data["rules"]["s17"]["probability_sum"] == "1/1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("majestic_match", "--decks", "7"), "supports 6, 8 decks"),
        (("upcard_luck", "--decks", "1"), "supports 4, 6, 8 decks"),
        (("buster_blackjack", "--decks", "2"), "supports 1, 4, 6, 8 decks"),
        (("lightning_roulette", "--decks", "6"), "takes no decks"),
        (("upcard_luck", "--setting", "soft_hand_total=best"), "soft_hand_total"),
        (("majestic_match", "--setting", "x=1"), "takes no settings"),
        (("buster_blackjack", "--setting", "dealer_hits_soft_17=true"), "takes no settings"),
    ],
)
def test_math_refusals_exit_2_with_the_reason(args: tuple[str, ...], message: str) -> None:
    code, _, err = run("math", *args)
    assert code == 2
    assert message in err


@pytest.mark.parametrize("game", GAMES)
def test_math_tables_print(game: str) -> None:
    code, out, err = run("math", game)
    assert code == 0, err
    assert "/" in out  # exact fractions


@pytest.mark.parametrize("game", GAMES)
def test_settle_example_json_equals_the_engine(game: str) -> None:
    path = EXAMPLES / f"{game}.json"
    code, out, err = run("settle", str(path), "--json")
    assert code == 0, err
    assert json.loads(out) == games.settle(json.loads(path.read_text()))


def test_settle_refused_document_exits_2_listing_clauses(tmp_path: Path) -> None:
    doc = json.loads((EXAMPLES / "lightning_roulette.json").read_text())
    doc["lucky_numbers"] = []
    doc["spin"] = 37
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run("settle", str(path), "--json")
    assert code == 2
    assert [p["clause"] for p in json.loads(out)["detail"]] == ["617b.3(d)", "617b.3(a)"]


def test_settle_accepts_json_numbers_as_exact_decimals(tmp_path: Path) -> None:
    """The CLI parses JSON numbers as Decimal: an amount written 5.00 (a number) is exact, so it is taken."""
    text = (EXAMPLES / "majestic_match.json").read_text().replace('"10.00"', "10.00")
    path = tmp_path / "numbers.json"
    path.write_text(text)
    code, out, err = run("settle", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["settlements"][0]["win"] == "250.00"
