"""Table enrollment (issue 47): fit a table's own correction of the face model as a background job, read
what the table has, remove it.

`POST /v1/tables/{id}/enrollment` (admin; multipart): `source` is `photos` (a zip of `<face>/<photo>`),
`frames` (a zip of frames with YOLO labels) or `confirmed` (the dealer-confirmed rolls the service stores;
no archive). The labelled dice are gathered and checked at once, so a bad archive or too few dice is
refused (4xx) before any job exists and nothing changes; the fit runs in the background: 202 with the job.
`GET /v1/enrollment-jobs/{job_id}` (surveillance, admin) follows it. `GET /v1/tables/{id}/enrollment`
(surveillance, admin) summarises the table's enrollment; `DELETE` (admin) removes it, so the table reads
with the shipped model again. Fitting and deleting are audited and published (`enrollment` events).
A fit that does not prove itself by cross-validation over the given dice is not stored (the job ends
`failed` with both figures) unless the form says `force=true` (stored, audited as forced).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Request, status
from pydantic import BaseModel, Field

from api.db.models import EnrollmentJob, GameTable
from api.db.session import Database
from api.deps import Admin, DatabaseDep, SettingsDep, Watcher
from api.enrollment import (
    SOURCES,
    JobConflictError,
    confirmed_examples,
    create_job,
    delete_recorded,
    enrollment_summary,
    job_document,
    start_job,
)
from api.enrollment_sources import MAX_DICE, MIN_DICE_PER_FACE
from api.schemas.errors import AUTH_RESPONSES, MESSAGE_OR_VALIDATION, errors
from api.settings import Settings
from api.uploads import check_zip_upload

router = APIRouter(tags=["enrollment"], responses=AUTH_RESPONSES)

MAX_ARCHIVE_BYTES = 40 * 1024 * 1024
MIN_DICE = 6 * MIN_DICE_PER_FACE


class EnrollmentSummaryOut(BaseModel):
    """A table's enrollment: the face model it was fitted on, its SHA-256, the dice it learned from."""

    table_id: str
    face_model_sha256: str = Field(description="SHA-256 of the face model the correction was fitted on.")
    sha256: str = Field(description="SHA-256 of the stored enrollment; reads name its first 8 characters.")
    dice_per_face: dict[str, int]
    fitted_at: str | None = Field(description="ISO 8601 UTC; null for a file written before it was kept.")
    validation: dict[str, Any] | None = Field(
        default=None,
        description="Cross-validated figures: dice held out of each fit read right (and sure and wrong) by "
        "the shipped and the enrolled head, `helps`, and `forced` when stored though it did not prove "
        "itself; null for a file written before they were kept.",
    )


class EnrollmentJobOut(BaseModel):
    """An enrollment job: its state, progress, the dice it uses, and its result or error."""

    job_id: str
    table_id: str
    source: Literal["photos", "frames", "confirmed"]
    state: Literal["queued", "running", "done", "failed"]
    progress: float = Field(ge=0.0, le=1.0)
    dice_per_face: dict[str, int]
    examples: dict[str, Any] = Field(
        description="What was used and left out: for confirmed rolls, each roll used (its read, how its "
        "faces were given, dice skipped and why) and each skipped with why; for frames, files left out."
    )
    result_sha256: str | None = Field(description="SHA-256 of the stored enrollment, once done.")
    held_in_accuracy: float | None = Field(
        description="Share of the examples the enrolled model reads right (held in: they were fitted on)."
    )
    validation: dict[str, Any] | None = Field(
        description="Cross-validated figures of the fit (as the table's summary gives them), once fitted; "
        "a job whose fit did not prove itself fails with them and stores nothing."
    )
    error: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


def _table_or_404(database: Any, table_id: str) -> None:
    with database.read_session() as session:
        if session.get(GameTable, table_id) is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")


# The form, as the OpenAPI document says it: the route reads it itself (`request.form()`), so that the
# archive, a file part left out for the confirmed source, is said as a file and never as "a file or null".
FORM_SCHEMA = {
    "type": "object",
    "required": ["source"],
    "additionalProperties": False,
    "properties": {
        "source": {
            "type": "string",
            "enum": list(SOURCES),
            "description": "photos: a zip of <face>/<photo>; frames: a zip of YOLO-labelled frames; "
            "confirmed: the table's dealer-confirmed rolls (no archive).",
        },
        "archive": {
            "type": "string",
            "format": "binary",
            "contentMediaType": "application/zip",
            "description": "The zip archive (photos, frames): a zip by its bytes, sent as application/zip "
            "or application/octet-stream.",
        },
        "max_dice": {
            "type": "integer",
            "minimum": MIN_DICE,
            "maximum": MAX_DICE,
            "description": f"At most this many labelled dice are used (default {MAX_DICE}); at least "
            f"{MIN_DICE_PER_FACE} of each face are needed.",
        },
        "force": {
            "type": "boolean",
            "description": "Store the enrollment even when cross-validation says it reads the held-out dice "
            "no better than the shipped head (recorded as forced). Default false.",
        },
    },
}


