"""`throwbox settle --explain` and `throwbox math` name the clause behind each line and figure."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from api.cli import app
from rules.clauses import cited_in_text

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
MAP_TEXT = (Path(__file__).resolve().parents[2] / "docs" / "regulations.md").read_text(encoding="utf-8")
MAP_IDS = {m.group(1) for m in re.finditer(r"^\| (\d{3}[a-z]?\.\d+\S*) \|", MAP_TEXT, re.MULTILINE)}

# A round with every High Roll Dice wager: Pip Street (won and lost), Like Kind (won on roll one, lost with
# and without an Extra Roll, won on the Extra Roll), an Extra Roll and a Millionaire Row.
ROUND: dict[str, Any] = {
    "game": "hrd10",
    "wagers": [
        {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
        {"seat": 1, "kind": "pip_street", "face": 2, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 3, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 4, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
        {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
        {"seat": 2, "kind": "pip_street", "face": 1, "amount": "2.00"},
        {"seat": 2, "kind": "like_kind", "count": 5, "amount": "2.00"},
        {"seat": 2, "kind": "millionaire_row", "count": 9, "amount": "1.00"},
    ],
    "rolls": [[5, 5, 5, 5, 6, 6, 6, 1, 1, 4], [5, 5, 2, 3, 4, 6]],
}
EXPECTED_CLAUSES = [
    "593.5(a)",  # Pip Street on the 5 wins
    "593.4(f)(1)",  # Pip Street on the 2 is collected
    "593.4(f)(2)(ii)",  # three of a kind cannot win any more: collected though an Extra Roll was bought
    "593.5(b)",  # four of a kind thrown: paid on roll one
    "593.5(d)",  # six of a kind on the Extra Roll: 4 + 2 new matches
    "593.4(a)",  # the Extra Roll stake, collected at no more bets
    "593.4(f)(1)",
    "593.4(f)(2)(i)",  # seat 2 bought no Extra Roll: the five circle loses on roll one
    "593.4(f)(3)",  # Millionaire Row on nine: not thrown
]


def test_593_4_settle_explain_names_the_clause_of_every_line(tmp_path: Path) -> None:
    doc = tmp_path / "round.json"
    doc.write_text(json.dumps(ROUND))
    result = CliRunner().invoke(app, ["settle", str(doc), "--explain"], env=ENV)
    assert result.exit_code == 0, result.output
    explained = result.stdout.split("Every line and the clause behind it:\n", 1)[1].splitlines()
    settled = [line.strip() for line in explained if line.strip().startswith("#")]
    assert len(settled) == len(ROUND["wagers"])
    for i, (line, clause) in enumerate(zip(settled, EXPECTED_CLAUSES, strict=True)):
        assert line.startswith(f"#{i} seat ")
        assert f"[{clause}]" in line, line
        assert clause in MAP_IDS
    kinds = {ROUND["wagers"][i]["kind"] for i in range(len(settled))}
    assert kinds == {"pip_street", "like_kind", "extra_roll", "millionaire_row"}
    rolls = [line for line in explained if "roll" in line.lower() and not line.strip().startswith("#")]
    assert any("[593.4(g)]" in line for line in rolls) and any("[593.4(h)]" in line for line in rolls)
    for line in explained:
        bracket = re.search(r"\[(\d{3}[a-z]?\.\d+[^\]]*)\]", line)
        assert bracket is not None, line
        cited = cited_in_text(bracket.group(1))
        assert cited and all(c in MAP_IDS for c in cited), line


def test_settle_explain_json_adds_the_lines_and_keeps_the_answer(tmp_path: Path) -> None:
    doc = tmp_path / "round.json"
    doc.write_text(json.dumps(ROUND))
    plain = json.loads(CliRunner().invoke(app, ["settle", str(doc), "--json"], env=ENV).stdout)
    both = json.loads(CliRunner().invoke(app, ["settle", str(doc), "--json", "--explain"], env=ENV).stdout)
    explain = both.pop("explain")
    assert both == plain
    assert [e["clause"] for e in explain if e["line"].startswith("#")] == EXPECTED_CLAUSES


def test_593_2_e_4_math_prints_the_clause_and_reading_of_each_figure() -> None:
    for value in ("separate", "one_stake"):
        result = CliRunner().invoke(
            app, ["math", "hrd10", "--setting", f"millionaire_row_circles={value}"], env=ENV
        )
        assert result.exit_code == 0, result.output
        rows = [line for line in result.stdout.splitlines() if "│ millionaire_row" in line]
        assert rows and all(f"millionaire_row_circles={value}" in r and "593.5(c)" in r for r in rows)
        assert len(rows) == (2 if value == "separate" else 1)
        assert f"Reading millionaire_row_circles={value} (593.2(e)(4), 593.4(f)(3))" in result.stdout
        pip = [line for line in result.stdout.splitlines() if "│ pip_street" in line]
        assert len(pip) == 6 and all("593.5(a)" in r for r in pip)
