"""Reads: one uploaded image in, the reader's JSON document out (docs/architecture.md), stored for audit.

`POST /v1/reads` (multipart: `image` file, optional `expect` and `table_id` fields), role reader. The read,
its annotated evidence frame and an audit entry are committed before the answer. The models are loaded
once per app, on the first read. A `table_id` naming a table with a stored calibration (its
`calibration_id`) reads the frame as that table's camera sees it, as `throwbox read --table` does: the judge
places the dice on the felt and, under an oblique camera, faces are cut from the die-top plane; the answer
names the calibration used (`calibration_id`, null when the frame was read from the image alone). With no
`expect`, a `table_id` also gives the count of dice: its game's (10 or 6), or the Extra Roll's own while its
round waits for it (api/read_count.py); the answer's "count" block says which, `"source": "none"` when the
read was judged with no count at all.

Hostile uploads: the image's format is told by its first bytes, and the part's declared type must agree
(api/uploads.py: a JPEG sent as `application/octet-stream` is read; as `text/plain` or `image/png`, a 415
naming both; text sent as `image/jpeg` is a 415; a corrupt PNG a 422); an image over the size
limits is refused from its header before it is decoded (422, vision/image.py); the request body is capped
(413, `THROWBOX_MAX_REQUEST_BYTES`); and at most `THROWBOX_MAX_CONCURRENT_READS` reads run at once, the
next waiting up to `THROWBOX_READ_QUEUE_S` for a slot and then answered 503 with `Retry-After`.
"""

from __future__ import annotations

import asyncio
import math
import threading
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, File, Form, HTTPException, Request, UploadFile, status
from pydantic import WithJsonSchema

from api.deps import DatabaseDep, MetricsDep, ReaderRole, SettingsDep
from api.lookup import check_table
from api.read_count import resolve_count, table_count
from api.read_records import store_read, table_calibration_id
from api.schemas.errors import AUTH_RESPONSES, MESSAGE_OR_VALIDATION, errors

if TYPE_CHECKING:
    from api.db.session import Database
    from api.settings import Settings
    from calibration.table import TableCalibration
    from vision.reader import Reader

router = APIRouter(prefix="/v1/reads", tags=["reads"], responses=AUTH_RESPONSES)

_READER_LOCK = threading.Lock()
MAX_UPLOAD_BYTES = 40 * 1024 * 1024
# The optional form fields, as the schema says them: left out when unused (a form has no null).
EXPECT_SCHEMA = {
    "type": "integer",
    "minimum": 1,
    "maximum": 100,
    "description": "How many dice the roll must have.",
}
TABLE_ID_SCHEMA = {"type": "string", "maxLength": 64, "description": "Table the frame comes from."}


def get_reader(request: Request) -> Reader:
    """The app's reader, loaded on first use (503 if the models cannot be loaded)."""
    from vision.onnx_session import ModelError
    from vision.reader import Reader

    with _READER_LOCK:
        reader: Reader | None = getattr(request.app.state, "reader", None)
        if reader is None:
            try:
                reader = Reader(threads=1, manifest_path=request.app.state.settings.manifest_path)
            except ModelError as exc:
                raise HTTPException(
                    status.HTTP_503_SERVICE_UNAVAILABLE, detail=f"reader unavailable: {exc}"
                ) from exc
            request.app.state.reader = reader
    return reader


async def read_slot(request: Request, settings: SettingsDep) -> AsyncIterator[None]:
    """Hold one of the app's read slots for the request; 503 with Retry-After when none frees in time."""
    slots: asyncio.Semaphore = request.app.state.read_slots
    try:
        async with asyncio.timeout(settings.read_queue_s):
            await slots.acquire()
    except TimeoutError:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            detail=f"busy: {settings.max_concurrent_reads} reads in progress; retry shortly",
            headers={"Retry-After": str(max(1, math.ceil(settings.read_queue_s)))},
        ) from None
    try:
        yield
    finally:
        slots.release()


