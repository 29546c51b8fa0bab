"""`throwbox settle` and `throwbox math`: exit codes, JSON output, refusals listed by clause."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from api.cli import app
from api.routes.settle import HRD10_EXAMPLE
from rules.games import settle

PAYTABLES = Path(__file__).resolve().parents[2] / "rules" / "hrd" / "paytables"
runner = CliRunner()


def write(tmp_path: Path, doc: Any, name: str = "round.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_settle_json_equals_the_calculator(tmp_path: Path) -> None:
    result = runner.invoke(app, ["settle", str(write(tmp_path, HRD10_EXAMPLE)), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == settle(HRD10_EXAMPLE)


def test_settle_tables_for_people(tmp_path: Path) -> None:
    result = runner.invoke(app, ["settle", str(write(tmp_path, HRD10_EXAMPLE))])
    assert result.exit_code == 0, result.output
    assert "winner 5, match count 4" in result.stdout
    assert "final count 6" in result.stdout
    assert "collected" in result.stdout


def test_settle_refusal_exits_2_with_every_problem_by_clause(tmp_path: Path) -> None:
    doc = dict(HRD10_EXAMPLE, wagers=[{"seat": 1, "kind": "like_kind", "count": 9, "amount": "5.00"}])
    path = write(tmp_path, doc)
    result = runner.invoke(app, ["settle", str(path)])
    assert result.exit_code == 2
    assert "593.1(b)(2)(i) [wagers[0].count]" in result.stderr
    assert "593.2(e)(1) [wagers[0]]" in result.stderr
    assert "593.4(g) [rolls[1]]" in result.stderr  # no Extra Roll wager, yet a second roll
    as_json = runner.invoke(app, ["settle", str(path), "--json"])
    assert as_json.exit_code == 2
    clauses = [p["clause"] for p in json.loads(as_json.stdout)["detail"]]
    assert clauses == ["593.1(b)(2)(i)", "593.2(e)(1)", "593.4(g)"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),  # no such file
        ("{oops", "is not JSON"),
    ],
)
def test_settle_unreadable_document_exits_2(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "missing.json" if content is None else write(tmp_path, content)
    result = runner.invoke(app, ["settle", str(path)])
    assert result.exit_code == 2
    assert message in result.stderr


def test_math_json_is_exact_and_sums_to_one() -> None:
    result = runner.invoke(app, ["math", "hrd10", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["data"]
    winner = sum(Fraction(p) for p in data["first_roll"]["winner"].values())
    counts = sum(Fraction(p) for p in data["first_roll"]["match_count"].values())
    assert winner + Fraction(data["first_roll"]["no_winner"]) == 1
    assert counts == 1
    for dist in data["extra_roll"]["final_count_given_first"].values():
        assert sum(Fraction(p) for p in dist.values()) == 1
    for line in data["wagers"]:
        p, q = line["probability"].split("/")  # written exactly as p/q
        assert int(q) > 0 and int(p) >= 0
        assert Fraction(line["house_edge"]) == -Fraction(line["expected_value"])


def test_math_tables_for_people() -> None:
    result = runner.invoke(app, ["math", "hrd6"])
    assert result.exit_code == 0, result.output
    assert "5/324" in result.stdout  # no match
    assert "house edge %" in result.stdout


def test_math_paytable_file_and_settings() -> None:
    paytable = PAYTABLES / "hrd10-example-submission.json"
    result = runner.invoke(
        app,
        ["math", "hrd10", "--paytable", str(paytable), "--setting", "extra_roll_reach=one_circle", "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["data"]
    assert data["settings"]["extra_roll_reach"] == "one_circle"
    three = next(x for x in data["wagers"] if x["kind"] == "like_kind" and x["spot"] == "3")
    assert three["pays"] == "1 to 2"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["math", "hrd10", "--decks", "6"], "takes no --decks"),
        (["math", "hrd6", "--setting", "colour=red"], "unknown setting 'colour'"),
        (["math", "hrd6", "--setting", "no_equals"], "KEY=VALUE"),
        (["math", "poker"], "unknown game 'poker'"),
        (["math", "hrd6", "--paytable", "/nonexistent/paytable.json"], "cannot read"),
    ],
)
def test_math_refuses_with_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_math_refuses_a_paytable_of_the_other_game() -> None:
    result = runner.invoke(app, ["math", "hrd6", "--paytable", str(PAYTABLES / "hrd10-regulation.json")])
    assert result.exit_code == 2
    assert "this paytable is for 'hrd10', not 'hrd6'" in result.stderr


def test_console_script_exit_code_from_a_real_process(tmp_path: Path) -> None:
    bad = write(tmp_path, {"game": "hrd6", "wagers": [], "rolls": [[1, 2, 3]]})
    proc = subprocess.run(
        [sys.executable, "-c", "from api.cli import main; main()", "settle", str(bad), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["detail"][0]["clause"] == "675a.6(e)"


def test_settle_reads_standard_input() -> None:
    result = runner.invoke(app, ["settle", "-", "--json"], input=json.dumps(HRD10_EXAMPLE))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["extra_roll"]["final_count"] == 6


def test_math_is_generic_over_every_registered_game() -> None:
    from rules.games import game_ids

    for game in game_ids():
        result = runner.invoke(app, ["math", game, "--json"])
        assert result.exit_code == 0, (game, result.output)
        assert json.loads(result.stdout)["game"] == game


def test_settle_tables_work_for_any_game_shape(capsys: pytest.CaptureFixture[str]) -> None:
    from api.cli.settle import _print_answer

    answer = {
        "game": "some_card_game",
        "dealer_upcard": "6D",
        "settlements": [
            {
                "seat": 1,
                "kind": "side",
                "amount": "5.00",
                "result": "win",
                "win": "15.00",
                "hand": {"cards": ["AS"]},
            },
            {"seat": 2, "kind": "side", "amount": "1.00", "result": "lose", "win": "0.00", "outcome": "bust"},
        ],
        "seats": {"1": {"staked": "5.00", "net": "15.00"}},
    }
    _print_answer(answer)
    out = capsys.readouterr().out
    assert "dealer_upcard 6D" in out
    assert '{"cards":["AS"]}' in out
    assert "bust" in out
    assert "15.00" in out
