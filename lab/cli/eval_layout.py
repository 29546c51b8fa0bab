"""`throwbox lab eval DATASET --layout-moves`: the dealer's-move check (593.4(e)) through the whole reader, on
labelled synthetic scenes of the move; `--extra-rolls`: the Extra Roll as the live loop posts it (593.4(g),
(h)). Called by `lab/cli/eval.py`; the work is in `lab.layout_eval`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from datasets.format import SceneTruth
    from vision.reader import Reader, ReaderConfig

T = TypeVar("T")


def _synth_scenes(dataset: Path, flag: str, *, skip: int) -> list[SceneTruth]:
    """The labelled scenes of a `throwbox lab synth` folder, after the first `skip` (exit 2 if none)."""
    from lab.judge_eval.evaluate import load_scenes

    if not (dataset / "labels").is_dir():
        typer.echo(f"throwbox lab eval {flag}: {dataset} is not a synthetic data set (no labels/)", err=True)
        raise typer.Exit(2)
    return load_scenes(dataset, skip=skip)


def _check_each(
    dataset: Path,
    scenes: list[SceneTruth],
    check: Callable[[Reader, SceneTruth, Any], T | None],
    *,
    flag: str,
    label: str,
    threads: int,
    as_json: bool,
    manifest_path: Path | None,
    reader_config: ReaderConfig | None,
) -> tuple[list[T], dict[str, str], float]:
    """Load the reader and run `check` on every scene, with a progress bar: the outcomes (None ones left
    out), the models read with and the seconds it took. A model or image that cannot be read exits 2."""
    from rich.progress import track

    from lab.judge_eval.evaluate import load_image
    from vision.onnx_session import MANIFEST_PATH, ModelError
    from vision.reader import Reader, ReaderConfig

    try:
        reader = Reader(
            threads=threads,
            manifest_path=manifest_path or MANIFEST_PATH,
            config=reader_config or ReaderConfig(),
        )
    except ModelError as exc:
        typer.echo(f"throwbox lab eval {flag}: cannot load the models: {exc}", err=True)
        raise typer.Exit(2) from exc
    start = time.perf_counter()
    outcomes: list[T] = []
    for scene in track(scenes, description=f"{label} {dataset.name}", transient=True, disable=as_json):
        try:
            image = load_image(dataset, scene)
        except ValueError as exc:
            typer.echo(f"throwbox lab eval {flag}: {exc}", err=True)
            raise typer.Exit(2) from exc
        if (outcome := check(reader, scene, image)) is not None:
            outcomes.append(outcome)
    return outcomes, dict(reader.models), round(time.perf_counter() - start, 1)


def run(
    *,
    dataset: Path,
    limit: int,
    skip: int,
    threads: int,
    as_json: bool,
    manifest_path: Path | None,
    plot: Path,
    reader_config: ReaderConfig | None = None,
) -> None:
    """Check every labelled move of `dataset` (a `throwbox lab synth` folder) and report."""
    from lab.layout_eval import ERRORS, check_scene, plot_moves, score_moves

    scenes = [s for s in _synth_scenes(dataset, "--layout-moves", skip=skip) if s.layout_move is not None]
    scenes = scenes[:limit] if limit else scenes  # the first N scenes that record a move
    if not scenes:
        typer.echo(
            f"throwbox lab eval --layout-moves: no scene in {dataset} records a dealer's move (make some "
            "with `throwbox lab synth DIR --mix "
            "layout=1,layout_wrong_box=1,layout_missing=1,layout_extra=1`)",
            err=True,
        )
        raise typer.Exit(2)
    outcomes, models, seconds = _check_each(
        dataset,
        scenes,
        check_scene,
        flag="--layout-moves",
        label="moves",
        threads=threads,
        as_json=as_json,
        manifest_path=manifest_path,
        reader_config=reader_config,
    )
    summary: dict[str, Any] = {
        "dataset": str(dataset),
        "models": models,
        **score_moves(outcomes),
        "model_seconds": seconds,
    }
    plot.parent.mkdir(parents=True, exist_ok=True)
    plot_moves(summary, plot, f"{dataset.name}: the dealer's move, {summary['moves']} scenes")
    summary["plot"] = str(plot)
    if as_json:
        typer.echo(json.dumps(summary))
        return
    typer.echo(
        f"{dataset.name}: the dealer's move checked on {summary['moves']} scenes "
        f"({summary['model_seconds']} s)"
    )
    typer.echo(
        "  | move | scenes | dealer_error | any alert (dealer_error or layout_unverified) "
        "| problems named exactly | winner's box count right |"
    )
    for kind in ERRORS:
        if (k := summary["by_kind"].get(kind)) is not None:
            typer.echo(
                f"  | {kind} | {k['moves']} | {k['dealer_errors']} ({k['dealer_error_pct']}%) "
                f"| {k['alerts']} ({k['alert_pct']}%) | {k['exact']} ({k['exact_pct']}%) "
                f"| {k['winner_box_count_right']} |"
            )
    typer.echo(
        f"  right moves with a dealer_error (false accusations): {summary['right_moves_dealer_error']} "
        f"({summary['right_moves_dealer_error_pct']}%); wrong moves with one: "
        f"{summary['wrong_moves_dealer_error']} ({summary['wrong_moves_dealer_error_pct']}%)"
    )
    typer.echo(
        f"  right moves with any alert: {summary['right_moves_alerted']} "
        f"({summary['right_moves_alerted_pct']}%), "
        f"by problem named: {summary['right_move_false_alarm_codes']}"
    )
    typer.echo(
        f"  wrong moves with no alert: {summary['wrong_moves_not_alerted']} "
        f"(alerted {summary['wrong_moves_alerted_pct']}%)"
    )
    typer.echo(f"  plot: {plot}")
    for key, label in (
        ("scenes_right_move_dealer_error", "right moves with a dealer_error"),
        ("scenes_right_move_alerted", "right moves with any alert"),
        ("scenes_wrong_move_not_alerted", "wrong moves let through"),
    ):
        if summary[key]:
            typer.echo(f"  {label}: {', '.join(summary[key])}")


def run_extra_rolls(
    *,
    dataset: Path,
    limit: int,
    skip: int,
    threads: int,
    as_json: bool,
    manifest_path: Path | None,
    reader_config: ReaderConfig | None = None,
) -> None:
    """Decide every labelled Extra Roll of `dataset` as the live loop would and report."""
    from lab.layout_eval import check_extra_roll_scene, right_extra_roll, score_extra_rolls

    labelled = [s for s in _synth_scenes(dataset, "--extra-rolls", skip=skip) if any(d.kept for d in s.dice)]
    scenes = [s for s in labelled if right_extra_roll(s) is not None]
    skipped = [s.scene_id for s in labelled if right_extra_roll(s) is None]
    scenes = scenes[:limit] if limit else scenes
    if not scenes:
        typer.echo(
            f"throwbox lab eval --extra-rolls: no scene in {dataset} is a right Extra Roll (a valid roll, "
            "its kept dice of one face in that face's box, the others outside every box; make some with "
            f"`throwbox lab synth DIR --mix extra_roll=1`); {len(skipped)} with kept dice left out",
            err=True,
        )
        raise typer.Exit(2)
    outcomes, models, seconds = _check_each(
        dataset,
        scenes,
        check_extra_roll_scene,
        flag="--extra-rolls",
        label="extra rolls",
        threads=threads,
        as_json=as_json,
        manifest_path=manifest_path,
        reader_config=reader_config,
    )
    summary: dict[str, Any] = {
        "dataset": str(dataset),
        "models": models,
        **score_extra_rolls(outcomes),
        "scenes_left_out": skipped,  # kept dice, but no right Extra Roll (right_extra_roll)
        "model_seconds": seconds,
    }
    if as_json:
        typer.echo(json.dumps(summary))
        return
    typer.echo(f"{dataset.name}: {summary['extra_rolls']} right Extra Rolls ({summary['model_seconds']} s)")
    typer.echo(
        f"  settled right {summary['settled_right']} ({summary['settled_right_pct']}%), settled wrong "
        f"{summary['settled_wrong']}, left to a person {summary['left_to_a_person']} "
        f"({summary['left_to_a_person_pct']}%), sent back (a rethrow of a right roll) {summary['sent_back']} "
        f"({summary['sent_back_pct']}%); posted {summary['posted_verdicts']}"
    )
    typer.echo(f"  alerts raised (every one false: these rolls are right): {summary['alerts']}")
    for key, label in (("scenes_settled_wrong", "settled wrong"), ("scenes_sent_back", "sent back")):
        if summary[key]:
            typer.echo(f"  {label}: {', '.join(summary[key])}")
    for d in summary["dealer_errors"]:
        typer.echo(f"  dealer_error: {d['scene_id']} ({', '.join(d['problems'])})")
    if skipped:
        typer.echo(f"  left out (kept dice, but no right Extra Roll): {len(skipped)}")
