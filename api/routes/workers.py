"""Table workers (issue 50): `throwbox worker` runs a table's live loop on its own machine, through these.

- `GET /v1/tables/{id}/live-config` (worker, admin): the table's game, dice, camera, calibration and
  enrollment, as the in-process loop loads them, and the lease TTL.
- `GET /v1/tables/{id}/enrollment/model` (worker, admin): the fine-tuned face model the table's enrollment
  record names (a refit by the table's fine-tune), its SHA-256 in `X-Throwbox-Sha256`, so a worker reads
  the table as the service does (api/worker/enrollment.py).
- `POST /v1/tables/{id}/lease` (worker, admin): take, renew (the heartbeat) or take over the table's lease
  (api/leases.py); 409 while another worker holds it. `DELETE` releases it (no `worker_lost` then).
- `PUT /v1/reads/{read_id}` (worker): record a read the worker made, its evidence frame uploaded first
  (`POST /v1/evidence`), with the audit entry and `read` event the in-process loop leaves; a replay of the
  same body is answered 200, another body under the same id 409.

Rolls, evidence and alerts go through their usual routes (`X-Throwbox-Lease-Epoch` fences a worker's rolls).
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response, status
from fastapi.responses import JSONResponse

from api.auth import Principal, WorkerIdError
from api.db.models import GameTable
from api.demo_table import DEMO_SOURCE, DEMO_TABLE
from api.deps import DatabaseDep, MetricsDep, SettingsDep, WorkerOrAdmin, WorkerRole
from api.leases import (
    WORKER_ID_PATTERN,
    LeaseHeldError,
    UnknownTableError,
    release_lease,
    take_lease,
)
from api.read_records import record_worker_read
from api.routes.read_results import ReadId
from api.schemas.errors import AUTH_RESPONSES, errors
from api.schemas.workers import LeaseHeldOut, LeaseIn, LeaseOut, LiveConfigOut, WorkerReadIn, WorkerReadOut
from api.settings import Settings

router = APIRouter(tags=["workers"], responses=AUTH_RESPONSES)


def _calibration_document(settings: Settings, calibration_id: str) -> dict[str, Any]:
    """The table's stored calibration file, verified as the in-process loop loads it."""
    from calibration.store import load_table, table_path

    calibration = load_table(settings.calibration_dir, calibration_id)
    document: dict[str, Any] = json.loads(
        table_path(settings.calibration_dir, calibration.table_id).read_text(encoding="utf-8")
    )
    return document


def _enrollment_document(settings: Settings, table_id: str) -> dict[str, Any] | None:
    """The table's enrollment file (checked as the reader loads it), or None when it has none."""
    from calibration.errors import InvalidTableIdError
    from vision.pips.enrolled import enrollment_path, load_enrollment

    try:
        if load_enrollment(settings.calibration_dir, table_id) is None:
            return None
    except InvalidTableIdError:
        return None  # an id no file can be named after has no enrollment
    document: dict[str, Any] = json.loads(
        enrollment_path(settings.calibration_dir, table_id).read_text(encoding="utf-8")
    )
    return document


def _no_die_document(settings: Settings, table_id: str) -> dict[str, Any] | None:
    """The table's no-die filter file (checked as the reader loads it), or None when it has none."""
    from calibration.errors import InvalidTableIdError
    from vision.table.no_die import load_no_die, no_die_path

    try:
        if load_no_die(settings.calibration_dir, table_id) is None:
            return None
    except InvalidTableIdError:
        return None
    document: dict[str, Any] = json.loads(no_die_path(settings.calibration_dir, table_id).read_text("utf-8"))
    return document


def _acting_as(principal: Principal, worker_id: str) -> str:
    """The worker id a lease request acts as; 403 when a bound worker key names another."""
    try:
        return principal.acts_as(worker_id) or worker_id
    except WorkerIdError as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, detail=str(exc)) from exc


@router.get(
    "/v1/tables/{table_id}/live-config",
    response_model=LiveConfigOut,
    responses=errors(
        404, (409, "The table's calibration or enrollment cannot be loaded (missing, changed or damaged).")
    ),
)
def live_config(
    table_id: str, _: WorkerOrAdmin, database: DatabaseDep, settings: SettingsDep
) -> LiveConfigOut:
    """What a worker needs to run the table's live loop (worker, admin)."""
    from calibration.errors import CalibrationError
    from vision.pips.enrolled import EnrollmentError
    from vision.table.no_die import NoDieError

    with database.read_session() as session:
        row = session.get(GameTable, table_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
        game, camera_source, calibration_id = row.game, row.camera_source, row.calibration_id
    if table_id == DEMO_TABLE and settings.demo:  # as LiveService plays it: the clips, with the croupier
        camera_source, calibration_id = DEMO_SOURCE, None
    try:
        calibration = _calibration_document(settings, calibration_id) if calibration_id else None
    except (CalibrationError, OSError, ValueError) as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"table {table_id!r}: its calibration {calibration_id!r}: {exc}"
        ) from exc
    try:
        enrollment = _enrollment_document(settings, table_id)
    except (EnrollmentError, OSError, ValueError) as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"table {table_id!r}: its enrollment: {exc}"
        ) from exc
    try:
        no_die = _no_die_document(settings, table_id)
    except (NoDieError, OSError, ValueError) as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"table {table_id!r}: its no-die filter: {exc}"
        ) from exc
    return LiveConfigOut(
        table_id=table_id,
        game=game,
        dice=10 if game == "hrd10" else 6,
        camera_source=camera_source,
        calibration_id=calibration_id,
        calibration=calibration,
        enrollment=enrollment,
        no_die=no_die,
        lease_ttl_s=settings.lease_ttl_s,
    )


