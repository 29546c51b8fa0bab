"""The map of the regulations (docs/regulations.md) stays true: its rows, its references and its reach.

Every file, function and test the map names exists; every clause a test cites by its name or docstring
has a row; with ../shared/regs present, every section and paragraph of the texts has a row (skipped with
the reason where the texts are absent, as in a fresh clone); and no wager or procedure clause of 593.2,
593.4, 593.5, 675a.4 or 675a.6 is left "not covered".
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from rules.clauses import cited_in_test_name, cited_in_text, subsection_ids
from rules.explain import REQUIREMENTS
from rules.games import MathOptions, game_ids, math_report
from tests.conftest import REPO_ROOT, SHARED

MAP = REPO_ROOT / "docs" / "regulations.md"
REGS = SHARED / "regs"
STATUSES = ("code", "people / equipment", "not covered")
# Sections whose wager and procedure clauses must all be kept (the done-when).
MUST_BE_COVERED = ("593.2", "593.4", "593.5", "675a.4", "675a.6")

_HEADING = re.compile(r"^## (\d{3}[a-z]?\.\d+) ")
_REF = re.compile(r"`([^`]+?\.py(?:::[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]+\])?)?)`")


@dataclass(frozen=True)
class Row:
    """One row of the map: the clause, what it requires, who keeps it, and the references in the row."""

    clause: str
    requires: str
    kept_by: str
    shown_by: str

    @property
    def status(self) -> str:
        """The status the "kept by" cell starts with ("" when it starts with none)."""
        return next((s for s in STATUSES if self.kept_by.startswith(s + ":")), "")

    @property
    def code_refs(self) -> tuple[str, ...]:
        return tuple(_REF.findall(self.kept_by))

    @property
    def test_refs(self) -> tuple[str, ...]:
        return tuple(_REF.findall(self.shown_by))


def read_map(text: str) -> tuple[tuple[str, ...], tuple[Row, ...]]:
    """The section headings and the clause rows of the map (a row's first cell is a clause id)."""
    sections: list[str] = []
    rows: list[Row] = []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            sections.append(heading.group(1))
            continue
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and cited_in_text(cells[0]) == (cells[0],):
            rows.append(Row(*cells))
    return tuple(sections), tuple(rows)


def reference_problem(ref: str) -> str | None:
    """Why a `file::name[case]` reference does not resolve, or None when it does."""
    path_text, _, rest = ref.partition("::")
    path = REPO_ROOT / path_text
    if not path.is_file():
        return f"{path_text} does not exist"
    if not rest:
        return None
    name, _, case = rest.partition("[")
    source = path.read_text(encoding="utf-8")
    defined = re.search(
        rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^{name}\s*(?::[^=\n]+)?=", source, re.MULTILINE
    )
    if defined is None:
        return f"{path_text} defines no {name}"
    if case and f'"{case.rstrip("]")}"' not in source:
        return f"{path_text} has no case {case.rstrip(']')!r}"
    return None


def test_read_map_takes_headings_and_clause_rows_only() -> None:
    text = "\n".join(
        [
            "## 593.5 Payout odds",
            "| clause | requires | kept by | shown by |",
            "|---|---|---|---|",
            "| 593.5(a) | odds | code: `rules/hrd/paytable.py::REGULATION_TABLES` | `tests/x.py::test_y` |",
            "| `extra_roll_reach` | 593.2(e)(3) | all | one | t |",
        ]
    )
    sections, rows = read_map(text)
    assert sections == ("593.5",)
    assert [r.clause for r in rows] == ["593.5(a)"]
    assert rows[0].status == "code"
    assert rows[0].code_refs == ("rules/hrd/paytable.py::REGULATION_TABLES",)
    assert rows[0].test_refs == ("tests/x.py::test_y",)


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("rules/hrd/settlement.py::settle_first_roll", None),  # a function
        ("rules/hrd/paytable.py::REGULATION_TABLES", None),  # a module constant
        ("rules/hrd/wagers.py::WagerKind", None),  # a class
        ("tests/rules/test_hrd_dice.py::test_worked_examples_ten_dice[593_2_d_nothing]", "has no case"),
        ("rules/hrd/settlement.py::settle_everything", "defines no settle_everything"),
        ("rules/hrd/nothing.py", "does not exist"),
    ],
)
def test_reference_problem_finds_what_does_not_resolve(ref: str, problem: str | None) -> None:
    found = reference_problem(ref)
    assert found == problem if problem is None else (found is not None and problem in found)


