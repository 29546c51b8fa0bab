"""`throwbox lab eval DATASET [--json] [--split test]`: score the reader on a labelled dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from lab.evaluate import Tally
    from lab.failures import DieFailure
    from vision.reader import Reader, ReaderConfig


def _plot(summary: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    conf = np.asarray(summary["confusion_gt_rows_read_cols_1_to_6_and_uncertain"])
    groups: dict[str, dict[str, Any]] = summary.get("by_camera_and_frame", {})
    if groups:  # a synthetic set: beside the matrix, the headline figures per camera and frame
        fig, (ax, bars) = plt.subplots(1, 2, figsize=(12.4, 5.2), gridspec_kw={"width_ratios": [1.0, 1.15]})
    else:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    ax.imshow(conf, cmap="Blues")
    ax.set_xticks(range(7), ["1", "2", "3", "4", "5", "6", "?"])
    ax.set_yticks(range(6), ["1", "2", "3", "4", "5", "6"])
    ax.set_xlabel("read face (? = uncertain)")
    ax.set_ylabel("labelled face")
    for (i, j), v in np.ndenumerate(conf):
        if v:
            ax.text(j, i, str(v), ha="center", va="center", color="black" if v < conf.max() / 2 else "white")
    det = summary["detection"]
    faces = summary["face_accuracy_pct"]
    ax.set_title(
        f"{title}\nrecall {det['recall_pct']}%  precision {det['precision_pct']}%  "
        f"face (learned) {faces['learned_of_matched']}%",
        fontsize=9,
    )
    if groups:
        series = (
            ("face, learned", "face_learned_of_matched_pct"),
            ("die left uncertain", "uncertain_of_matched_pct"),
            ("roll read exactly", "rolls_exact_valid_pct"),
        )
        names = list(groups)
        x = np.arange(len(names))
        for k, (label, key) in enumerate(series):
            values = [groups[n][key] or 0.0 for n in names]
            drawn = bars.bar(x + (k - 1) * 0.27, values, 0.27, label=label)
            bars.bar_label(drawn, fmt="%.1f", fontsize=7)
        bars.set_xticks(x, [f"{n}\n{groups[n]['images']} frames" for n in names], fontsize=8)
        bars.set_ylim(0, 110)
        bars.set_ylabel("%")
        bars.legend(fontsize=8, loc="upper right", ncols=3)
        bars.set_title("by camera (top-down / oblique) and frame (still / camera shake)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _unwritable(path: Path) -> str | None:
    """Why no file can be written at `path` (its folder is made if need be), or None when one can."""
    if path.is_dir():
        return f"{path} is a folder"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return str(exc)
    if not os.access(path.parent, os.W_OK):
        return f"{path.parent} is not writable"
    return None


def eval_(
    dataset: Path = typer.Argument(
        ..., help="Dataset folder: nellbyler, a YOLO folder, or synthetic scenes."
    ),
    split: str = typer.Option(
        "test", help="Split for sets that have one (train/test/all; valid for YOLO sets)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as one JSON document."),
    plot: Path = typer.Option(Path("reports/eval.png"), help="Where to save the confusion-matrix plot."),
    expect_from_labels: bool = typer.Option(
        True, help="Run the count check with the labelled number of dice (as a table's game would)."
    ),
    threads: int = typer.Option(1, min=0, help="onnxruntime threads (0 = all cores)."),
    limit: int = typer.Option(0, min=0, help="Score only the first N images (0 = all)."),
    skip: int = typer.Option(
        0, min=0, help="Leave out the first N images (e.g. the training part of a synthetic set)."
    ),
    manifest: Path | None = typer.Option(
        None,
        help="Model manifest (default: models/manifest.json), to score a model before registering it.",
    ),
    verdicts: bool = typer.Option(
        False,
        "--verdicts",
        help="Score the judgement instead (synthetic scenes): verdict confusion matrix, recall per "
        "invalidity kind, error rates on valid rolls, threshold sweep plot (vision/judge).",
    ),
    oracle_boxes: bool = typer.Option(
        False, "--oracle-boxes", help="With --verdicts: ground-truth boxes and faces, judge stage alone."
    ),
    second_look_below: float | None = typer.Option(
        None,
        "--second-look-below",
        min=0.0,
        max=1.01,
        help="Read with the face stage's second look at dice under this top probability instead of the "
        "shipped bar (vision/pips/classifier.py SECOND_LOOK_BELOW; 1.01 = every die), to weigh a change.",
    ),
    layout_moves: bool = typer.Option(
        False,
        "--layout-moves",
        help="Score the dealer's-move check instead (593.4(e); synthetic scenes of the move): false "
        "alarms on right moves, wrong moves let through, problems named exactly (lab/layout_eval.py).",
    ),
    extra_rolls: bool = typer.Option(
        False,
        "--extra-rolls",
        help="Score the Extra Roll as the live loop posts it (593.4(g), (h); synthetic scenes with kept "
        "dice): settled right or wrong, left to a person, alerts (lab/layout_eval.py).",
    ),
    calibrated: bool = typer.Option(
        False,
        "--calibrated",
        help="Synthetic scenes: read each with its own camera over the generator's throw box, as a "
        "calibrated table reads (faces under an oblique camera cut from the die-top plane; the judge "
        "places the dice). Without it a scene is read as a photo with no calibration.",
    ),
    misses: Path | None = typer.Option(
        None,
        "--misses",
        help="With --verdicts: write DIR/misses.jsonl (each labelled-valid roll not read valid: reason, "
        "dice, measured cause), DIR/misses.png (evidence crops) and print the causes counted.",
    ),
    failures: Path | None = typer.Option(
        None,
        "--failures",
        help="The reader's figures: write DIR/failures.jsonl (each labelled die read wrong, left "
        "uncertain or missed, and each detection on no labelled die) and DIR/failures.jpg (a crop of "
        "each, with label, reading and probability; lab/failures.py).",
    ),
    label_overrides: Path | None = typer.Option(
        None,
        "--label-overrides",
        help="The reader's figures by labels corrected in this committed JSON file "
        "(lab/label_overrides.py); the data set itself is not changed.",
    ),
) -> None:
    """Detection precision/recall (IoU >= 0.5), face accuracy, exact rolls, confusion matrix, plot."""
    _evaluate(
        dataset=dataset,
        split=split,
        as_json=as_json,
        plot=plot,
        expect_from_labels=expect_from_labels,
        threads=threads,
        limit=limit,
        skip=skip,
        manifest=manifest,
        verdicts=verdicts,
        oracle_boxes=oracle_boxes,
        second_look_below=second_look_below,
        layout_moves=layout_moves,
        extra_rolls=extra_rolls,
        calibrated=calibrated,
        misses=misses,
        failures=failures,
        label_overrides=label_overrides,
    )


def _evaluate(
    *,
    dataset: Path,
    split: str,
    as_json: bool,
    plot: Path,
    expect_from_labels: bool,
    threads: int,
    limit: int,
    skip: int,
    manifest: Path | None,
    verdicts: bool,
    oracle_boxes: bool,
    second_look_below: float | None,
    layout_moves: bool,
    extra_rolls: bool,
    calibrated: bool,
    misses: Path | None,
    failures: Path | None,
    label_overrides: Path | None,
) -> None:
    """`lab eval` with its options parsed: the checks of what goes together, then one of the three runs
    (layout moves or Extra Rolls, the judge's verdicts, or the reader's figures)."""
    from vision.reader import ReaderConfig

    # The shipped settings, with the second-look bar the caller weighs, if any (both scores read with it).
    reader_config = ReaderConfig()
    if second_look_below is not None:
        reader_config = ReaderConfig(second_look_below=second_look_below)
    if calibrated and (verdicts or extra_rolls or layout_moves):
        typer.echo(
            "throwbox lab eval: --verdicts, --layout-moves and --extra-rolls always read with the "
            "scene's calibration; --calibrated is for the reader's figures",
            err=True,
        )
        raise typer.Exit(2)
    if label_overrides is not None and (verdicts or extra_rolls or layout_moves):
        typer.echo("throwbox lab eval: --label-overrides is for the reader's figures", err=True)
        raise typer.Exit(2)
    # The plot is written after the whole run: a path it cannot be written to is said now, before any
    # image is read, not after the figures are computed (and lost with a traceback).
    if layout_moves:
        plot = plot if plot != Path("reports/eval.png") else Path("reports/layout-moves.png")
    elif verdicts:
        plot = plot if plot != Path("reports/eval.png") else Path("reports/verdicts.png")
    why = None if extra_rolls else _unwritable(plot)
    if why is not None:
        typer.echo(f"throwbox lab eval: cannot write the plot to {plot}: {why}", err=True)
        raise typer.Exit(2)
    if extra_rolls or layout_moves:
        _run_layout_mode(
            dataset=dataset,
            limit=limit,
            skip=skip,
            threads=threads,
            as_json=as_json,
            manifest=manifest,
            reader_config=reader_config,
            plot=plot,
            verdicts=verdicts,
            oracle_boxes=oracle_boxes,
            misses=misses,
            failures=failures,
            extra_rolls=extra_rolls,
            layout_moves=layout_moves,
        )
        return
    if verdicts and failures is not None:
        typer.echo(
            "throwbox lab eval: --failures is for the reader's figures (--verdicts has --misses)",
            err=True,
        )
        raise typer.Exit(2)
    if misses is not None:
        try:  # as the failures below: a folder that cannot be made is said before the run
            misses.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            typer.echo(f"throwbox lab eval: cannot write the misses to {misses}: {exc}", err=True)
            raise typer.Exit(2) from exc
    if failures is not None and not verdicts:
        try:  # before any image is read: a folder that cannot be written is said now, not after the run
            failures.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            typer.echo(f"throwbox lab eval: cannot write the failures to {failures}: {exc}", err=True)
            raise typer.Exit(2) from exc
    if verdicts:
        from lab.cli.eval_verdicts import run

        run(
            dataset=dataset,
            oracle_boxes=oracle_boxes,
            limit=limit,
            threads=threads,
            plot=plot,
            as_json=as_json,
            misses_dir=misses,
            skip=skip,
            manifest_path=manifest,
            reader_config=reader_config,
        )
        return
    _eval_reader(
        dataset=dataset,
        split=split,
        as_json=as_json,
        plot=plot,
        expect_from_labels=expect_from_labels,
        threads=threads,
        limit=limit,
        skip=skip,
        manifest=manifest,
        calibrated=calibrated,
        failures=failures,
        label_overrides=label_overrides,
        reader_config=reader_config,
    )


def _run_layout_mode(
    *,
    dataset: Path,
    limit: int,
    skip: int,
    threads: int,
    as_json: bool,
    manifest: Path | None,
    reader_config: ReaderConfig,
    plot: Path,
    verdicts: bool,
    oracle_boxes: bool,
    misses: Path | None,
    failures: Path | None,
    extra_rolls: bool,
    layout_moves: bool,
) -> None:
    """`--extra-rolls` or `--layout-moves`, which go alone."""
    from lab.cli.eval_layout import run as run_layout
    from lab.cli.eval_layout import run_extra_rolls

    mode = "--extra-rolls" if extra_rolls else "--layout-moves"
    if (
        verdicts
        or oracle_boxes
        or misses is not None
        or failures is not None
        or (extra_rolls and layout_moves)
    ):
        typer.echo(
            f"throwbox lab eval: {mode} goes alone (no --verdicts, --oracle-boxes or --misses, nor both)",
            err=True,
        )
        raise typer.Exit(2)
    common: dict[str, Any] = {
        "dataset": dataset,
        "limit": limit,
        "skip": skip,
        "threads": threads,
        "as_json": as_json,
        "manifest_path": manifest,
        "reader_config": reader_config,
    }
    if extra_rolls:
        run_extra_rolls(**common)
    else:
        run_layout(**common, plot=plot)


def _eval_reader(
    *,
    dataset: Path,
    split: str,
    as_json: bool,
    plot: Path,
    expect_from_labels: bool,
    threads: int,
    limit: int,
    skip: int,
    manifest: Path | None,
    calibrated: bool,
    failures: Path | None,
    label_overrides: Path | None,
    reader_config: ReaderConfig,
) -> None:
    """The reader's figures on a labelled set: detection, faces, rolls, the classifier alone on the labelled
    boxes; a plot, and the dice it failed on with `--failures`."""
    from lab.failures import write as write_failures
    from vision.image import UnreadableImageError, load_image
    from vision.onnx_session import MANIFEST_PATH, ModelError
    from vision.reader import Reader

    items, applied = _load_items(
        dataset, split=split, label_overrides=label_overrides, skip=skip, limit=limit
    )
    try:
        reader = Reader(threads=threads, manifest_path=manifest or MANIFEST_PATH, config=reader_config)
    except ModelError as exc:
        typer.echo(f"throwbox lab eval: cannot load the models: {exc}", err=True)
        raise typer.Exit(2) from exc
    box_kind = items[0].box_kind
    if calibrated and any(item.camera is None for item in items):
        typer.echo(
            "throwbox lab eval: --calibrated needs a synthetic set, whose labels give each frame's "
            f"camera ({dataset} has none)",
            err=True,
        )
        raise typer.Exit(2)
    read = _read_items(
        reader,
        items=items,
        dataset=dataset,
        calibrated=calibrated,
        expect_from_labels=expect_from_labels,
        failures=failures,
        as_json=as_json,
    )
    tally, failed, oracle_right, oracle_total = read
    summary = {
        "dataset": str(dataset),
        "split": split,
        "models": reader.models,
        "second_look_below": reader.faces.second_look_below,
        "detector_score_threshold": reader.detector.config.score_threshold,
        "detector_input_blur_sigma": reader.detector.config.input_blur_sigma,
        "calibrated": calibrated,
        "label_overrides": applied,
        **tally.summary(box_kind=box_kind),
        "face_on_labelled_boxes_pct": round(100.0 * oracle_right / oracle_total, 2) if oracle_total else None,
    }
    plot.parent.mkdir(parents=True, exist_ok=True)
    _plot(summary, plot, f"{dataset.name} ({split})")
    summary["plot"] = str(plot)
    failures_error = None
    if failures is not None:
        try:
            summary["failures_written"] = write_failures(
                failed, failures, lambda path: load_image(Path(path))
            )
        except (OSError, UnreadableImageError) as exc:  # the figures are still printed below
            failures_error = f"throwbox lab eval: the failures were not written to {failures}: {exc}"
            summary["failures_written"] = {"error": failures_error}
    if as_json:
        typer.echo(json.dumps(summary))
        if failures_error:
            typer.echo(failures_error, err=True)
            raise typer.Exit(1)
        return
    _print_summary(summary, dataset=dataset, split=split, calibrated=calibrated, plot=plot)
    if failures_error:
        typer.echo(failures_error, err=True)
        raise typer.Exit(1)
    if failures is not None:
        written = summary["failures_written"]
        typer.echo(f"  failures: {written['by_kind']} -> {written['sheet']}")


def _load_items(
    dataset: Path, *, split: str, label_overrides: Path | None, skip: int, limit: int
) -> tuple[list[Any], list[dict[str, Any]]]:
    """The labelled images to read (after `--label-overrides`, `--skip`, `--limit`), and the overrides
    applied; a set that cannot be read or holds none stops the command (exit 2)."""
    from models.data import DatasetError, load_dataset

    try:
        items = load_dataset(dataset, split=split)
    except DatasetError as exc:
        typer.echo(f"throwbox lab eval: {exc}", err=True)
        raise typer.Exit(2) from exc
    applied: list[dict[str, Any]] = []
    if label_overrides is not None:
        from dataclasses import asdict

        from lab.label_overrides import LabelOverrideError, apply_overrides, read_overrides

        try:
            overrides = read_overrides(label_overrides)
            items = apply_overrides(items, overrides)
        except LabelOverrideError as exc:
            typer.echo(f"throwbox lab eval: --label-overrides: {exc}", err=True)
            raise typer.Exit(2) from exc
        applied = [asdict(o) for o in overrides]
    items = items[skip:]
    if limit:
        items = items[:limit]
    if not items:
        typer.echo(f"throwbox lab eval: no labelled images in {dataset} ({split})", err=True)
        raise typer.Exit(2)
    return items, applied


def _read_items(
    reader: Reader,
    *,
    items: list[Any],
    dataset: Path,
    calibrated: bool,
    expect_from_labels: bool,
    failures: Path | None,
    as_json: bool,
) -> tuple[Tally, list[DieFailure], int, int]:
    """Each image read by the reader and scored against its labels, and the face classifier alone on the
    labelled boxes (right, of how many)."""
    import numpy as np
    from rich.progress import track

    from calibration.layout import ThrowBoxLayout
    from lab.evaluate import Tally, scene_group
    from lab.failures import die_failures
    from vision.image import UnreadableImageError, load_image
    from vision.table.geometry import TableGeometry
    from vision.types import DieCandidate, Frame

    box_kind = items[0].box_kind
    layout = ThrowBoxLayout()
    tally = Tally()
    failed: list[DieFailure] = []
    oracle_right = oracle_total = 0  # the face classifier alone, on the labelled boxes
    for item in track(items, description=f"eval {dataset.name}", transient=True, disable=as_json):
        try:
            image = load_image(item.path)
        except UnreadableImageError as exc:
            typer.echo(f"throwbox lab eval: {exc}", err=True)
            raise typer.Exit(2) from exc
        expected = len(item.faces) if expect_from_labels and len(item.faces) else None
        geometry = TableGeometry(camera=item.camera, layout=layout) if calibrated and item.camera else None
        roll = reader.read(
            Frame(image=image, frame_id=item.path.name), expected_dice=expected, geometry=geometry
        )
        labelled = item.boxes_xyxy.copy()
        if item.box_kind == "top":  # top-face labels, widened to the whole die as in models/train_pips.py
            centre, half = (
                (labelled[:, :2] + labelled[:, 2:]) / 2,
                (labelled[:, 2:] - labelled[:, :2]) * 0.6,
            )
            labelled = np.concatenate([centre - half, centre + half], axis=1)
        oracle = tuple(
            DieCandidate(
                box_xyxy=(float(b[0]), float(b[1]), float(b[2]), float(b[3])),
                top_quad=((float(b[0]), float(b[1])), (float(b[2]), float(b[1])),
                          (float(b[2]), float(b[3])), (float(b[0]), float(b[3]))),
                score=1.0,
            )
            for b in labelled
        )  # fmt: skip
        for reading, truth in zip(reader.faces(image, oracle, geometry), item.faces, strict=True):
            oracle_right += int(reading.learned_face == int(truth))
            oracle_total += 1
        tally.add_roll(
            name=item.path.name,
            gt_xyxy=item.boxes_xyxy,
            gt_faces=item.faces,
            roll=roll,
            box_kind=box_kind,
            group=scene_group(item),
        )
        if failures is not None:
            failed += die_failures(item.path, item.boxes_xyxy, item.faces, roll, box_kind=box_kind)
    return tally, failed, oracle_right, oracle_total


def _print_summary(
    summary: dict[str, Any], *, dataset: Path, split: str, calibrated: bool, plot: Path
) -> None:
    """The reader's figures for a person."""
    det, faces, rolls = summary["detection"], summary["face_accuracy_pct"], summary["rolls"]
    how = ", read with each scene's calibration" if calibrated else ""
    typer.echo(f"{dataset} [{split}]: {summary['images']} images, {summary['gt_dice']} labelled dice{how}")
    typer.echo(f"  detection: recall {det['recall_pct']}%  precision {det['precision_pct']}%")
    typer.echo(
        f"  faces: learned {faces['learned_of_matched']}% of matched; final {faces['final_of_gt_dice']}% "
        f"of labelled; uncertain {faces['uncertain_of_matched']}%; accuracy when certain "
        f"{faces['final_of_certain']}%"
    )
    typer.echo(f"  face classifier alone on the labelled boxes: {summary['face_on_labelled_boxes_pct']}%")
    typer.echo(
        f"  classical pip count: opinion on {faces['classical_opinion_rate']}%, right on "
        f"{faces['classical_precision']}% of those"
    )
    typer.echo(
        f"  rolls: exact and valid {rolls['exact_valid_pct']}%; every die found and read "
        f"right {rolls['learned_exact_pct']}%; verdicts {rolls['verdicts']}"
    )
    wrong, named = rolls["read_valid_settled_wrong"], rolls["settled_wrong_images"][:5]
    more = f", ... and {wrong - len(named)} more" if wrong > len(named) else ""
    typer.echo(
        "  rolls read valid that settle wrong (faces not the labels'): "
        f"{wrong} of {rolls['read_valid']}" + (f" ({', '.join(named)}{more})" if named else "")
    )
    for group, g in summary.get("by_camera_and_frame", {}).items():
        typer.echo(
            f"    {group}: {g['images']} images; faces learned {g['face_learned_of_matched_pct']}% of "
            f"{g['matched_dice']} matched, uncertain {g['uncertain_of_matched_pct']}%; rolls exact "
            f"{g['rolls_exact_valid_pct']}%, every die found and read right "
            f"{g['rolls_learned_exact_pct']}%; read valid and settle wrong "
            f"{g['rolls_read_valid_settled_wrong']} of {g['rolls_read_valid']}"
        )
    typer.echo(
        f"  latency per image: p50 {summary['latency_ms']['p50']} ms, p99 {summary['latency_ms']['p99']} ms"
    )
    typer.echo(f"  plot: {plot}")


def register(app: typer.Typer) -> None:
    """Attach the `eval` command to the CLI."""
    app.command("eval")(eval_)
