"""`throwbox lab stress`: the reader on labelled photos changed as other cameras and rooms change them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer

from lab.cli.eval import _unwritable

SHEET_TILE_PX = 480  # the long side of each tile of the contact sheet


def register(app: typer.Typer) -> None:
    """Attach the `stress` command to the CLI."""

    @app.command("stress")
    def stress(
        dataset: Path = typer.Argument(
            ..., help="Labelled photos: nellbyler, a YOLO folder (e.g. matteop65), or synthetic scenes."
        ),
        split: str = typer.Option(
            "test", help="Split for sets that have one (train/test/all; valid for YOLO sets)."
        ),
        kinds: str = typer.Option(
            "all",
            help="Comma-separated changes to read (smaller, defocus, shake, noise, jpeg, dim, glare, hue, "
            "tilt) or all; each at its three levels (lab/stress.py).",
        ),
        seed: int = typer.Option(0, min=0, help="Seed of the random draws (noise, the shake's angle)."),
        limit: int = typer.Option(0, min=0, help="Only the first N photos (0 = all)."),
        threads: int = typer.Option(1, min=0, help="onnxruntime threads (0 = all cores)."),
        manifest: Path | None = typer.Option(None, help="Model manifest (default: models/manifest.json)."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON document."),
        out: Path | None = typer.Option(None, help="Also write the JSON report to this file."),
        plot_path: Path = typer.Option(
            Path("reports/stress.png"), "--plot", help="Where to save the plot (one panel per change)."
        ),
        sheet: Path | None = typer.Option(
            Path("reports/stress-sheet.jpg"),
            help="Where to save the contact sheet: one photo read unchanged and under each change at its "
            "strongest level, annotated by the reader.",
        ),
        sheet_image: int = typer.Option(0, min=0, help="Which photo of the set (its place) the sheet shows."),
    ) -> None:
        """Read every labelled photo again under each change at three strengths: detection, faces, exact
        photos per change (the unchanged photos first), a plot and an annotated contact sheet."""
        from lab import stress as st

        try:
            chosen = st.parse_kinds(kinds)
        except ValueError as exc:
            typer.echo(f"throwbox lab stress: {exc}", err=True)
            raise typer.Exit(2) from exc
        for path in (plot_path, sheet, out):
            why = None if path is None else _unwritable(path)
            if why is not None:
                typer.echo(f"throwbox lab stress: cannot write {path}: {why}", err=True)
                raise typer.Exit(2)
        report = _run(
            dataset,
            split=split,
            kinds=chosen,
            seed=seed,
            limit=limit,
            threads=threads,
            manifest=manifest,
            sheet=sheet,
            sheet_image=sheet_image,
            quiet=as_json,
        )
        plot_path.parent.mkdir(parents=True, exist_ok=True)
        st.plot(report, plot_path)
        report["plot"] = str(plot_path)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        if as_json:
            typer.echo(json.dumps(report))
            return
        _print_table(report)


def _run(
    dataset: Path,
    *,
    split: str,
    kinds: tuple[Any, ...],
    seed: int,
    limit: int,
    threads: int,
    manifest: Path | None,
    sheet: Path | None,
    sheet_image: int,
    quiet: bool,
) -> dict[str, Any]:
    import cv2
    import numpy as np
    from rich.progress import track

    from api.read_document import annotate_read
    from lab import stress as st
    from lab.evaluate import Tally
    from models.data import DatasetError, load_dataset
    from vision.annotate import tile_grid
    from vision.image import UnreadableImageError, load_image
    from vision.onnx_session import MANIFEST_PATH, ModelError
    from vision.reader import Reader
    from vision.types import Frame

    try:
        items = load_dataset(dataset, split=split)
    except DatasetError as exc:
        typer.echo(f"throwbox lab stress: {exc}", err=True)
        raise typer.Exit(2) from exc
    if limit:
        items = items[:limit]
    if not items:
        typer.echo(f"throwbox lab stress: no labelled images in {dataset} ({split})", err=True)
        raise typer.Exit(2)
    if sheet is not None and sheet_image >= len(items):
        typer.echo(
            f"throwbox lab stress: --sheet-image {sheet_image}, but the set has {len(items)} photos", err=True
        )
        raise typer.Exit(2)
    try:
        reader = Reader(threads=threads, manifest_path=manifest or MANIFEST_PATH)
    except ModelError as exc:
        typer.echo(f"throwbox lab stress: cannot load the models: {exc}", err=True)
        raise typer.Exit(2) from exc
    box_kind = items[0].box_kind
    plan = st.conditions(kinds)
    tallies = {(kind, index): Tally() for kind, _, index in plan}
    strongest = {(kind.name, len(kind.levels)) for kind in kinds}
    tiles: list[tuple[str, Any]] = []
    started = time.time()
    for i, item in track(
        list(enumerate(items)), description=f"stress {dataset.name}", transient=True, disable=quiet
    ):
        try:
            image = load_image(item.path)
        except UnreadableImageError as exc:
            typer.echo(f"throwbox lab stress: {exc}", err=True)
            raise typer.Exit(2) from exc
        expected = len(item.faces) or None
        for kind, level, index in plan:
            if kind == "none":
                changed, boxes = image, item.boxes_xyxy
            else:
                changed, boxes = st.change(
                    image, item.boxes_xyxy, kind, level, st.condition_rng(seed, i, kind, index)
                )
            roll = reader.read(Frame(image=changed, frame_id=item.path.name), expected_dice=expected)
            tallies[(kind, index)].add_roll(
                name=item.path.name, gt_xyxy=boxes, gt_faces=item.faces, roll=roll, box_kind=box_kind
            )
            if sheet is not None and i == sheet_image and (kind == "none" or (kind, index) in strongest):
                name = "unchanged" if kind == "none" else f"{kind} {level:g}"
                tiles.append((name, annotate_read(changed, roll)))
    rows = []
    for kind, level, index in plan:
        rows.append(
            {"kind": kind, "level": level, "level_index": index}
            | st.headline(tallies[(kind, index)].summary(box_kind=box_kind))
        )
    report: dict[str, Any] = {
        "dataset": str(dataset),
        "dataset_name": dataset.name,
        "split": split,
        "photos": len(items),
        "box_kind": box_kind,
        "seed": seed,
        "models": reader.models,
        "detector_input_blur_sigma": reader.detector.config.input_blur_sigma,
        "started_utc": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 1),
        "kinds": [
            {"name": k.name, "stands_for": k.stands_for, "unit": k.unit, "levels": list(k.levels)}
            for k in kinds
        ],
        "conditions": rows,
    }
    if sheet is not None and tiles:
        report["sheet"] = str(sheet)
        fitted = []
        for name, tile in tiles:
            h, w = tile.shape[:2]
            scale = SHEET_TILE_PX / max(h, w)
            small = cv2.resize(
                tile, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
            )
            canvas = np.full((SHEET_TILE_PX + 28, SHEET_TILE_PX, 3), 255, np.uint8)
            canvas[28 : 28 + small.shape[0], : small.shape[1]] = small
            cv2.putText(canvas, name, (6, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 1, cv2.LINE_AA)
            fitted.append(canvas)
        used = 28 + max(round(t.shape[0] * SHEET_TILE_PX / max(t.shape[:2])) for _, t in tiles)
        fitted = [canvas[:used] for canvas in fitted]  # no white band under a landscape photo
        sheet.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(sheet), tile_grid(fitted, columns=min(5, len(fitted)))):
            typer.echo(f"throwbox lab stress: OpenCV could not write the sheet to {sheet}", err=True)
            raise typer.Exit(1)
    return report


def _print_table(report: dict[str, Any]) -> None:
    typer.echo(
        f"{report['dataset']} [{report['split']}]: {report['photos']} photos, seed {report['seed']}, "
        f"{report['seconds']} s"
    )
    typer.echo(
        f"{'change':<10}{'level':>7}{'recall':>9}{'precision':>11}{'faces':>8}{'given right':>13}"
        f"{'unsure':>8}{'exact':>8}{'wrong':>7}"
    )

    def fmt(value: Any) -> str:
        return "-" if value is None else f"{value:g}"

    for r in report["conditions"]:
        typer.echo(
            f"{r['kind']:<10}{fmt(r['level']) if r['kind'] != 'none' else '':>7}{fmt(r['recall_pct']):>9}"
            f"{fmt(r['precision_pct']):>11}{fmt(r['face_learned_of_matched_pct']):>8}"
            f"{fmt(r['face_given_right_pct']):>13}{fmt(r['uncertain_of_matched_pct']):>8}"
            f"{fmt(r['rolls_exact_pct']):>8}{r['rolls_read_valid_settled_wrong']:>7}"
        )
    typer.echo("(percentages; faces: learned, of dice found; wrong: photos read valid that settle wrong)")
    typer.echo(f"plot: {report['plot']}" + (f"  sheet: {report['sheet']}" if "sheet" in report else ""))
