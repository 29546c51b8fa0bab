"""Liveness, readiness and metrics: open (no key), meant for the internal network."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from api.deps import DatabaseDep, MetricsDep, SettingsDep
from api.schemas.admin import CheckOut, ReadyOut

router = APIRouter(tags=["health"])

# Other parts of the service (the reader) add checks here: name -> () -> (ok, detail).
ReadinessCheck = Callable[[], tuple[bool, str]]


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Say the process is up (open, for the internal network)."""
    return {"status": "ok"}


@router.get("/readyz", response_model=ReadyOut, responses={503: {"model": ReadyOut}})
def readyz(request: Request, database: DatabaseDep, settings: SettingsDep) -> JSONResponse:
    """Ready when the database answers, the data directory is writable and every registered check passes."""
    checks: dict[str, CheckOut] = {}
    db_ok = database.ping()
    checks["database"] = CheckOut(ok=db_ok, detail="reachable" if db_ok else "not reachable")
    data_ok = settings.data_dir.is_dir()
    checks["data_dir"] = CheckOut(ok=data_ok, detail="present" if data_ok else "missing")
    extra: dict[str, ReadinessCheck] = getattr(request.app.state, "readiness_checks", {})
    for name, check in sorted(extra.items()):
        try:
            ok, detail = check()
        except Exception as exc:  # a failing check makes the service not ready; it never crashes the probe
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        checks[name] = CheckOut(ok=ok, detail=detail)
    body = ReadyOut(ready=all(c.ok for c in checks.values()), checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if body.ready else 503)


@router.get("/metrics", response_class=Response)
def metrics(metrics: MetricsDep) -> Response:
    """Prometheus text format: requests, latency histogram, reads, verdicts, alerts, errors."""
    return metrics.render()
