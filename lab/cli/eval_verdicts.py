"""`throwbox lab eval DATASET --verdicts`: the judge's figures on labelled synthetic scenes (issue 5).

Called by `lab/cli/eval.py`; the work is in `lab.judge_eval.evaluate`. Prints a table, a verdict confusion
matrix, recall per invalidity kind, the error rates on valid rolls, the rolls read valid with a wrong die,
and the same split by camera (top-down, oblique); saves a confusion-matrix plot and a threshold-sweep plot,
and with `--json` prints everything (the sweep too) as one JSON document.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from vision.reader import ReaderConfig


def run(
    *,
    dataset: Path,
    oracle_boxes: bool,
    limit: int,
    threads: int,
    plot: Path,
    as_json: bool,
    misses_dir: Path | None = None,
    manifest_path: Path | None = None,
    skip: int = 0,
    reader_config: ReaderConfig | None = None,
) -> None:
    """Score the verdicts on `dataset` (a `throwbox lab synth` folder) and report.

    `reader_config`: the reader's settings (default: the shipped ones); its `validity` judges the records.
    """

    from lab.judge_eval.evaluate import (
        WEAK_FLOOR,
        DetectWithWeak,
        load_scenes,
        plot_confusion,
        plot_sweep,
        score,
        score_by_camera,
        score_by_camera_and_frame,
        score_by_scenario,
        sweep,
    )
    from vision.onnx_session import MANIFEST_PATH, ModelError, load_model
    from vision.reader import Reader, ReaderConfig
    from vision.state.model import DieStateClassifier

    manifest_path = manifest_path or MANIFEST_PATH
    reader_config = reader_config or ReaderConfig()

    if not (dataset / "labels").is_dir():
        typer.echo(
            f"throwbox lab eval --verdicts: {dataset} is not a synthetic data set (no labels/)", err=True
        )
        raise typer.Exit(2)
    scenes = load_scenes(dataset, limit=limit, skip=skip)
    if not scenes:
        typer.echo(f"throwbox lab eval --verdicts: no labelled scenes in {dataset}", err=True)
        raise typer.Exit(2)
    read_turned: Callable[..., Any] | None = None  # the closer look at cocked dice (reader only)
    read_cocked: Callable[..., Any] | None = None  # the face model for dice called cocked (reader only)
    try:
        if oracle_boxes:
            state = DieStateClassifier(load_model("die_state", threads=threads, manifest_path=manifest_path))
            detect: DetectWithWeak | None = None
            read_faces, models = None, {"die_state": state.model.spec.tag, "boxes": "ground truth"}
            look: float | None = None
            threshold: float | None = None
            blur: float | None = None
        else:
            reader = Reader(threads=threads, manifest_path=manifest_path, config=reader_config)
            if reader.die_state is None:
                raise ModelError("models/manifest.json lists no die_state model")
            state = reader.die_state
            detector = reader.detector
            weak_floor = min(WEAK_FLOOR, detector.config.score_threshold)

            def detect_with_weak(image: Any) -> Any:
                return detector.detect_with_weak(image, weak_score=weak_floor)

            detect = detect_with_weak
            read_faces, models = reader.faces, dict(reader.models)
            read_turned = partial(reader.cocked_reader, turned=True)
            read_cocked = reader.cocked_faces
            look = reader.faces.second_look_below
            threshold = detector.config.score_threshold
            blur = detector.config.input_blur_sigma
    except ModelError as exc:
        typer.echo(f"throwbox lab eval --verdicts: cannot load the models: {exc}", err=True)
        raise typer.Exit(2) from exc
    start = time.perf_counter()
    records = _record_scenes(
        scenes,
        dataset=dataset,
        as_json=as_json,
        detect=detect,
        read_faces=read_faces,
        die_state=state,
        reader_config=reader_config,
        read_turned=read_turned,
        read_cocked=read_cocked,
    )
    config = reader_config.validity
    summary: dict[str, Any] = {
        "dataset": str(dataset),
        "mode": "judge only (ground-truth boxes and faces)" if oracle_boxes else "whole reader",
        "models": models,
        "second_look_below": look,
        "detector_score_threshold": threshold,
        "detector_input_blur_sigma": blur,
        **score(records, config),
        "by_camera": score_by_camera(records, config),
        "by_camera_and_frame": score_by_camera_and_frame(records, config),
        "by_scenario": score_by_scenario(records, config),
        "model_seconds": round(time.perf_counter() - start, 1),
    }
    curves = sweep(records, config)
    plot.parent.mkdir(parents=True, exist_ok=True)
    sweep_plot = plot.with_name(plot.stem + "-sweep" + plot.suffix)
    title = f"{dataset.name}: {summary['mode']}, {summary['scenes']} scenes"
    plot_confusion(summary, plot, title)
    plot_sweep(curves, sweep_plot, title)
    summary["plots"] = [str(plot), str(sweep_plot)]
    if misses_dir is not None:
        summary["misses"] = _write_misses(dataset, scenes, records, config, misses_dir)
    if as_json:
        typer.echo(json.dumps({**summary, "sweep": curves}))
        return
    _print_verdicts(summary, title=title)
    _print_breakdowns(summary, plot=plot, sweep_plot=sweep_plot, misses_dir=misses_dir)


def _record_scenes(
    scenes: list[Any],
    *,
    dataset: Path,
    as_json: bool,
    detect: Any,
    read_faces: Any,
    die_state: Any,
    reader_config: ReaderConfig,
    read_turned: Callable[..., Any] | None,
    read_cocked: Callable[..., Any] | None,
) -> list[Any]:
    """Each scene read and judged, with what the judge saw (`record_scene`); an unreadable image stops it."""
    from rich.progress import track

    from lab.judge_eval.evaluate import load_image, record_scene

    records = []
    for scene in track(scenes, description=f"verdicts {dataset.name}", transient=True, disable=as_json):
        try:
            image = load_image(dataset, scene)
        except ValueError as exc:
            typer.echo(f"throwbox lab eval --verdicts: {exc}", err=True)
            raise typer.Exit(2) from exc
        records.append(
            record_scene(
                scene,
                image,
                detect=detect,
                read_faces=read_faces,
                die_state=die_state,
                judge_config=reader_config.validity.judge,
                read_turned=read_turned,
                read_cocked=read_cocked,
            )
        )
    return records


def _print_verdicts(summary: dict[str, Any], *, title: str) -> None:
    """The verdicts' confusion and the issue's figures, for a person."""
    from lab.judge_eval.evaluate import READ_VERDICTS, TRUTH_VERDICTS

    r, s = summary["recall_pct"], summary["support"]
    typer.echo(f"{title} ({summary['model_seconds']} s)")
    typer.echo(f"  verdict accuracy {summary['verdict_accuracy_pct']}%")
    typer.echo("  confusion (rows: true verdict; columns: read verdict)")
    typer.echo("    " + "".join(f"{c:>13}" for c in ("", *READ_VERDICTS)))
    for t in TRUTH_VERDICTS:
        row = summary["confusion_truth_rows_read_cols"][t]
        typer.echo("    " + f"{t:>13}" + "".join(f"{row[c]:>13}" for c in READ_VERDICTS))
    typer.echo("  | figure | value | of |")
    typer.echo(f"  | die on die: recall (reason die_on_die) | {r['die_on_die']}% | {s['die_on_die']} rolls |")
    typer.echo(
        f"  | die on die: called invalid (any reason) | {r['die_on_die_invalid_any_reason']}% "
        f"| {s['die_on_die']} rolls |"
    )
    typer.echo(
        f"  | die on die, the die beneath in view: recall (reason die_on_die) "
        f"| {r['die_on_die_beneath_in_view']}% | {s['die_on_die_beneath_in_view']} rolls |"
    )
    typer.echo(f"  | die off table: recall | {r['die_off_table']}% | {s['die_off_table']} rolls |")
    typer.echo(
        f"  | die off table, the throw box wholly in view (issue 5's condition): recall "
        f"| {r['die_off_table_box_in_view']}% | {s['die_off_table_box_in_view']} rolls |"
    )
    typer.echo(f"  | void (more than one side resting): recall | {r['void']}% | {s['void']} rolls |")
    typer.echo(
        f"  | cocked dice found and read by rule | {r['cocked_read_by_rule']}% | {s['cocked_dice']} dice |"
    )
    typer.echo(
        f"  | cocked value right (of those found) | {summary['cocked_value_right_pct']}% "
        f"| {summary['cocked_read_by_rule_wrong']} read wrong |"
    )
    typer.echo(
        f"  | valid rolls called invalid or void | {summary['valid_called_invalid_or_void_pct']}% "
        f"| {summary['valid_rolls']} rolls |"
    )
    typer.echo(
        f"  | valid rolls with no_decision | {summary['valid_no_decision_pct']}% "
        f"| {summary['valid_rolls']} rolls |"
    )
    typer.echo(
        f"  | rolls read valid with a wrong or unmatched die (a wrong settlement) | "
        f"{summary['rolls_read_valid_with_a_wrong_die']} | {summary['rolls_read_valid']} rolls read valid |"
    )
    if summary["rolls_read_valid_settled_wrong"] is not None:
        typer.echo(
            f"  | rolls read valid that settle wrong (not a valid roll, or other faces than the truth's) | "
            f"{summary['rolls_read_valid_settled_wrong']} | {summary['rolls_read_valid']} rolls read valid |"
        )
    if wrong_scenes := summary["scenes_read_valid_with_a_wrong_die"]:
        typer.echo(f"  read valid with a wrong die: {', '.join(wrong_scenes)}")
        for w in summary["wrong_dice_in_rolls_read_valid_detail"]:
            truly = (
                f"truly {w['true_face']} ({w['true_state']})"
                if w["true_state"] is not None
                else "on no die the truth can match"
            )
            typer.echo(
                f"    {w['scene_id']} die {w['die']}: read {w['read_face']} at {w['face_p']} "
                f"(called {w['state_called']}), {truly}, box IoU {w['iou']}"
            )
    typer.echo(f"  reasons on valid rolls not read valid: {summary['reasons_on_valid_rolls']}")


def _print_breakdowns(
    summary: dict[str, Any], *, plot: Path, sweep_plot: Path, misses_dir: Path | None
) -> None:
    """The figures by camera, by camera and frame and by scenario, the plots, and the misses, for a person."""
    from lab.judge_eval.evaluate import OBLIQUE_TILT_DEG

    typer.echo(f"  by camera (top_down: as a table mounts it; oblique: tilted over {OBLIQUE_TILT_DEG:g} deg)")
    typer.echo(
        "  | camera | scenes | valid rolls no_decision | valid rolls sent back | invalid/void read valid "
        "| rolls read valid with a wrong die |"
    )
    for kind, k in summary["by_camera"].items():
        conf = k["confusion_truth_rows_read_cols"]
        bad_valid = conf["invalid"]["valid"] + conf["void"]["valid"]
        typer.echo(
            f"  | {kind} | {k['scenes']} | {_pct(k['valid_no_decision_pct'])} | "
            f"{_pct(k['valid_called_invalid_or_void_pct'])} | {bad_valid} | "
            f"{k['rolls_read_valid_with_a_wrong_die']} of {k['rolls_read_valid']} |"
        )
    typer.echo(
        "  by camera and frame (motion_blur: the generator's camera shake, 3-9 px; still: none; "
        "unknown: the label does not say)"
    )
    typer.echo(
        "  | camera/frame | scenes | valid rolls | no_decision | sent back | read valid with a wrong die |"
    )
    for key, k in summary["by_camera_and_frame"].items():
        typer.echo(
            f"  | {key} | {k['scenes']} | {k['valid_rolls']} | {_pct(k['valid_no_decision_pct'])} | "
            f"{_pct(k['valid_called_invalid_or_void_pct'])} | {k['rolls_read_valid_with_a_wrong_die']} of "
            f"{k['rolls_read_valid']} |"
        )
    typer.echo("  by scenario (the generator's: what each scene was drawn to show; -: no valid roll)")
    typer.echo(
        "  | scenario | scenes | valid rolls | valid read valid | no_decision | sent back | "
        "invalid/void read valid | read valid, settle wrong |"
    )
    for name, k in summary["by_scenario"].items():
        conf = k["confusion_truth_rows_read_cols"]
        settled = k["rolls_read_valid_settled_wrong"]
        typer.echo(
            f"  | {name} | {k['scenes']} | {k['valid_rolls']} | {conf['valid']['valid']} | "
            f"{_pct(k['valid_no_decision_pct'])} | {_pct(k['valid_called_invalid_or_void_pct'])} | "
            f"{conf['invalid']['valid'] + conf['void']['valid']} | "
            f"{'-' if settled is None else settled} of {k['rolls_read_valid']} |"
        )
    typer.echo(f"  plots: {plot}, {sweep_plot}")
    if misses_dir is not None:
        m = summary["misses"]
        typer.echo(f"  labelled-valid rolls not read valid, by read verdict: {m['rolls_by_read_verdict']}")
        typer.echo("  their deciding findings by measured cause:")
        for cause, n in m["findings_by_cause"].items():
            typer.echo(f"    {n:>5}  {cause}")
        typer.echo(f"  misses: {m['jsonl']}, {m['sheet']}")


def _pct(value: float | None) -> str:
    """A percentage for the text tables; "-" where there is nothing to take it of (no valid roll)."""
    return "-" if value is None else f"{value}%"


def _write_misses(
    dataset: Path, scenes: list[Any], records: list[Any], config: Any, out_dir: Path
) -> dict[str, Any]:
    """Write misses.jsonl and misses.png under `out_dir`; the tally, with the two paths."""
    import cv2

    from lab.judge_eval.evaluate import load_image
    from lab.judge_eval.misses import contact_sheet, find_misses, tally

    by_id = {s.scene_id: s for s in scenes}
    by_image = {s.image: s for s in scenes}
    found = find_misses(records, by_id, config)
    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl, sheet = out_dir / "misses.jsonl", out_dir / "misses.png"
    jsonl.write_text("".join(json.dumps(m.as_dict()) + "\n" for m in found))
    image = contact_sheet(found, lambda path: load_image(dataset, by_image[path]))
    if not cv2.imwrite(str(sheet), image):
        raise OSError(f"cannot write {sheet}")
    return {**tally(found), "jsonl": str(jsonl), "sheet": str(sheet)}
