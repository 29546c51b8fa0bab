"""`throwbox lab learn-bench`: the table that learns from its people, in numbers (issue 56, item 4).

Renders the scenes once (`throwbox lab synth --style wide`, under `nice -n 15`) into a git-ignored folder
under data/, then plays them through the live loop with a scripted person at the console and the table
refitting itself (lab/learn_bench.py says how). Writes the JSON and the plot.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import typer

DEFAULT_SCENES = Path("data/learn-bench/wide-s5600")


def learn_bench(
    folders: list[Path] = typer.Option(
        [DEFAULT_SCENES], "--scenes", help="Synth folders, played in order; one absent is rendered there."
    ),
    render: int = typer.Option(1200, "--render", min=1, help="Scenes to render when --scenes is absent."),
    seed: int = typer.Option(5600, "--seed", min=0, help="The render's seed (the next folder's seed + 1)."),
    style: str = typer.Option("wide", "--style", help="The render's style (wide: never trained on)."),
    max_confirmed: int = typer.Option(
        1000, "--confirmed", min=1, help="Stop --window throws after this many confirmed rolls."
    ),
    every_dice: int = typer.Option(300, "--every-dice", min=6, help="The table's learn_every_dice."),
    window: int = typer.Option(100, "--window", min=1, help="Throws measured after each mark."),
    marks: str = typer.Option("0,300,1000", "--at", help="Counts of confirmed rolls to measure at."),
    out: Path = typer.Option(Path("reports/learn-bench/learn-bench.json"), "--out", help="The JSON written."),
    plot_out: Path | None = typer.Option(None, "--plot", help="The plot (default: the JSON's name, .png)."),
) -> None:
    """Play rendered scenes of an unseen look through the live loop, a scripted person deciding what the
    reader leaves: rolls left to a person and faces given wrong against confirmed rolls."""
    from api.learning import refit_path
    from lab.learn_bench import document, load_scenes, play, plot

    try:
        at = [int(v) for v in marks.split(",") if v.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"--at takes counts like 0,300,1000: {exc}") from exc
    found = []
    for n, scenes in enumerate(folders):
        if not (scenes / "labels").is_dir():
            typer.echo(f"rendering {render} scenes ({style}) into {scenes} under nice -n 15 ...", err=True)
            argv = ["nice", "-n", "15", sys.executable, "-c", "from api.cli import main; main()"]
            argv += ["lab", "synth", str(scenes), "--scenes", str(render), "--seed", str(seed + n)]
            argv += ["--style", style, "--workers", "1"]
            if subprocess.run(argv, check=False).returncode != 0:
                typer.echo("throwbox lab learn-bench: the render failed", err=True)
                raise typer.Exit(2)
        found += load_scenes(scenes)
    if not found:
        typer.echo(f"throwbox lab learn-bench: no valid scenes in {', '.join(map(str, folders))}", err=True)
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory(prefix="throwbox-learn-bench-") as tmp:
        played, refits = play(
            found,
            data_dir=Path(tmp) / "data",
            every_dice=every_dice,
            max_confirmed=max_confirmed,
            tail=window,
            log=lambda line: typer.echo(line, err=True),
        )
    meta = {
        "command": " ".join(["throwbox", "lab", "learn-bench", *sys.argv[3:]]),
        "scenes": f"{', '.join(f.name for f in folders)} ({len(found)} valid throws)",
        "path": refit_path(),
        "learn_every_dice": every_dice,
    }
    doc = document(played, refits, at_confirmed=at, window=window, meta=meta)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    plot(doc, plot_out or out.with_suffix(".png"))
    typer.echo(json.dumps({k: v for k, v in doc.items() if k != "played"}, indent=1))


def register(app: typer.Typer) -> None:
    """Attach the `learn-bench` command to the CLI."""
    app.command("learn-bench")(learn_bench)
