"""`throwbox lab synth-round`: rendered rounds (first roll, the dealer's moves, the Extra Roll) as clips."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Attach `synth-round` to the CLI."""

    @app.command("synth-round")
    def synth_round(
        out: Path = typer.Argument(..., help="Output folder (one <round_id>/ folder per round)."),
        rounds: int = typer.Option(1, "--rounds", min=1, help="Number of rounds."),
        seed: int = typer.Option(0, "--seed", min=0, help="Seed: the same seed gives the same rounds."),
        first: int = typer.Option(0, "--first", min=0, help="Index of the first round."),
        dice: int = typer.Option(10, "--dice", help="Dice per throw: 10, or 6 for the variation."),
        width: int = typer.Option(640, "--width", min=32, help="Frame width (px)."),
        height: int = typer.Option(480, "--height", min=32, help="Frame height (px)."),
        fps: float = typer.Option(30.0, "--fps", min=5.0, max=120.0, help="Frames per second."),
    ) -> None:
        """Render rounds of play: the first roll, the dealer's move to the layout box (right, wrong box,
        a winning die missing, a die of another face added) and the Extra Roll, with their truth."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskID,
            TextColumn,
            TimeRemainingColumn,
        )

        from datasets.synth.generator import ConfigError, GeneratorConfig
        from datasets.synth.render import RenderError, SceneRenderer
        from datasets.synth.round_clips import RoundStagingError, make_round

        try:
            cfg = GeneratorConfig(seed=seed, n_dice=dice, resolutions=((width, height, 1.0),))
        except ConfigError as exc:
            raise typer.BadParameter(str(exc)) from exc
        out.mkdir(parents=True, exist_ok=True)
        with (
            SceneRenderer(cfg.layout) as renderer,
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
            ) as bar,
        ):
            for index in range(first, first + rounds):
                task = bar.add_task(f"round {index} (simulating)", total=None)

                def frames_total(n: int, task: TaskID = task, index: int = index) -> None:
                    bar.update(task, total=n, description=f"round {index} frames")

                def frames_drawn(k: int, task: TaskID = task) -> None:
                    bar.advance(task, k)

                try:
                    folder = make_round(
                        cfg, index, renderer, out, fps=fps, on_total=frames_total, progress=frames_drawn
                    )
                except RoundStagingError as exc:
                    typer.echo(f"error: {exc}; try another --seed or --first", err=True)
                    raise typer.Exit(1) from exc
                except (RenderError, OSError) as exc:
                    typer.echo(f"error: {exc}", err=True)
                    raise typer.Exit(1) from exc
                bar.console.print(f"wrote {folder}")
