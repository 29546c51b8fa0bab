"""`throwbox lab risk SET... [READER_OPTS]`: risk against coverage as the sure bar moves (lab/risk.py), and
`throwbox lab risk-plot REPORT...`: several readers' or sets' curves on one plot."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from models.data import LabelledImage


def _records_file(path: Path) -> Any:
    """A records file of `throwbox lab risk`, gzipped (as it writes them) or not."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    return json.loads(path.read_text(encoding="utf-8"))


def _set_arg(text: str) -> tuple[Path, str, str]:
    """`PATH` or `PATH:SPLIT` -> (path, split, the set's name in the reports)."""
    path, _, split = text.partition(":")
    name = Path(path).name + (f"-{split}" if split else "")
    return Path(path), split or "test", name


def risk(
    sets: list[str] = typer.Argument(
        ..., help="Labelled sets: a folder (nellbyler, YOLO or rendered scenes), PATH:SPLIT for a split."
    ),
    out: Path = typer.Option(Path("reports/reader/risk"), "--out", help="Folder of the reports."),
    label: str = typer.Option("reader", "--label", help="The reader's name in the reports' file names."),
    manifest: Path | None = typer.Option(None, "--manifest", help="Read with this manifest's models."),
    turns: bool = typer.Option(
        False, "--turns", help="Read the eight turns of every crop (the variants bar+turns, bar+all)."
    ),
    calibrated: bool = typer.Option(
        False,
        "--calibrated",
        help="Rendered scenes: read each with its own camera, as a calibrated table.",
    ),
    limit: int = typer.Option(0, "--limit", min=0, help="Read at most this many images of each set."),
    threads: int = typer.Option(1, "--threads", min=1),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON line per set."),
) -> None:
    """Wrong faces per 1,000 given against the share of dice given as the sure bar moves (Wilson 95 %),
    and rolls read valid that settle wrong per 1,000; per set OUT/LABEL-SET.json, .png, .records.json.gz."""
    from rich.progress import track

    from lab.risk import plot, records_json, report, shipped_variant
    from lab.risk_read import ReaderOptions, open_reader, read_records, shipped_bar, unscored_dice
    from models.data import DatasetError, load_dataset
    from vision.image import UnreadableImageError
    from vision.onnx_session import MANIFEST_PATH, ModelError

    options = ReaderOptions(manifest=manifest or MANIFEST_PATH, turns_check=turns, threads=threads)
    loaded = []
    for text in sets:  # every set is found before any is read: a wrong path is said at once
        path, split, name = _set_arg(text)
        try:
            items = load_dataset(path, split=split)
        except DatasetError as exc:
            typer.echo(f"throwbox lab risk: {exc}", err=True)
            raise typer.Exit(2) from exc
        items = items[:limit] if limit else items
        if not items:
            typer.echo(f"throwbox lab risk: no labelled images in {text}", err=True)
            raise typer.Exit(2)
        loaded.append((name, str(path), split, items))
    try:
        reader, bar = open_reader(options), shipped_bar(options)
    except ModelError as exc:
        typer.echo(f"throwbox lab risk: cannot load the models: {exc}", err=True)
        raise typer.Exit(2) from exc
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        typer.echo(f"throwbox lab risk: cannot write to {out}: {exc}", err=True)
        raise typer.Exit(2) from exc
    for name, path_text, split, items in loaded:

        def progress(xs: Sequence[LabelledImage], n: str = name) -> Iterable[LabelledImage]:
            return track(xs, description=f"risk {n}", transient=True, disable=as_json)

        try:
            dice, rolls, labelled = read_records(
                reader,
                items,
                calibrated=calibrated,
                unscored=unscored_dice(Path(path_text)),
                progress=progress,
            )
        except UnreadableImageError as exc:
            typer.echo(f"throwbox lab risk: {exc}", err=True)
            raise typer.Exit(2) from exc
        rep: dict[str, Any] = {
            "set": name,
            "path": path_text,
            "split": split,
            "reader": label,
            "manifest": os.path.relpath(options.manifest),
            "models": reader.models,
            "turns_read": turns,
            "calibrated": calibrated,
            **report(dice, rolls, labelled_dice=labelled, shipped_bar=bar),
        }
        stem = out / f"{label}-{name}"
        with gzip.open(stem.with_suffix(".records.json.gz"), "wt", encoding="utf-8") as fh:
            json.dump(records_json(dice, rolls, labelled_dice=labelled), fh)
        stem.with_suffix(".json").write_text(json.dumps(rep, indent=1), encoding="utf-8")
        plot({name: rep}, stem.with_suffix(".png"), title=f"{label} on {name}")
        if as_json:
            typer.echo(json.dumps(rep))
            continue
        variant = shipped_variant() if shipped_variant() in rep["variants"] else "bar"
        shipped = rep["variants"][variant]["shipped_bar"]
        typer.echo(
            f"{name}: {labelled} labelled dice, {len(dice)} detected "
            f"({rep['detections_on_no_die']} on no die); "
            f"at the shipped bar {bar:g} ({variant}): {shipped['share_given_pct']}% given, wrong "
            f"{shipped['given_wrong']} of {shipped['given']} ({shipped['wrong']['per_1000']} per 1,000, "
            f"95 % {shipped['wrong']['ci95_per_1000']}); rolls read valid {shipped['rolls_read_valid']}, "
            f"settle wrong {shipped['rolls_settled_wrong']} -> {stem}.json"
        )