ReadSlot = Annotated[None, Depends(read_slot)]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=errors(
        400,
        (404, "`table_id` names no table."),
        (413, "The request body or the image is over the byte limit."),
        (415, "The upload's bytes are not a JPEG, PNG, WebP, BMP or TIFF file, or not the type declared."),
        (422, "The upload is empty, corrupt or over the size limits; or a bad form field."),
        (409, "The table's stored calibration or enrollment cannot be loaded: that table's fault."),
        (503, "The reader is busy (see Retry-After) or its models could not be loaded."),
        unprocessable=MESSAGE_OR_VALIDATION,
    ),
)
def create_read(
    request: Request,
    principal: ReaderRole,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
    _slot: ReadSlot,
    image: Annotated[UploadFile, File(description="The frame: JPEG, PNG, WebP, BMP or TIFF.")],
    expect: Annotated[int | None, Form(ge=1, le=100), WithJsonSchema(EXPECT_SCHEMA)] = None,
    table_id: Annotated[str | None, Form(max_length=64), WithJsonSchema(TABLE_ID_SCHEMA)] = None,
) -> dict[str, Any]:
    """Read the dice in one image: verdict, reasons, every die's face and box, winner, match count."""
    import cv2

    from api.read_document import annotate_read, plain_jpeg, read_document
    from api.uploads import decode_upload
    from vision.types import Frame

    check_table(database, table_id)  # an id that names no table is 404, not a read judged with no count
    data = image.file.read(MAX_UPLOAD_BYTES + 1)
    if len(data) > MAX_UPLOAD_BYTES:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE, detail=f"the image is larger than {MAX_UPLOAD_BYTES} bytes"
        )
    # The one upload rule (api/uploads.py): the bytes decide; a declared type must agree with them.
    frame_bgr = decode_upload(
        data,
        declared_type=image.content_type,
        source="the 'image' part",
        max_side_px=settings.max_image_side_px,
        max_pixels=settings.max_image_pixels,
    )
    calibration = _table_calibration(database, settings, table_id, frame_bgr.shape[1], frame_bgr.shape[0])
    geometry = None
    if calibration is not None:
        from vision.table.geometry import TableGeometry

        geometry = TableGeometry.from_calibration(calibration)
    reader = _table_reader(get_reader(request), settings, table_id)
    from_table = None
    if expect is None and table_id is not None:
        with database.read_session() as session:
            from_table = table_count(session, table_id)
    count = resolve_count(expect, from_table)
    read_id = uuid.uuid4().hex
    roll = reader.read(
        Frame(image=frame_bgr, frame_id=read_id, table_id=table_id),
        expected_dice=count.expected,
        geometry=geometry,
    )
    document = {
        **read_document(roll),
        "calibration_id": None if calibration is None else calibration.calibration_id,
        "count": count.as_dict(),
    }
    ok, encoded = cv2.imencode(".jpg", annotate_read(frame_bgr, roll), [cv2.IMWRITE_JPEG_QUALITY, 90])
    evidence = bytes(encoded) if ok else b""
    sha256 = store_read(
        database=database,
        settings=settings,
        read_id=read_id,
        table_id=table_id,
        document=document,
        evidence_jpeg=evidence,
        actor=principal.actor,
        frame_jpeg=plain_jpeg(frame_bgr),
    )
    metrics.reads.labels(verdict=str(document["verdict"])).inc()
    return {"read_id": read_id, "evidence_sha256": sha256, **document}


def _table_reader(reader: Any, settings: Settings, table_id: str | None) -> Any:
    """The reader through the table's enrollment where it has one (vision/pips/enrolled.py; its reads name
    it in `models`), else the shared reader: the shipped face model; with the table's no-die filter where
    it has one (vision/table/no_die.py). A damaged enrollment or filter, or an enrollment fitted on another
    face model, is that table's fault (409, naming it; other tables read on)."""
    if table_id is None:
        return reader
    from calibration.errors import InvalidTableIdError
    from vision.pips.enrolled import EnrollmentError, load_enrollment
    from vision.table.no_die import NoDieError, load_no_die

    try:
        enrollment = load_enrollment(settings.calibration_dir, table_id)
        no_die = load_no_die(settings.calibration_dir, table_id)
    except InvalidTableIdError:
        return reader  # an id no file can be named after has no enrollment
    except (EnrollmentError, NoDieError) as exc:
        what = "enrollment" if isinstance(exc, EnrollmentError) else "no-die filter"
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"table {table_id!r}: its {what}: {exc}"
        ) from exc
    reader = reader if enrollment is None else reader.enrolled(enrollment)
    return reader if no_die is None else reader.with_no_die(no_die)


def _table_calibration(
    database: Database, settings: Settings, table_id: str | None, width: int, height: int
) -> TableCalibration | None:
    """The stored calibration of the table `table_id` names, if it has one; None for no table, an unknown
    table or one with no calibration. A frame of another resolution than the calibration's is refused (422);
    a stored calibration that cannot be read is that table's fault (409, naming it; other tables read on)."""
    if table_id is None:
        return None
    from calibration.errors import CalibrationError, CalibrationNotFoundError, ResolutionMismatchError
    from calibration.store import load_table

    calibration_id = table_calibration_id(database=database, table_id=table_id)
    if calibration_id is None:
        return None
    try:
        calibration = load_table(settings.calibration_dir, calibration_id, resolution_wh=(width, height))
    except CalibrationNotFoundError:
        return None
    except ResolutionMismatchError as exc:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, detail=f"table {table_id!r}: the image does not fit: {exc}"
        ) from exc
    except CalibrationError as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            detail=f"table {table_id!r}: its calibration {calibration_id!r} cannot be read: {exc}",
        ) from exc
    return calibration
