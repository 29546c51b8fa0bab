"""`throwbox enroll --table ID (--from DIR | --frames DIR | --confirmed)`: adapt the face reader to one
table's dice (issue 47), numpy and onnxruntime only (no torch).

The same sources and fit as `POST /v1/tables/{id}/enrollment` (api/enrollment_sources.py, vision/pips/enroll/,
api/enrollment.py), run in the foreground. The command is the service's, not training's (`models/`): the fit
is the reader's and `--confirmed` reads the service's database. The service's settings say where: the data
dir and database (`THROWBOX_DATA_DIR`, `THROWBOX_DATABASE_URL`, or `--data-dir`, `--database-url`). An
enrollment stored in the service's calibration dir (no `--calibration-dir`) is a change of the service's
table: it is audited and published as `POST` would; one written elsewhere is a file only.

The enrollment is stored only when it proves itself by cross-validation over the given dice
(`vision.pips.enroll.Validation`); otherwise the command says both figures and exits 2, storing nothing,
unless `--force` (the stored file and the audit entry then say `forced`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from api.db.session import Database
    from api.enrollment_sources import Example
    from api.settings import Settings
    from vision.pips.enrolled import Enrollment


def _examples(
    *,
    table: str,
    from_dir: Path | None,
    frames: Path | None,
    settings: Settings,
    database: Database | None,
    limit: int,
) -> tuple[list[Example], str]:
    """The labelled dice of the one source given, and what to add to the report line about them."""
    from api.enrollment_sources import folder_files, frame_examples, photo_examples
    from vision.pips.enroll import EnrollDataError

    if from_dir is not None:
        return photo_examples(folder_files(from_dir), limit=limit), ""
    if frames is not None:
        examples, left = frame_examples(folder_files(frames), limit=limit)
        return examples, f"; left out: {left}"
    from api.enrollment import confirmed_examples

    if database is None:  # pragma: no cover - opened by the caller for --confirmed
        raise EnrollDataError("no database")
    with database.read_session() as session:
        found = confirmed_examples(session, table_id=table, evidence_dir=settings.evidence_dir, limit=limit)
    for skipped in found.skipped[:10]:
        typer.echo(f"  skipped roll {skipped['roll_id']}: {skipped['reason']}", err=True)
    return found.examples, f"; rolls: {len(found.used)} used, {len(found.skipped)} skipped"


def _record_fit(
    database: Database, settings: Settings, *, saved: Enrollment, extra: dict[str, object]
) -> None:
    """The fit as a change of the service's table: an audit entry and an `enrollment` event."""
    from api.enrollment import enrollment_summary, record_change

    with database.session() as session:
        record_change(
            session,
            action="fitted",
            summary=enrollment_summary(saved),
            actor="cli:enroll",
            webhook_urls=settings.webhook_urls,
            extra=extra,
        )


def enroll(
    table: Annotated[str, typer.Option("--table", help="Table id to enroll.")],
    from_dir: Annotated[
        Path | None, typer.Option("--from", help="Labelled die photos: DIR/<face>/*.jpg, faces 1..6.")
    ] = None,
    frames: Annotated[
        Path | None,
        typer.Option(
            "--frames", help="Frames with YOLO labels (a .txt beside each image; class k = face k+1)."
        ),
    ] = None,
    confirmed: Annotated[
        bool,
        typer.Option("--confirmed", help="The table's dealer-confirmed rolls in the service database."),
    ] = False,
    calibration_dir: Annotated[
        Path | None,
        typer.Option(
            "--calibration-dir",
            help="Where to store the enrollment (default: the service's, <data dir>/calibration).",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="The service's data dir (default $THROWBOX_DATA_DIR)."),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option("--database-url", help="The service's database (default $THROWBOX_DATABASE_URL)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=18, max=60, help="At most this many labelled dice.")] = 60,
    manifest: Annotated[Path | None, typer.Option(help="Model manifest (default: the shipped).")] = None,
    threads: Annotated[int, typer.Option(min=0, help="onnxruntime threads.")] = 1,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Store the enrollment even when cross-validation says it reads the dice no better "
            "(recorded as forced).",
        ),
    ] = False,
) -> None:
    """Adapt the face model to one table's dice (numpy and onnxruntime only; no torch)."""
    from pydantic import SecretStr

    from api.enrollment_sources import check_enough
    from api.settings import Settings
    from calibration.errors import InvalidTableIdError
    from calibration.store import check_table_id
    from vision.onnx_session import MANIFEST_PATH, ModelError, load_model
    from vision.pips.enroll import EnrollDataError, enroll_table, forced
    from vision.pips.enrolled import save_enrollment

    sources = (("--from", from_dir), ("--frames", frames), ("--confirmed", confirmed))
    chosen = [name for name, given in sources if given]
    if len(chosen) != 1:
        typer.echo("throwbox enroll: give one of --from DIR, --frames DIR, --confirmed", err=True)
        raise typer.Exit(2)
    overrides: dict[str, object] = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if database_url is not None:
        overrides["database_url"] = SecretStr(database_url)
    settings = Settings(**overrides)  # type: ignore[arg-type]
    service_store = calibration_dir is None
    store = settings.calibration_dir if calibration_dir is None else calibration_dir
    report = ""
    database = None
    try:
        check_table_id(table)
        if confirmed or service_store:
            from api.cli.database import open_database

            database = open_database(settings)
        examples, report = _examples(
            table=table, from_dir=from_dir, frames=frames, settings=settings, database=database, limit=limit
        )
        check_enough(examples)
        model = load_model("pips", manifest_path=manifest or MANIFEST_PATH, threads=threads)
        result = enroll_table(model, table, examples)
    except (EnrollDataError, InvalidTableIdError, ModelError) as exc:
        typer.echo(f"throwbox enroll: {exc}{report}", err=True)
        if database is not None:
            database.dispose()
        raise typer.Exit(2) from exc
    validation = result.validation
    if not validation.helps and not force:
        if database is not None:
            database.dispose()
        typer.echo(f"throwbox enroll: table {table}: {validation.refusal()}{report}", err=True)
        raise typer.Exit(2)
    if not validation.helps:
        result = forced(result)
    saved = save_enrollment(result.enrollment, store)
    if database is not None:
        try:
            if service_store:
                extra = {
                    "face_model": model.spec.tag,
                    "source": chosen[0].lstrip("-"),
                    "forced": not validation.helps,
                }
                _record_fit(database, settings, saved=saved, extra=extra)
        finally:
            database.dispose()
    before, after = 100 * result.train_accuracy_before, 100 * result.train_accuracy_after
    typer.echo(
        f"table {table}: {result.dice} dice ({saved.examples}) in {result.seconds:.1f} s{report}; "
        f"examples read right {before:.1f} % -> {after:.1f} % (held in); {validation.figures()}"
        f"{'; stored by --force though it does not prove itself' if not validation.helps else ''}; "
        f"reads name {saved.tag(model.spec.tag)} (sha256 {saved.checksum})"
    )


def register(app: typer.Typer) -> None:
    """Attach `throwbox enroll`."""
    app.command("enroll")(enroll)
