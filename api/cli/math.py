"""`throwbox math GAME`: exact probabilities and house edges of every wager of a game in rules.games.

Generic over `rules.games`: the files named on the command line are read here and passed in `MathOptions`;
a game that gets an option it does not understand refuses it (exit 2). Tables for people (rich), JSON for
programs (`--json`), fractions written exactly as "p/q".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        typer.echo(f"error: cannot read the {what} {path}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        typer.echo(f"error: the {what} {path} is not JSON: {exc}", err=True)
        raise typer.Exit(2) from exc


def _parse_settings(pairs: list[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            typer.echo(f"error: --setting takes KEY=VALUE, got {pair!r}", err=True)
            raise typer.Exit(2)
        settings[key.strip()] = value.strip()
    return settings


def register(app: typer.Typer) -> None:
    """Attach the `math` command to the CLI."""

    @app.command()
    def math(
        game: str = typer.Argument(..., help="Game id, e.g. hrd10 or hrd6 (see rules.games)."),
        paytable: Path | None = typer.Option(None, "--paytable", help="A paytable file (JSON) for the game."),
        decks: int | None = typer.Option(None, "--decks", help="Number of decks (card games)."),
        distribution: Path | None = typer.Option(
            None, "--distribution", help="An outcome distribution file (JSON), for games that take one."
        ),
        setting: list[str] = typer.Option(
            [],
            "--setting",
            help="An interpretation setting KEY=VALUE (repeatable), e.g. extra_roll_reach=one_circle.",
        ),
        as_json: bool = typer.Option(
            False, "--json", help='Print JSON (fractions as "p/q") instead of tables.'
        ),
    ) -> None:
        """Exact probability and house edge of every wager of GAME (enumeration, not simulation)."""
        from rules.games import DocumentRefusedError, MathOptions, game_ids, math_report

        if game not in game_ids():
            typer.echo(f"error: unknown game {game!r}; known: {', '.join(game_ids())}", err=True)
            raise typer.Exit(2)
        options = MathOptions(
            paytable=_read_json(paytable, "paytable") if paytable is not None else None,
            decks=decks,
            distribution=_read_json(distribution, "distribution") if distribution is not None else None,
            settings=_parse_settings(setting),
        )
        try:
            report = math_report(game, options)
        except DocumentRefusedError as exc:
            typer.echo(f"refused: {len(exc.problems)} problem(s)", err=True)
            for p in exc.problems:
                where = f" [{p.field}]" if p.field else ""
                typer.echo(f"  {p.clause}{where}: {p.message}", err=True)
            raise typer.Exit(2) from exc
        if as_json:
            out = {
                "game": report.game,
                "title": report.title,
                "notes": list(report.notes),
                "data": report.data,
            }
            typer.echo(json.dumps(out, indent=2))
            return
        from rich.console import Console
        from rich.table import Table

        # Wide enough for exact fractions when the output is a file or a pipe (rich would assume 80).
        console = Console(width=None if sys.stdout.isatty() else 200)
        console.print(f"[bold]{report.title}[/bold]")
        for t in report.tables:
            table = Table(title=t.title, title_justify="left")
            for column in t.columns:
                table.add_column(column, no_wrap=True)
            for row in t.rows:
                table.add_row(*row)
            console.print(table)
        for note in report.notes:
            console.print(f"- {note}")