def risk_pool(
    records: list[Path] = typer.Argument(
        ..., help="Records of `throwbox lab risk` (*.records.json.gz, or the same unzipped)."
    ),
    bar: float = typer.Option(..., "--bar", min=0.0, max=1.0, help="The reader's shipped bar."),
    out: Path = typer.Option(..., "--out", help="The pooled report (JSON); its plot beside it (.png)."),
    name: str = typer.Option("pooled", "--name", help="The pooled set's name in the report."),
    label: str = typer.Option("reader", "--label", help="The reader's name in the report."),
) -> None:
    """Several sets read by one reader, pooled into one risk report (e.g. the away sets together)."""
    from lab.risk import plot, pooled, records_from_json, report

    sets, labelled = [], 0
    for path in records:
        try:
            raw = _records_file(path)
            sets.append(records_from_json(raw))
            labelled += int(raw["labelled_dice"])
        except (OSError, EOFError, json.JSONDecodeError, KeyError, TypeError) as exc:
            typer.echo(f"throwbox lab risk-pool: {path} is not a risk records file: {exc}", err=True)
            raise typer.Exit(2) from exc
    dice, rolls = pooled(sets)
    rep = {
        "set": name,
        "reader": label,
        "pooled_from": [str(p) for p in records],
        **report(dice, rolls, labelled_dice=labelled, shipped_bar=bar),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=1), encoding="utf-8")
    plot({name: rep}, out.with_suffix(".png"), title=f"{label} on {name}")
    typer.echo(str(out))


def risk_bar(
    report_path: Path = typer.Argument(..., help="A risk report of a tuning set (never a judging set)."),
    variant: str = typer.Option("bar", "--variant"),
    target_per_1000: float = typer.Option(1.0, "--target-per-1000", min=0.0),
    manifest: Path | None = typer.Option(
        None, "--manifest", help="Write the bar found into this manifest's face model as `sure_bar`."
    ),
) -> None:
    """The lowest bar of a tuning set's curve whose faces given are wrong at most this often per 1,000
    (the point estimate, faces on no die included); written into a manifest when one is named (into its
    second face model too when the variant asks that model to be sure: the sweep moved both bars)."""
    rep = json.loads(report_path.read_text(encoding="utf-8"))
    curve = rep["variants"][variant]["curve"]
    found = next(
        (
            p
            for p in curve
            if p["wrong"]["per_1000"] is not None and p["wrong"]["per_1000"] <= target_per_1000
        ),
        None,
    )
    if found is None:
        typer.echo(f"throwbox lab risk-bar: no bar of {report_path} reaches {target_per_1000:g}", err=True)
        raise typer.Exit(1)
    typer.echo(
        f"bar {found['bar']:g}: {found['given_wrong']} wrong of {found['given']} given "
        f"({found['share_given_pct']}% of labelled dice) on {rep['set']}, variant {variant}"
    )
    if manifest is not None:
        raw = json.loads(manifest.read_text(encoding="utf-8"))
        raw["models"]["pips"]["sure_bar"] = found["bar"]
        if "peer_sure" in rep["variants"][variant]["opinions"] and "pips_peer" in raw["models"]:
            raw["models"]["pips_peer"]["sure_bar"] = found["bar"]
        manifest.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
        typer.echo(f"  sure_bar {found['bar']:g} written to {manifest}")


def risk_plot(
    reports: list[Path] = typer.Argument(
        ...,
        help="Reports of `throwbox lab risk` (NAME=PATH to name a line, NAME=PATH#VARIANT for its curve).",
    ),
    out: Path = typer.Option(..., "--out", help="The plot (PNG)."),
    title: str = typer.Option("risk and coverage", "--title"),
    variant: str = typer.Option("bar", "--variant", help="Which curve of each report (bar, bar+turns, ...)."),
) -> None:
    """Several risk reports' curves on one plot (readers or sets side by side)."""
    from lab.risk import plot

    loaded: dict[str, dict[str, Any]] = {}
    chosen: dict[str, str] = {}
    for given in reports:
        name, sep, path_text = str(given).partition("=")
        path_text, hashed, own_variant = (path_text if sep else name).partition("#")
        path = Path(path_text)
        try:
            rep = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            typer.echo(f"throwbox lab risk-plot: cannot read {path}: {exc}", err=True)
            raise typer.Exit(2) from exc
        if not isinstance(rep, dict) or "variants" not in rep:
            typer.echo(f"throwbox lab risk-plot: {path} is not a risk report", err=True)
            raise typer.Exit(2)
        line = name if sep else f"{rep.get('reader')} {rep.get('set')}"
        loaded[line] = rep
        if hashed:
            chosen[line] = own_variant
    plot(loaded, out, title=title, variant=variant, variants=chosen)
    typer.echo(str(out))


def register(app: typer.Typer) -> None:
    """Attach `risk`, `risk-pool`, `risk-bar` and `risk-plot`."""
    app.command("risk")(risk)
    app.command("risk-pool")(risk_pool)
    app.command("risk-bar")(risk_bar)
    app.command("risk-plot")(risk_plot)
