"""rules.explain: every line of a settle answer, of every game, names a clause with what it requires."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rules.explain import REQUIREMENTS, explain
from rules.games import settle

GOLDEN_DOCS = sorted((Path(__file__).resolve().parents[1] / "golden" / "settle").glob("*.json"))


@pytest.mark.parametrize("doc", GOLDEN_DOCS, ids=[p.stem for p in GOLDEN_DOCS])
def test_every_settlement_line_of_every_game_names_a_known_clause(doc: Path) -> None:
    answer = settle(json.loads(doc.read_text()))
    lines = explain(answer)
    settled = [line for line in lines if line.subject.startswith("#")]
    assert len(settled) == len(answer["settlements"])
    for i, (line, s) in enumerate(zip(settled, answer["settlements"], strict=True)):
        assert line.subject.startswith(f"#{i} seat {s['seat']} {s['kind']}")
        assert all(c.strip() in REQUIREMENTS for c in line.clause.split(","))
        if "clause" in s:
            assert line.clause == s["clause"]  # the engine's own clause, when it names one


def test_593_4_f_1_675a_6_i_losing_and_winning_lines_name_different_clauses() -> None:
    wagers = [
        {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
        {"seat": 1, "kind": "pip_street", "face": 2, "amount": "5.00"},
    ]
    ten = explain(settle({"game": "hrd10", "wagers": wagers, "rolls": [[5, 5, 5, 5, 6, 6, 6, 1, 1, 4]]}))
    assert [line.clause for line in ten] == [
        "593.2(e)(1), 593.2(d)",
        "593.2(e)(2)",
        "593.5(a)",
        "593.4(f)(1)",
    ]
    six = explain(settle({"game": "hrd6", "wagers": wagers, "rolls": [[5, 5, 5, 6, 6, 4]]}))
    assert [line.clause for line in six] == ["675a.6(d), 675a.6(c)", "675a.6(d)", "675a.6(j)", "675a.6(i)"]
    assert ten[2].requires == REQUIREMENTS["593.5(a)"]


def test_a_clause_with_no_requirement_written_is_an_error_not_a_blank() -> None:
    answer = {"game": "hrd10", "settlements": [{"seat": 1, "kind": "pip_street", "clause": "593.9(z)"}]}
    with pytest.raises(KeyError, match=r"593\.9\(z\)"):
        explain(answer)
    with pytest.raises(KeyError, match="no clause known"):
        explain({"game": "craps", "settlements": [{"seat": 1, "kind": "pass", "result": "win"}]})