def _unprocessable(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=detail)


@router.post(
    "/v1/tables/{table_id}/enrollment",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=EnrollmentJobOut,
    responses=errors(
        400,
        404,
        (409, "An enrollment job of this table is queued or running, or the face model cannot be enrolled."),
        (413, "The request body or the archive is over the byte limit."),
        (415, "The archive's bytes are not a zip archive, or it is declared as another type."),
        (
            422,
            "A bad form field; a corrupt zip archive, too large unpacked, with too many files or "
            "packed like a zip bomb; files not laid out as the source needs; or too few dice of a face.",
        ),
        (503, "The reader's models could not be loaded."),
        unprocessable=MESSAGE_OR_VALIDATION,
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": FORM_SCHEMA,
                    # The archive's type, as the one upload rule takes it (api/uploads.py): a zip.
                    "encoding": {"archive": {"contentType": "application/zip"}},
                }
            },
        }
    },
)
async def create_enrollment(
    request: Request, table_id: str, principal: Admin, database: DatabaseDep, settings: SettingsDep
) -> dict[str, Any]:
    """Enroll the table's dice (admin): the labelled dice are checked now, the fit runs as a job (202)."""
    from starlette.concurrency import run_in_threadpool

    await run_in_threadpool(_table_or_404, database, table_id)  # an unknown table is 404 before its form
    try:
        form = await request.form(max_files=1, max_fields=20)
    except (HTTPException, ValueError) as exc:  # a broken multipart body; too many parts
        detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail=f"not a readable form: {detail}") from exc
    try:
        fields = await _form_fields(form)
    finally:
        await form.close()  # the parts spooled to temporary files
    source, archive, max_dice, force = fields
    return await run_in_threadpool(
        _enroll,
        request=request,
        table_id=table_id,
        actor=principal.actor,
        database=database,
        settings=settings,
        source=source,
        archive=archive,
        max_dice=max_dice,
        force=force,
    )


async def _form_fields(form: Any) -> tuple[str, bytes | None, int, bool]:
    """(source, the archive's bytes or None, max_dice, force) of the form, checked against FORM_SCHEMA."""
    from starlette.datastructures import UploadFile

    unknown = sorted(set(form.keys()) - {"source", "archive", "max_dice", "force"})
    if unknown:
        raise _unprocessable(f"unknown form fields: {', '.join(map(repr, unknown))}")
    source = form.get("source")
    if source not in SOURCES:
        raise _unprocessable(f"the form field 'source' must be one of {', '.join(SOURCES)}")
    raw_max = form.get("max_dice", str(MAX_DICE))
    if (
        not isinstance(raw_max, str)
        or not (raw_max.strip().isascii() and raw_max.strip().isdigit())
        or not MIN_DICE <= int(raw_max) <= MAX_DICE
    ):
        raise _unprocessable(f"the form field 'max_dice' must be a whole number {MIN_DICE} .. {MAX_DICE}")
    raw_force = form.get("force", "false")
    force = raw_force.strip().lower() if isinstance(raw_force, str) else None
    if force not in ("true", "false", "1", "0"):
        raise _unprocessable("the form field 'force' must be true or false")
    archive = form.get("archive")
    if archive is not None and not isinstance(archive, UploadFile):
        raise _unprocessable("the form field 'archive' must be a file part (a zip archive)")
    data = None if archive is None else await archive.read(MAX_ARCHIVE_BYTES + 1)
    if data is not None and len(data) > MAX_ARCHIVE_BYTES:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE, detail=f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes"
        )
    if archive is not None and data is not None:  # the one upload rule (api/uploads.py)
        check_zip_upload(data, declared_type=archive.content_type, source="the 'archive' part")
    return str(source), data, int(raw_max), force in ("true", "1")


