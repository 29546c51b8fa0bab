"""`throwbox settle ROUND.json [--json]`: settle one round, the same document and answer as POST /v1/settle.

Exit codes: 0 settled; 2 the document breaks a rule or cannot be read (every problem listed by clause).
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import typer


def _load(path: Path) -> Any:
    """Read the document with exact decimals; '-' reads standard input."""
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    return json.loads(text, parse_float=Decimal)


def _print_answer(answer: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    # Wide enough for the settlement table when the output is a file or a pipe (rich would assume 80).
    console = Console(width=None if sys.stdout.isatty() else 160)
    first = answer.get("first_roll") or {}
    console.print(
        f"[bold]{answer.get('game')}[/bold]  first roll {first.get('faces')}: "
        f"winner {first.get('winner')}, match count {first.get('match_count')}"
    )
    extra = answer.get("extra_roll")
    if extra:
        console.print(
            f"Extra Roll: kept {extra['kept']}, rethrown {extra['faces']}, final count {extra['final_count']}"
        )
    table = Table(title="settlements")
    for column in ("#", "seat", "wager", "spot", "amount", "result", "win", "roll", "odds", "clause"):
        table.add_column(column)
    for i, s in enumerate(answer.get("settlements", [])):
        spot = s.get("face", s.get("count", ""))
        table.add_row(
            str(i),
            str(s["seat"]),
            s["kind"],
            str(spot),
            s["amount"],
            s["result"],
            s["win"],
            "" if s["roll"] is None else str(s["roll"]),
            s.get("odds") or "",
            s.get("clause", ""),
        )
    console.print(table)
    seats = Table(title="seats")
    for column in ("seat", "staked", "won", "lost", "net"):
        seats.add_column(column)
    for seat, t in answer.get("seats", {}).items():
        seats.add_row(seat, t["staked"], t["won"], t.get("lost", ""), t["net"])
    console.print(seats)


def register(app: typer.Typer) -> None:
    """Attach the `settle` command to the CLI."""

    @app.command()
    def settle(
        document: Path = typer.Argument(..., help="The round as a settle document (JSON); '-' reads stdin."),
        as_json: bool = typer.Option(False, "--json", help="Print the answer (or the problems) as JSON."),
    ) -> None:
        """Settle one round (High Roll Dice or any game in rules.games) and print every settlement."""
        from rules.games import DocumentRefusedError, Problem
        from rules.games import settle as settle_doc

        problems: tuple[Problem, ...]
        try:
            answer = settle_doc(_load(document))
        except OSError as exc:
            problems = (Problem("document", f"cannot read {document}: {exc.strerror or exc}", None),)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            problems = (Problem("document", f"{document} is not JSON: {exc}", None),)
        except DocumentRefusedError as exc:
            problems = exc.problems
        else:
            if as_json:
                typer.echo(json.dumps(answer, indent=2))
            else:
                _print_answer(answer)
            return
        if as_json:
            typer.echo(json.dumps({"detail": [p.as_dict() for p in problems]}, indent=2))
        else:
            typer.echo(f"refused: {len(problems)} problem(s)", err=True)
            for p in problems:
                where = f" [{p.field}]" if p.field else ""
                typer.echo(f"  {p.clause}{where}: {p.message}", err=True)
        raise typer.Exit(2)