SECTIONS, ROWS = read_map(MAP.read_text(encoding="utf-8"))
MAP_IDS = frozenset(SECTIONS) | {r.clause for r in ROWS}


def test_every_row_has_a_status_and_what_it_needs() -> None:
    bad = []
    for row in ROWS:
        if not row.status:
            bad.append(f"{row.clause}: 'kept by' must start with one of {STATUSES}")
        elif row.status == "code" and not (row.code_refs and row.test_refs):
            bad.append(f"{row.clause}: a code row names its code and a test")
        elif row.kept_by.rstrip(":").strip() in STATUSES:
            bad.append(f"{row.clause}: say who keeps it, or why it is not covered")
        if not row.requires:
            bad.append(f"{row.clause}: one line of what it requires")
    assert not bad, "\n".join(bad)


def test_one_row_per_clause_each_under_its_section() -> None:
    clauses = [r.clause for r in ROWS]
    assert len(clauses) == len(set(clauses)), "a clause has two rows"
    orphans = [c for c in clauses if c.split("(")[0] not in SECTIONS]
    assert not orphans, f"rows without their section heading: {orphans}"


def test_every_file_function_and_test_named_in_the_map_exists() -> None:
    problems = [
        f"{row.clause}: {p}"
        for row in ROWS
        for ref in (*row.code_refs, *row.test_refs)
        if (p := reference_problem(ref)) is not None
    ]
    problems += [p for ref in _REF.findall(MAP.read_text()) if (p := reference_problem(ref)) is not None]
    assert not problems, "\n".join(sorted(set(problems)))


def _test_citations() -> dict[str, set[str]]:
    """Clause id -> the tests (path::name) that cite it by name or docstring, over the whole of tests/."""
    cited: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                ids = cited_in_test_name(node.name) + cited_in_text(ast.get_docstring(node) or "")
                for clause in ids:
                    cited.setdefault(clause, set()).add(f"{path.relative_to(REPO_ROOT)}::{node.name}")
    return cited


def test_every_clause_a_test_cites_is_in_the_map() -> None:
    cited = _test_citations()
    assert "593.4(f)(2)(ii)" in cited  # the walk finds what it should
    missing = {c: sorted(t)[:2] for c, t in cited.items() if c not in MAP_IDS}
    assert not missing, f"clauses cited by tests with no row in docs/regulations.md: {missing}"


def test_every_clause_the_engine_explains_is_in_the_map() -> None:
    missing = sorted(set(REQUIREMENTS) - MAP_IDS)
    assert not missing, f"rules/explain.py names clauses the map lacks: {missing}"


def test_every_clause_a_math_report_names_is_in_the_map() -> None:
    """`throwbox math` of every game names the clauses behind its figures; each has a row."""
    named: dict[str, set[str]] = {}
    for game in game_ids():
        report = math_report(game, MathOptions())
        texts = [report.title, *report.notes]
        for table in report.tables:
            texts += [table.title, *(cell for row in table.rows for cell in row)]
        for text in texts:
            for clause in cited_in_text(text):
                named.setdefault(clause, set()).add(game)
    assert {"593.5(a)", "593.5(d)", "675a.6(k)", "631b.7(c)(2)", "633b.15(g)", "633b.13(h)"} <= set(named)
    missing = {c: sorted(g) for c, g in named.items() if c not in MAP_IDS}
    assert not missing, f"clauses named by throwbox math with no row in the map: {missing}"


def test_no_wager_or_procedure_clause_of_the_game_is_left_not_covered() -> None:
    left = [r.clause for r in ROWS if r.clause.split("(")[0] in MUST_BE_COVERED and r.status == "not covered"]
    assert not left, f"not covered: {left}"
    assert {s for s in MUST_BE_COVERED if s in SECTIONS} == set(MUST_BE_COVERED)


def _texts() -> list[Path]:
    if not REGS.is_dir():
        pytest.skip(f"the regulation texts are not here ({REGS}); the map's reach is checked where they are")
    texts = sorted(REGS.glob("*.txt"))
    if not texts:
        pytest.skip(f"{REGS} holds no .txt regulation texts")
    return texts


def test_every_section_and_paragraph_of_the_texts_has_a_row() -> None:
    found = [clause for path in _texts() for clause in subsection_ids(path.read_text(encoding="utf-8"))]
    assert len(found) > 100  # the parser reads the texts, not nothing
    missing = [c for c in found if c not in MAP_IDS]
    assert not missing, f"in ../shared/regs but not in docs/regulations.md: {missing}"
    invented = sorted(MAP_IDS - set(found))
    assert not invented, f"rows for clauses the texts do not have: {invented}"