@router.get(
    "/v1/tables/{table_id}/enrollment/model",
    response_class=Response,
    responses={
        200: {"content": {"application/octet-stream": {}}, "description": "The fine-tuned ONNX file."},
        **errors(404, (409, "The table's enrollment record or its fine-tuned file is damaged or missing.")),
    },
)
def enrollment_model(
    table_id: str, _: WorkerOrAdmin, database: DatabaseDep, settings: SettingsDep
) -> Response:
    """The fine-tuned face model the table's enrollment record names, checked against the record's SHA-256
    (worker, admin); 404 where there is no such table, or it has no record or one of the head only."""
    from calibration.errors import InvalidTableIdError
    from vision.pips.enrolled import EnrollmentError, load_enrollment

    with database.read_session() as session:
        if session.get(GameTable, table_id) is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
    try:
        enrollment = load_enrollment(settings.calibration_dir, table_id)
    except InvalidTableIdError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}") from exc
    except EnrollmentError as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"table {table_id!r}: its enrollment: {exc}"
        ) from exc
    if enrollment is None or enrollment.model_file is None:
        what = "no enrollment" if enrollment is None else "an enrollment of the head, no fine-tuned model"
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"table {table_id!r} has {what}")
    try:
        data = (settings.calibration_dir / enrollment.model_file).read_bytes()
    except OSError as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            detail=f"table {table_id!r}: its fine-tuned model {enrollment.model_file}: {exc.strerror or exc}",
        ) from exc
    sha256 = hashlib.sha256(data).hexdigest()
    if sha256 != enrollment.model_file_sha256:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            detail=f"table {table_id!r}: its fine-tuned model {enrollment.model_file} is not the file its "
            "record names (SHA-256 differs)",
        )
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"X-Throwbox-Sha256": sha256, "X-Throwbox-Model-File": enrollment.model_file},
    )


@router.post(
    "/v1/tables/{table_id}/lease",
    response_model=LeaseOut,
    responses={
        **errors(400, 404),
        409: {"model": LeaseHeldOut, "description": "Another worker holds the lease, unexpired."},
    },
)
def lease(
    table_id: str,
    body: LeaseIn,
    principal: WorkerOrAdmin,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> LeaseOut | JSONResponse:
    """Take, renew (the heartbeat, about every third of the TTL) or take over the table's lease (worker,
    admin). A takeover from another worker raises the epoch; the holder's renewal keeps it. A worker key
    bound to a worker id may name that id only (403)."""
    worker_id = _acting_as(principal, body.worker_id)
    try:
        granted = take_lease(
            database,
            table_id=table_id,
            worker_id=worker_id,
            ttl_s=settings.lease_ttl_s,
            actor=principal.actor,
            webhook_urls=settings.webhook_urls,
            metrics=metrics,
        )
    except UnknownTableError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc)) from exc
    except LeaseHeldError as exc:
        held = LeaseHeldOut(detail=str(exc), holder=exc.holder, expires_at=exc.expires_at)
        return JSONResponse(status_code=status.HTTP_409_CONFLICT, content=held.model_dump(mode="json"))
    return LeaseOut(
        table_id=granted.table_id,
        worker_id=granted.worker_id,
        epoch=granted.epoch,
        expires_at=granted.expires_at,
        ttl_s=granted.ttl_s,
    )


@router.delete(
    "/v1/tables/{table_id}/lease",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=errors(404),
)
def release(
    table_id: str,
    worker_id: Annotated[str, Query(pattern=WORKER_ID_PATTERN, description="The worker releasing it.")],
    principal: WorkerOrAdmin,
    database: DatabaseDep,
) -> Response:
    """Release the table's lease (worker, admin): a clean stop, no `worker_lost`. Nothing happens when
    `worker_id` does not hold it (another worker's lease is never released). A worker key bound to a worker
    id may name that id only (403)."""
    worker_id = _acting_as(principal, worker_id)
    try:
        release_lease(database, table_id=table_id, worker_id=worker_id, actor=principal.actor)
    except UnknownTableError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc)) from exc
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.put(
    "/v1/reads/{read_id}",
    status_code=status.HTTP_201_CREATED,
    response_model=WorkerReadOut,
    responses={
        200: {"description": "This read id was already recorded with this body.", "model": WorkerReadOut},
        **errors(
            400,
            (404, "No such table, or no such evidence frame (upload it first)."),
            (409, "This read id was already recorded with another body."),
        ),
    },
)
def put_read(
    read_id: ReadId,
    body: WorkerReadIn,
    response: Response,
    principal: WorkerRole,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> WorkerReadOut:
    """Record a read a table worker made (worker): the audit entry and `read` event of a live read."""
    document = body.document.model_dump(mode="json")
    duplicate = record_worker_read(
        database=database,
        settings=settings,
        read_id=read_id,
        table_id=body.table_id,
        evidence_sha256=body.evidence_sha256,
        document=document,
        actor=principal.actor,
    )
    if duplicate:
        response.status_code = status.HTTP_200_OK
    else:
        metrics.reads.labels(verdict=str(document["verdict"])).inc()
    return WorkerReadOut(
        read_id=read_id, table_id=body.table_id, evidence_sha256=body.evidence_sha256, duplicate=duplicate
    )