def _enroll(
    *,
    request: Request,
    table_id: str,
    actor: str,
    database: Database,
    settings: Settings,
    source: str,
    archive: bytes | None,
    max_dice: int,
    force: bool = False,
) -> dict[str, Any]:
    """Gather and check the labelled dice (4xx, nothing changed), then store the job and start it."""
    from api.enrollment_sources import check_enough, frame_examples, photo_examples, zip_files
    from vision.pips.enroll import EnrollDataError

    _table_or_404(database, table_id)
    report: dict[str, Any] = {}
    try:
        if source == "confirmed":
            if archive is not None:
                raise EnrollDataError("the confirmed source takes no archive: it reads the stored rolls")
            with database.read_session() as session:
                found = confirmed_examples(
                    session, table_id=table_id, evidence_dir=settings.evidence_dir, limit=max_dice
                )
            examples, report = found.examples, found.report()
        else:
            if archive is None:
                raise EnrollDataError(f"the {source} source needs a zip archive in the 'archive' part")
            files = zip_files(archive)
            if source == "photos":
                examples = photo_examples(files, limit=max_dice)
            else:
                examples, left = frame_examples(files, limit=max_dice)
                report = dict(left)
        check_enough(examples)
    except EnrollDataError as exc:
        detail = str(exc)
        if source == "confirmed" and report:
            detail += f" (rolls: {report['rolls_used']} used, {report['rolls_skipped']} skipped)"
        raise _unprocessable(detail) from exc
    model = _face_model(request, examples[0][0])
    try:
        job = create_job(
            database,
            table_id=table_id,
            source=source,
            examples=examples,
            report=report,
            actor=actor,
            force=force,
        )
    except JobConflictError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, detail=str(exc)) from exc
    start_job(
        database=database,
        job_id=job.id,
        table_id=table_id,
        model=model,
        examples=examples,
        calibration_dir=settings.calibration_dir,
        actor=actor,
        webhook_urls=settings.webhook_urls,
        force=force,
    )
    return job_document(job)


def _face_model(request: Request, crop: Any) -> Any:
    """The reader's face model, which reads must run for the enrollment to apply (409 when it has no
    embedding output to fit a correction on)."""
    from api.routes.reads import get_reader
    from vision.pips.crops import crops_to_tensor

    model = get_reader(request).onnx_models["pips"]
    if len(model.run(crops_to_tensor([crop]))) < 2:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            detail=f"the face model in service ({model.spec.tag}) has no embedding output: it cannot be "
            "enrolled; register one that has (throwbox train faces)",
        )
    return model


@router.get("/v1/enrollment-jobs/{job_id}", response_model=EnrollmentJobOut, responses=errors(404))
def get_enrollment_job(
    job_id: Annotated[str, Path(max_length=64)], _: Watcher, database: DatabaseDep
) -> dict[str, Any]:
    """An enrollment job's state and progress, the dice it uses, and its result or error."""
    with database.read_session() as session:
        row = session.get(EnrollmentJob, job_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no enrollment job {job_id!r}")
        return job_document(row)


def _load(settings: Any, table_id: str) -> Any:
    from calibration.errors import InvalidTableIdError
    from vision.pips.enrolled import EnrollmentError, load_enrollment

    try:
        enrollment = load_enrollment(settings.calibration_dir, table_id)
    except InvalidTableIdError:
        enrollment = None
    except EnrollmentError as exc:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, detail=f"table {table_id!r}: its enrollment: {exc}"
        ) from exc
    if enrollment is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            detail=f"table {table_id!r} has no enrollment: it reads with the shipped model",
        )
    return enrollment


@router.get(
    "/v1/tables/{table_id}/enrollment",
    response_model=EnrollmentSummaryOut,
    responses=errors(404, (503, "The stored enrollment is damaged.")),
)
def get_enrollment(table_id: str, _: Watcher, database: DatabaseDep, settings: SettingsDep) -> dict[str, Any]:
    """The table's enrollment: face model, SHA-256, dice per face, when fitted (surveillance, admin)."""
    _table_or_404(database, table_id)
    return enrollment_summary(_load(settings, table_id))


@router.delete(
    "/v1/tables/{table_id}/enrollment",
    response_model=EnrollmentSummaryOut,
    responses=errors(404, (503, "The stored enrollment is damaged.")),
)
def delete_enrollment_route(
    table_id: str, principal: Admin, database: DatabaseDep, settings: SettingsDep
) -> dict[str, Any]:
    """Remove the table's enrollment (admin): it reads with the shipped model again. Answers what it was."""
    _table_or_404(database, table_id)
    try:
        summary = enrollment_summary(_load(settings, table_id))
    except HTTPException as exc:
        if exc.status_code != status.HTTP_503_SERVICE_UNAVAILABLE:
            raise
        # A damaged file is removed too (that is how it is mended); the audit entry says it was damaged.
        summary = {"table_id": table_id, "face_model_sha256": "", "sha256": "", "dice_per_face": {},
                   "fitted_at": None, "damaged": str(exc.detail)}  # fmt: skip
    delete_recorded(
        database=database,
        calibration_dir=settings.calibration_dir,
        summary=summary,
        actor=principal.actor,
        webhook_urls=settings.webhook_urls,
    )
    return summary
