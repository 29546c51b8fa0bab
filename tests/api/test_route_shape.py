"""Routes parse, make one service call and answer: no module of api/routes/ opens a read-write database
session itself (issue 58 item 4). The transactions live in the service modules of api/, whose domain errors
(api/errors.py) the one handler (api/http_errors.py) answers.

The modules are parsed (ast), not imported: a `.session()` or `.sessions()` call anywhere in one, inside a
function or a `with`, is found.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
ROUTES = ROOT / "api" / "routes"
# `Database.session()` opens a read-write transaction; `Database.sessions` is the sessionmaker behind it.
SESSION_OPENERS = frozenset({"session", "sessions"})


def session_calls(source: str, *, filename: str) -> list[str]:
    """`file:line name()` for each call of an attribute named in SESSION_OPENERS in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SESSION_OPENERS
        ):
            found.append(f"{filename}:{node.lineno} .{node.func.attr}()")
    return found


def test_no_route_module_opens_a_database_session() -> None:
    modules = sorted(ROUTES.glob("*.py"))
    assert len(modules) > 10, f"api/routes/ has {len(modules)} modules: the glob finds the routes"
    found = []
    for module in modules:
        name = module.relative_to(ROOT).as_posix()
        found += session_calls(module.read_text(encoding="utf-8"), filename=name)
    assert found == [], "routes open sessions; move the transaction to a service module:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(database):\n    with database.session() as s:\n        pass\n", ["r.py:2 .session()"]),
        ("def f(db):\n    s = db.sessions()\n", ["r.py:2 .sessions()"]),
        (
            "async def f(db):\n    if True:\n        with db.session():\n            pass\n",
            ["r.py:3 .session()"],
        ),
    ],
)
def test_a_session_opened_in_a_route_is_found(source: str, expected: list[str]) -> None:
    assert session_calls(source, filename="r.py") == expected


def test_reads_and_service_calls_are_not_session_openers() -> None:
    source = (
        "def f(database):\n"
        "    with database.read_session() as s:\n"
        "        pass\n"
        "    return key_service.revoke(database=database, key_id=1, actor='a')\n"
    )
    assert session_calls(source, filename="r.py") == []
