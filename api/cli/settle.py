"""`throwbox settle ROUND.json [--json] [--explain]`: settle one round, the same document and answer as
POST /v1/settle; `--explain` names the clause behind every roll and settlement line (rules.explain).

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


def _cell(value: Any) -> str:
    """One table cell: scalars as they are, nested values as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _print_answer(answer: dict[str, Any]) -> None:
    """Tables for people, for any game's answer: a header, one row per settlement, the seat totals."""
    from rich.console import Console
    from rich.table import Table

    # Wide enough for the settlement table when the output is a file or a pipe (rich would assume 80).
    console = Console(width=None if sys.stdout.isatty() else 160)
    first = answer.get("first_roll")
    if isinstance(first, dict):  # High Roll Dice
        console.print(
            f"[bold]{answer.get('game')}[/bold]  first roll {first.get('faces')}: "
            f"winner {first.get('winner')}, match count {first.get('match_count')}"
        )
        extra = answer.get("extra_roll")
        if isinstance(extra, dict):
            console.print(
                f"Extra Roll: kept {extra.get('kept')}, rethrown {extra.get('faces')}, "
                f"final count {extra.get('final_count')}"
            )
    else:
        header = ", ".join(
            f"{k} {_cell(v)}" for k, v in answer.items() if k not in ("game", "settlements", "seats")
        )
        console.print(f"[bold]{answer.get('game')}[/bold]  {header}")
    settlements = [s for s in answer.get("settlements", []) if isinstance(s, dict)]
    # The contract's fields first, in the contract's order; then whatever else a game adds.
    columns = [
        k
        for k in ("seat", "kind", "face", "count", "amount", "result", "win", "roll")
        if any(k in s for s in settlements)
    ]
    for s in settlements:
        columns += [k for k in s if k not in columns]
    table = Table(title="settlements")
    table.add_column("#")
    for column in columns:
        table.add_column(column)
    for i, s in enumerate(settlements):
        table.add_row(str(i), *(_cell(s.get(column)) for column in columns))
    console.print(table)
    seats = answer.get("seats")
    if isinstance(seats, dict) and seats:
        seat_columns: list[str] = []
        for totals in seats.values():
            seat_columns += [k for k in totals if k not in seat_columns]
        seat_table = Table(title="seats")
        seat_table.add_column("seat")
        for column in seat_columns:
            seat_table.add_column(column)
        for seat, totals in seats.items():
            seat_table.add_row(str(seat), *(_cell(totals.get(column)) for column in seat_columns))
        console.print(seat_table)


def register(app: typer.Typer) -> None:
    """Attach the `settle` command to the CLI."""

    @app.command()
    def settle(
        document: Path = typer.Argument(..., help="The round as a settle document (JSON); '-' reads stdin."),
        as_json: bool = typer.Option(False, "--json", help="Print the answer (or the problems) as JSON."),
        explain: bool = typer.Option(
            False,
            "--explain",
            help="Name the clause behind every roll and settlement line, with what it requires "
            '(with --json: an "explain" list in the answer).',
        ),
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
            if explain:
                from rules.explain import explain as explain_answer

                lines = explain_answer(answer)
                if as_json:
                    answer = {**answer, "explain": [line.as_dict() for line in lines]}
            if as_json:
                typer.echo(json.dumps(answer, indent=2))
            else:
                _print_answer(answer)
                if explain:
                    typer.echo("Every line and the clause behind it:")
                    for line in lines:
                        typer.echo(f"  {line.subject}  [{line.clause}] {line.requires}")
            return
        if as_json:
            typer.echo(json.dumps({"detail": [p.as_dict() for p in problems]}, indent=2))
        else:
            typer.echo(f"refused: {len(problems)} problem(s)", err=True)
            for p in problems:
                where = f" [{p.field}]" if p.field else ""
                typer.echo(f"  {p.clause}{where}: {p.message}", err=True)
        raise typer.Exit(2)
