"""`throwbox lab synth` and `throwbox lab synth-bench`: the synthetic throw-box generator (datasets/synth)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from datasets.sets import DEFAULT_ROOT, NAMED_SETS, SYNTH_DATA_ENV, named_set

if TYPE_CHECKING:
    from rich.progress import Progress

    from datasets.synth.generator import GeneratorConfig


def _progress(label: str) -> Progress:
    """The progress bar of the long synth commands: label, bar, done of total, time left."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=False
    )


def _holds_another_set(out: Path, cfg: GeneratorConfig) -> str | None:
    """Why `out` cannot take `cfg`'s scenes (it holds another data set), or None."""
    from datasets.synth.writer import DatasetExistsError, refuse_other_dataset

    try:
        refuse_other_dataset(out, cfg)
    except DatasetExistsError as exc:
        return str(exc)
    return None


def _generate(out: Path, cfg: GeneratorConfig, *, scenes: int, workers: int, param_hint: str = "OUT") -> int:
    """Write `scenes` scenes of `cfg` to `out` with a progress bar and a summary line; the workers used.
    Exit 1 on a render or file error; a folder that already holds another data set is a bad `param_hint`."""
    from datasets.synth.render import RenderError
    from datasets.synth.writer import DatasetExistsError, generate_dataset

    n_workers = workers or (os.cpu_count() or 1)
    with _progress("synth") as bar:
        task = bar.add_task("scenes", total=scenes)
        try:
            summary = generate_dataset(
                out, cfg, scenes=scenes, workers=n_workers, progress=lambda _rec: bar.advance(task)
            )
        except DatasetExistsError as exc:
            raise typer.BadParameter(str(exc), param_hint=param_hint) from exc
        except (RenderError, OSError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
    typer.echo(
        f"wrote {summary.scenes} scenes to {out} in {summary.seconds:.1f} s "
        f"({summary.scenes_per_minute:.0f} scenes/min, {summary.workers} workers, "
        f"renderer {summary.renderers})"
    )
    typer.echo(f"scenarios {summary.by_scenario}; verdicts {summary.by_verdict}")
    return n_workers


def synth(
    out: Path = typer.Argument(..., help="Output folder (images/, labels/, manifest.json)."),
    scenes: int = typer.Option(100, "--scenes", min=0, help="Number of scenes."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed: the same seed gives the same data set."),
    dice: int = typer.Option(10, "--dice", help="Dice per throw: 10, or 6 for the variation."),
    mix: str = typer.Option(
        "normal=1", "--mix", help="Scenario weights, e.g. normal=0.7,cocked=0.1,stacked=0.1."
    ),
    videos: int = typer.Option(0, "--videos", min=0, help="Also write this many throw videos (30 fps)."),
    width: int = typer.Option(1280, "--width", min=32, help="Image width (px)."),
    height: int = typer.Option(960, "--height", min=32, help="Image height (px)."),
    resolutions: str = typer.Option(
        "",
        "--resolutions",
        help="Mixed sizes instead of --width/--height, e.g. 1280x960:0.5,640x480:0.5.",
    ),
    oblique: float = typer.Option(0.25, "--oblique", min=0.0, max=1.0, help="Fraction of oblique cameras."),
    workers: int = typer.Option(0, "--workers", min=0, help="Worker processes (0: one per core)."),
    see_through: float = typer.Option(
        0.0,
        "--see-through",
        min=0.0,
        max=1.0,
        help="How strongly translucent dice show the pips of their other faces (0: not at all); the "
        "same seed gives the same throws, cameras and light with or without it.",
    ),
    loaded_die: str | None = typer.Option(
        None,
        "--loaded-die",
        help="A loaded die DIE:FACE:BIAS (die 1-based), e.g. 1:6:0.05: that face at 1/6 + 0.05 on die 1.",
    ),
    style: str = typer.Option(
        "usual",
        "--style",
        help="usual: the looks the training sets were drawn from; wide: dice, felts, light and camera "
        "noise beyond them (the same seed gives the same throws and cameras in both).",
    ),
    die_style: str | None = typer.Option(
        None,
        "--die-style",
        help="Every die in this dice style (datasets/synth/textures.py DIE_STYLES, e.g. casino-blue); "
        "the same seed gives the same throws, cameras and light with or without it.",
    ),
    felt: str | None = typer.Option(
        None,
        "--felt",
        help="Every scene on this felt (a table has one; the style's felts are named in the error of a "
        "wrong name); the same seed gives the same throws, cameras and light with or without it.",
    ),
) -> None:
    """Generate synthetic throw-box scenes with exact ground truth."""
    from datasets.synth.generator import (
        ConfigError,
        GeneratorConfig,
        parse_loaded_die,
        parse_mix,
        parse_resolutions,
    )

    try:
        res = parse_resolutions(resolutions) if resolutions else parse_resolutions(f"{width}x{height}")
        cfg = GeneratorConfig(
            seed=seed,
            n_dice=dice,
            mix=parse_mix(mix),
            resolutions=res,
            oblique_fraction=oblique,
            see_through=see_through,
            loaded_die=parse_loaded_die(loaded_die) if loaded_die else None,
            style=style,
            die_style=die_style,
            felt=felt,
        )
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from exc
    n_workers = _generate(out, cfg, scenes=scenes, workers=workers)
    if videos:
        from datasets.synth.video import generate_videos

        written = generate_videos(out / "videos", cfg, count=videos, workers=n_workers)
        typer.echo(f"wrote {written} throw videos ({cfg.n_dice} dice, 30 fps) to {out / 'videos'}")


def synth_set(
    names: list[str] = typer.Argument(None, help="Named data sets to make (see --list)."),
    root: Path = typer.Option(
        DEFAULT_ROOT,
        "--root",
        envvar=SYNTH_DATA_ENV,
        help="Data root: each set goes to ROOT/synth/NAME or ROOT/judge/NAME.",
    ),
    scenes: int = typer.Option(
        0, "--scenes", min=0, help="Only the first N scenes, into NAME-firstN (0: the whole set)."
    ),
    workers: int = typer.Option(0, "--workers", min=0, help="Worker processes (0: one per core)."),
    force: bool = typer.Option(False, "--force", help="Make a set again even where it is whole."),
    list_sets: bool = typer.Option(False, "--list", help="List the named sets and their commands."),
) -> None:
    """Make again, by name, a data set a shipped model was trained on or a held-out figure reads."""
    if list_sets:
        for s in NAMED_SETS.values():
            made = s.made_scenes(root)
            state = "not made" if not made else f"made, {made} of {s.scenes} scenes"
            typer.echo(f"{s.name} ({state}; {s.used_for}):\n    {s.command(root)}")
        return
    if not names:
        raise typer.BadParameter(f"name one or more sets, or --list; known: {', '.join(NAMED_SETS)}")
    try:
        chosen = [named_set(n) for n in dict.fromkeys(names)]
    except KeyError as exc:
        raise typer.BadParameter(str(exc.args[0]), param_hint="NAMES") from exc
    todo = []
    for s in chosen:  # every folder checked before any set is made
        n = min(scenes, s.scenes) if scenes else s.scenes
        folder = s.folder(root, n)
        complete = s.made_scenes(root) >= s.scenes and n == s.scenes
        if complete and not force:
            typer.echo(f"{s.name}: already made, {s.scenes} scenes in {folder} (--force makes it again)")
            continue
        problem = _holds_another_set(folder, s.config())
        if problem:
            raise typer.BadParameter(problem, param_hint="NAMES / --root")
        todo.append((s, n, folder))
    for s, n, folder in todo:
        typer.echo(f"{s.name}: {s.command(root, n)}")
        _generate(folder, s.config(), scenes=n, workers=workers, param_hint="NAMES / --root")


def synth_bench(
    scenes: int = typer.Option(120, "--scenes", min=2, help="Scenes to generate (not kept)."),
    workers: int = typer.Option(0, "--workers", min=0, help="Worker processes (0: one per core)."),
    width: int = typer.Option(1280, "--width", min=32, help="Image width (px)."),
    height: int = typer.Option(960, "--height", min=32, help="Image height (px)."),
    mix: str = typer.Option("normal=1", "--mix", help="Scenario weights, as for `throwbox lab synth`."),
) -> None:
    """Measure the generator's throughput (scenes per minute) on this machine."""
    from datasets.synth.bench import run_bench
    from datasets.synth.generator import ConfigError, parse_mix

    try:
        weights = parse_mix(mix)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--mix") from exc
    r = run_bench(
        scenes=scenes,
        workers=workers or (os.cpu_count() or 1),
        width_px=width,
        height_px=height,
        mix=weights,
    )
    typer.echo(
        f"{r.scenes} scenes at {r.width_px}x{r.height_px}, {r.workers} workers on {r.cpus} CPUs, "
        f"renderer {r.renderers}, mix " + ",".join(f"{k}={v:.2f}" for k, v in r.mix.items())
    )
    typer.echo(
        f"steady: {r.steady_per_min:.0f} scenes/min; "
        f"end to end (with start-up): {r.end_to_end_per_min:.0f} scenes/min"
    )
    typer.echo(
        "load average before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f}".format(
            *r.load_before, *r.load_after
        )
    )


def synth_sheet(
    out: Path = typer.Argument(..., help="PNG to write, e.g. docs/img/synth-contact-sheet.png."),
    source: Path | None = typer.Option(
        None, "--from", help="An existing synthetic data set; default: generate fresh scenes."
    ),
    scenes: int = typer.Option(8, "--scenes", min=1, max=48, help="Scenes on the sheet."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the fresh scenes."),
    mix: str = typer.Option(
        "normal=1,cocked=1,wedged=1,stacked=1,off_table=1,cluster=1,layout=1,extra_roll=1",
        "--mix",
        help="Scenario weights of the fresh scenes.",
    ),
    cols: int = typer.Option(4, "--cols", min=1, help="Columns of the sheet."),
    width: int = typer.Option(1280, "--width", min=32, help="Width of the fresh scenes (px)."),
    height: int = typer.Option(960, "--height", min=32, help="Height of the fresh scenes (px)."),
) -> None:
    """Draw sample scenes with their ground truth on one image, to check the labels by eye."""
    import tempfile

    from datasets.format import SceneTruth
    from datasets.loaders import DatasetError, load_synth
    from datasets.synth.contact_sheet import write_contact_sheet, write_contact_sheet_multi
    from datasets.synth.generator import ConfigError, GeneratorConfig, parse_mix
    from datasets.synth.writer import generate_dataset

    if source is not None:
        try:
            truths = [im.truth for im in load_synth(source)[:scenes] if im.truth is not None]
        except DatasetError as exc:
            raise typer.BadParameter(str(exc), param_hint="--from") from exc
        write_contact_sheet(source, truths, out, cols=cols)
    else:
        try:
            names = sorted(parse_mix(mix))
        except ConfigError as exc:
            raise typer.BadParameter(str(exc), param_hint="--mix") from exc
        # One scene of each scenario in the mix in turn (scene k has seed + k, for variety). A scene
        # whose staging failed by chance (it is then a plain throw) is replaced by the one of the
        # next seed, up to 5 tries, so each tile shows its scenario; the sheet says which seeds.
        picked: list[tuple[Path, SceneTruth]] = []
        with tempfile.TemporaryDirectory(prefix="throwbox-sheet-") as tmp:
            for k in range(scenes):
                name = names[k % len(names)]
                for attempt in range(5):
                    folder = Path(tmp) / f"{k:02d}-{name}-{attempt}"
                    cfg = GeneratorConfig(
                        seed=seed + k + 1000 * attempt,
                        mix={name: 1.0},
                        resolutions=((width, height, 1.0),),
                    )
                    generate_dataset(folder, cfg, scenes=1, workers=1)
                    truth = load_synth(folder)[-1].truth
                    if truth is not None and not str(truth.render.get("note", "")).startswith(
                        "staging failed"
                    ):
                        break
                if truth is not None:
                    picked.append((folder, truth))
            typer.echo("seeds: " + ", ".join(f"{t.scenario} {t.seed}" for _, t in picked))
            write_contact_sheet_multi(picked, out, cols=cols)
        truths = [t for _, t in picked]
    typer.echo(f"wrote {out} ({len(truths)} scenes)")


def synth_relabel(
    folder: Path = typer.Argument(..., help="A data set made by `throwbox lab synth` (with manifest.json)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would change; write nothing."),
    workers: int = typer.Option(0, "--workers", min=0, help="Worker processes (0: one per core)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N scenes."),
    show: int = typer.Option(20, "--show", min=0, help="List at most this many changed dice."),
) -> None:
    """Re-derive the rule-based truth (faces by rule, cocked, verdicts) with the current truth code."""
    from datasets.synth.relabel import BACKUP_DIR, RelabelError, relabel_dataset

    total = len(list((folder / "labels").glob("*.json"))) if (folder / "labels").is_dir() else 0
    with _progress("relabel") as bar:
        task = bar.add_task("scenes", total=min(total, limit) if limit else total)
        try:
            report = relabel_dataset(
                folder,
                write=not dry_run,
                workers=workers or (os.cpu_count() or 1),
                limit=limit,
                progress=lambda _r: bar.advance(task),
            )
        except RelabelError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
    typer.echo(
        f"{report.scenes} scenes simulated again: {report.scenes_changed} with a changed label, "
        f"{len(report.dice)} dice changed, {len(report.verdicts)} verdicts changed, "
        f"{len(report.not_reproduced)} not reproduced (left as they were)"
    )
    for change in report.dice[:show]:
        what = "; ".join(f"{f} {a!r} -> {b!r}" for f, a, b in change.changes)
        typer.echo(
            f"  {change.scene_id} die {change.die} (tilted {change.tilt_deg:.0f} deg, "
            f"rests on {change.rests_on}): {what}"
        )
    if len(report.dice) > show:
        typer.echo(f"  ... and {len(report.dice) - show} more")
    for scene_id, before, after in report.verdicts:
        typer.echo(f"  {scene_id}: verdict {before} -> {after}")
    if report.layout_moves:
        typer.echo("dealer's move (first roll's faces) changed: " + ", ".join(report.layout_moves))
    if report.not_reproduced:
        typer.echo("not reproduced: " + ", ".join(report.not_reproduced))
    if dry_run:
        typer.echo("dry run: nothing written")
    else:
        typer.echo(f"rewrote {report.written} label files (the old ones are in {folder / BACKUP_DIR})")


def synth_check(
    scenes: int = typer.Option(40, "--scenes", min=1, help="Scenes to check."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the scenes."),
    dice: int = typer.Option(10, "--dice", help="Dice per throw: 10 or 6."),
    mix: str = typer.Option(
        "normal=1,cocked=1,propped=1,wedged=1,stacked=1,off_table=1,cluster=1,layout=1,extra_roll=1",
        "--mix",
        help="Scenario weights.",
    ),
) -> None:
    """Check the face-up ground truth against a colour-id render of every die (exit 1 on a mismatch)."""
    from datasets.synth.check import check_faces
    from datasets.synth.generator import ConfigError, GeneratorConfig, parse_mix
    from datasets.synth.render import SceneRenderer

    try:
        cfg = GeneratorConfig(seed=seed, n_dice=dice, mix=parse_mix(mix))
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from exc
    with SceneRenderer(cfg.layout) as renderer:
        r = check_faces(cfg, list(range(scenes)), renderer)
    typer.echo(
        f"{scenes} scenes (seed {seed}): {r.agree} of {r.dice} dice agree with the colour-id render "
        f"({r.cocked_checked} of them cocked); {r.hidden} with the top face hidden (under another die)"
    )
    for index, die, truth, shown in r.mismatches:
        typer.echo(f"MISMATCH scene {index} die {die}: truth says {truth}, render shows {shown}")
    if r.mismatches:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach `synth`, `synth-set`, `synth-bench`, `synth-sheet`, `synth-relabel` and `synth-check`."""
    app.command()(synth)
    app.command("synth-set")(synth_set)
    app.command("synth-bench")(synth_bench)
    app.command("synth-sheet")(synth_sheet)
    app.command("synth-relabel")(synth_relabel)
    app.command("synth-check")(synth_check)
