"""Liveness, readiness and metrics: open (no key), meant for the internal network."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy import select

from api.db.models import GameTable
from api.db.session import Database
from api.deps import DatabaseDep, MetricsDep, SettingsDep
from api.schemas.admin import CheckOut, ReadyOut, TableReadyOut
from api.settings import Settings

router = APIRouter(tags=["health"])
log = logging.getLogger("throwbox.health")

MODELS_RETRY_S = 30.0

# Other parts of the service (the reader) add checks here: name -> () -> (ok, detail).
ReadinessCheck = Callable[[], tuple[bool, str]]


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Say the process is up (open, for the internal network)."""
    return {"status": "ok"}


@router.get("/readyz", response_model=ReadyOut, responses={503: {"model": ReadyOut}})
def readyz(request: Request, database: DatabaseDep, settings: SettingsDep) -> JSONResponse:
    """Ready when the service itself can serve: the database answers, the data directory exists and the
    reader's models are there (and any check registered in `app.state.readiness_checks` passes).

    Each table's own faults (its calibration, enrollment, camera: api/table_faults.py) are listed under
    `tables` and never make the service unready: one table's broken calibration stops that table only.
    """
    checks: dict[str, CheckOut] = {}
    db_ok = database.ping()
    checks["database"] = CheckOut(ok=db_ok, detail="reachable" if db_ok else "not reachable")
    data_ok = settings.data_dir.is_dir()
    checks["data_dir"] = CheckOut(ok=data_ok, detail="present" if data_ok else "missing")
    tables = _tables(request, database, settings) if db_ok else {}
    models_ok, models_detail = _models(request)
    checks["models"] = CheckOut(ok=models_ok, detail=models_detail)
    extra: dict[str, ReadinessCheck] = getattr(request.app.state, "readiness_checks", {})
    for name, check in sorted(extra.items()):
        try:
            ok, detail = check()
        except Exception as exc:  # a failing check makes the service not ready; it never crashes the probe
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        checks[name] = CheckOut(ok=ok, detail=detail)
    body = ReadyOut(ready=all(c.ok for c in checks.values()), checks=checks, tables=tables)
    return JSONResponse(body.model_dump(), status_code=200 if body.ready else 503)


def _models(request: Request) -> tuple[bool, str]:
    """The reader's models are loaded: the first probe loads them (as the first read would; SHA-256
    checked against the manifest) and keeps the reader for `POST /v1/reads`; a failure says why."""
    if getattr(request.app.state, "reader", None) is not None:
        return True, "loaded"
    try:
        from vision import onnx_session
        from vision.reader import Reader
    except ImportError as exc:  # a deployment without the reader
        return False, f"the reader is not installed ({exc.name})"
    # A failed load is remembered for a while, so a probe every few seconds does not reload weights.
    failed: tuple[float, str] | None = getattr(request.app.state, "models_failed", None)
    if failed is not None and time.monotonic() - failed[0] < MODELS_RETRY_S:
        return False, failed[1]
    try:
        reader = Reader(threads=1, manifest_path=request.app.state.settings.manifest_path)
    except onnx_session.ModelError as exc:
        request.app.state.models_failed = (time.monotonic(), str(exc))
        return False, str(exc)
    if getattr(request.app.state, "reader", None) is None:
        request.app.state.reader = reader
    return True, "loaded"


def _tables(request: Request, database: Database, settings: Settings) -> dict[str, TableReadyOut]:
    """Each table and its own faults (reported; none of them makes the service unready)."""
    from api.table_service import faults_of

    try:
        with database.read_session() as session:
            rows = list(session.scalars(select(GameTable).order_by(GameTable.id)))
            faults = faults_of(session, request=request, settings=settings, rows=rows)
    except Exception:  # the database check reports the database itself; a probe never crashes
        log.exception("readyz: cannot list the tables' faults")
        return {}
    return {
        table_id: TableReadyOut(ok=not found, faults=[f"{f.part}: {f.detail}" for f in found])
        for table_id, found in faults.items()
    }


@router.get("/metrics", response_class=Response)
def metrics(metrics: MetricsDep) -> Response:
    """Prometheus text format: requests, latency histogram, reads, verdicts, alerts, errors."""
    return metrics.render()
