"""`throwbox read IMAGE... [--expect N] [--table ID] [--json] [--annotate DIR] [--manifest FILE]`: read dice.

With `--table ID`, the table's stored calibration (`throwbox calibrate table`, in `--calibration-dir`) is
loaded and checked against each image's resolution; the judge then places every die on the felt (off the
table, in a layout box) and each document records the calibration it used in "calibration_id". A table with
no stored calibration is read without one (the document says `"calibration_id": null`); a stored one that is
corrupt, of another version or for another resolution is refused with its reason (exit 2).

The count of dice (issue 48, api/read_count.py): `--expect N` wins; else `--table ID` takes it from the
table's game in the service database (10 or 6, or the Extra Roll's own count while its round waits for it);
else the read is judged with no count, which the document's "count" block says (`"source": "none"`) and a
one-line warning on stderr repeats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from calibration.table import TableCalibration


def read(
    images: list[Path] = typer.Argument(..., help="Image files (JPEG, PNG, ...).", show_default=False),
    expect: int | None = typer.Option(
        None,
        "--expect",
        min=1,
        help="How many dice the roll must have (default: the --table's game, else none, with a warning).",
    ),
    table: str | None = typer.Option(
        None, "--table", help="Table id: recorded in the result; its stored calibration is used."
    ),
    calibration_dir: Path = typer.Option(
        Path("data/calibration"), "--calibration-dir", help="Where table calibrations are stored."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON document per image, one per line."),
    annotate_dir: Path | None = typer.Option(
        None, "--annotate", help="Write an annotated evidence frame per image into this folder."
    ),
    threads: int = typer.Option(1, min=0, help="onnxruntime threads (0 = all cores)."),
    manifest: Path | None = typer.Option(
        None,
        "--manifest",
        help="Model manifest (default: models/manifest.json), to look at a model's reads before "
        "registering it.",
    ),
) -> None:
    """Find every die and read its top face; exit 1 if any image could not be read."""
    _read_images(
        images=images,
        expect=expect,
        table=table,
        calibration_dir=calibration_dir,
        as_json=as_json,
        annotate_dir=annotate_dir,
        threads=threads,
        manifest=manifest,
    )


def _read_images(
    *,
    images: list[Path],
    expect: int | None,
    table: str | None,
    calibration_dir: Path,
    as_json: bool,
    annotate_dir: Path | None,
    threads: int,
    manifest: Path | None,
) -> None:
    """The work of `throwbox read`, its options parsed."""
    import cv2

    from api.read_count import NO_COUNT_WARNING, resolve_count
    from api.read_document import annotate_read, read_document
    from calibration.table import stale_marks_message
    from vision.image import UnreadableImageError, load_image
    from vision.onnx_session import MANIFEST_PATH, ModelError
    from vision.reader import Reader
    from vision.table.geometry import TableGeometry
    from vision.types import Frame

    calibration = None if table is None else _table_calibration(table, calibration_dir=calibration_dir)

    from_table = None
    if expect is None and table is not None:
        from api.read_count import service_table_count

        from_table, why_not = service_table_count(table)
        if why_not is not None:
            typer.echo(f"throwbox read: table {table!r}: no count of dice from its game: {why_not}", err=True)
    count = resolve_count(expect, from_table)
    if count.expected is None:
        typer.echo(f"throwbox read: warning: {NO_COUNT_WARNING}", err=True)

    try:
        reader = Reader(threads=threads, manifest_path=manifest or MANIFEST_PATH)
    except ModelError as exc:
        typer.echo(f"throwbox read: cannot load the models: {exc}", err=True)
        raise typer.Exit(2) from exc
    if table is not None:
        # A table enrolled with its own dice reads through its correction (vision/pips/enrolled.py).
        from vision.pips.enrolled import EnrollmentError, load_enrollment

        try:
            enrollment = load_enrollment(calibration_dir, table)
            if enrollment is not None:
                reader = reader.enrolled(enrollment)
        except EnrollmentError as exc:
            typer.echo(f"throwbox read: table {table!r}: {exc}", err=True)
            raise typer.Exit(2) from exc
    if calibration is not None and (stale := stale_marks_message(calibration, reader.models.get("detector"))):
        typer.echo(f"throwbox read: {stale}", err=True)
    if annotate_dir is not None:
        annotate_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in images:
        try:
            image = load_image(path)
        except UnreadableImageError as exc:
            failed += 1
            doc: dict[str, Any] = {"image": str(path), "error": str(exc), "verdict": None}
            typer.echo(json.dumps(doc) if as_json else f"{path}: ERROR {exc}", err=not as_json)
            continue
        geometry = None
        if calibration is not None:
            height, width = image.shape[:2]
            if (width, height) != calibration.resolution_wh:
                failed += 1
                error = (
                    f"image is {width}x{height} but table {table!r} was calibrated at "
                    f"{calibration.resolution_wh[0]}x{calibration.resolution_wh[1]}"
                )
                doc = {"image": str(path), "error": error, "verdict": None}
                typer.echo(json.dumps(doc) if as_json else f"{path}: ERROR {error}", err=not as_json)
                continue
            geometry = TableGeometry.from_calibration(calibration)
        frame = Frame(image=image, frame_id=path.name, table_id=table)
        roll = reader.read(frame, expected_dice=count.expected, geometry=geometry)
        doc = {
            "image": str(path),
            **read_document(roll),
            "calibration_id": None if calibration is None else calibration.calibration_id,
            "count": count.as_dict(),
        }
        if annotate_dir is not None:
            out_path = annotate_dir / f"{path.stem}.annotated.jpg"
            cv2.imwrite(str(out_path), annotate_read(image, roll))
            doc["annotated"] = str(out_path)
        if as_json:
            typer.echo(json.dumps(doc))
        else:
            faces = " ".join(str(d.face) if d.face is not None else "?" for d in roll.dice)
            winner, match_count = doc["winner"], doc["match_count"]
            extra = f" winner {winner}, match {match_count}" if winner is not None else ""
            typer.echo(f"{path}: {roll.verdict.value}: {len(roll.dice)} dice [{faces}]{extra}")
            for reason in roll.reasons:
                typer.echo(f"  - {reason}")
            for aside in roll.set_aside:
                x0, y0, x1, y1 = aside.box_xyxy
                typer.echo(f"  (set aside: ({(x0 + x1) / 2:.0f}, {(y0 + y1) / 2:.0f}), {aside.label})")
    if failed:
        raise typer.Exit(1)


def _table_calibration(table: str, *, calibration_dir: Path) -> TableCalibration | None:
    """The table's stored calibration; None, said on stderr, where it has none (read from the image alone)."""
    from calibration.errors import CalibrationError, CalibrationNotFoundError
    from calibration.store import load_table

    try:
        return load_table(calibration_dir, table)
    except CalibrationNotFoundError:
        # An uncalibrated table (or a mistyped id): read from the image alone, and say so.
        typer.echo(
            f"throwbox read: table {table!r} has no calibration in {calibration_dir}: read from "
            "the image alone (no felt positions, no layout boxes, no check by the die size "
            "expected where it lies)",
            err=True,
        )
        return None
    except CalibrationError as exc:
        typer.echo(f"throwbox read: table {table!r}: {exc}", err=True)
        raise typer.Exit(2) from exc


def register(app: typer.Typer) -> None:
    """Attach the `read` command to the CLI."""
    app.command()(read)
