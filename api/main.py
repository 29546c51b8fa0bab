"""Build the FastAPI application."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from api import fairness as fairness_watch
from api.auth import ALL_BUT_WORKER
from api.db.session import Database
from api.deps import require
from api.event_wakeup import EventWakeup
from api.events import WebhookDispatcher
from api.http_errors import install as install_error_handler
from api.leases import WorkerMonitor
from api.live_service import LiveService
from api.metrics import Metrics, install
from api.routes import (
    alert_reviews,
    alerts,
    audit,
    calls,
    console,
    dashboard,
    docs,
    enrollment,
    events,
    evidence,
    fairness,
    health,
    keys,
    learning,
    models,
    read_results,
    reads,
    rolls,
    rounds,
    settle,
    tables,
    workers,
)
from api.schemas.errors import AUTH_RESPONSES
from api.settings import Settings

API_TITLE = "throwbox"


def _documented_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the OpenAPI document gives the path (HEAD with GET, as Starlette serves it)."""
    methods: set[str] = set()
    for template, item in app.openapi()["paths"].items():
        if compile_path(template)[0].match(path):
            methods |= {method.upper() for method in item}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


async def _http_error_with_allow(request: Request, exc: Exception) -> Response:
    """FastAPI's answer to an HTTP error, with a 405's `Allow` naming every method the path has.

    Starlette's 405 names only the methods of the first route whose path matched, so where GET and POST
    of one path are two routes, `OPTIONS` or `PUT` there would be told only one of them. The methods are
    read from the OpenAPI document, which is what clients go by.
    """
    if not isinstance(exc, StarletteHTTPException):  # registered for this class only
        raise exc
    if exc.status_code == 405:
        methods = _documented_methods(request.app, request.url.path)
        if methods:
            exc = StarletteHTTPException(405, detail=exc.detail, headers={"Allow": ", ".join(methods)})
    return await http_exception_handler(request, exc)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Create the service with every router attached.

    The database is migrated to the latest schema when the app starts (its lifespan; with
    `migrate_on_start` false it must already be at head, `throwbox db upgrade`), and the webhook
    dispatcher (and, on PostgreSQL, the event listener that wakes the SSE streams) runs while it is up.
    """
    settings = settings if settings is not None else Settings()
    database = Database(settings.resolved_database_url)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        if settings.migrate_on_start:
            database.migrate()
        else:
            database.check_at_head()
        wakeup = None
        if EventWakeup.supported(database):
            wakeup = EventWakeup(database)
            wakeup.start()
            app.state.event_wakeup = wakeup
        # The fairness watch's charts take seconds to design: done now, aside, not in the first roll.
        threading.Thread(
            target=fairness_watch.warm_up, args=(database,), name="fairness-warm-up", daemon=True
        ).start()
        dispatcher = None
        if settings.webhook_urls and settings.webhook_secret is not None:
            dispatcher = WebhookDispatcher(
                database=database,
                secret=settings.webhook_secret.get_secret_value().encode("utf-8"),
                max_attempts=settings.webhook_max_attempts,
                backoff_s=settings.webhook_backoff_s,
                timeout_s=settings.webhook_timeout_s,
            )
            dispatcher.start()
        # Table workers' leases: a lease that expires without a release raises `worker_lost` (api/leases.py).
        monitor = WorkerMonitor(
            database=database,
            webhook_urls=settings.webhook_urls,
            metrics=metrics,
            interval_s=settings.worker_check_s,
        )
        monitor.start()
        # The live table loops (demo table, cameras): they post to this service once it answers.
        live = LiveService(settings=settings, database=database, metrics=metrics, app_state=app.state)
        app.state.live = live
        live.start()
        try:
            yield
        finally:
            live.stop()
            monitor.stop()
            if dispatcher is not None:
                dispatcher.stop()
            if wakeup is not None:
                wakeup.stop()
            database.dispose()

    app = FastAPI(
        title=API_TITLE,
        version="0.1.0",
        description="Dice reader and High Roll Dice rules engine (58 Pa. Code ch. 593, 675a).",
        lifespan=lifespan,
        # Served by api.routes.docs from the service's own files, not a CDN.
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        # A body over the cap is refused as it arrives, not after it was stored: FastAPI's own limit answers
        # 413 "Content Too Large" (plain text when the declared Content-Length is over it, as it is read).
        max_body_size=settings.max_request_bytes,
        # `/v1/tables/` is not `/v1/tables`: an empty path segment is 404, never a redirect to a list or to a
        # path that answers an undocumented 405 (issue 57).
        redirect_slashes=False,
    )
    app.state.settings = settings
    # Reads in progress at once (api/routes/reads.py waits settings.read_queue_s for a slot, then 503s).
    app.state.read_slots = asyncio.Semaphore(settings.max_concurrent_reads)
    app.state.database = database
    app.state.event_wakeup = None  # api.event_wakeup.EventWakeup on PostgreSQL, while the app is up
    app.state.metrics = metrics
    install(app, metrics)
    app.include_router(health.router)
    app.include_router(tables.router)
    app.include_router(rounds.router)
    app.include_router(rolls.router)
    app.include_router(calls.router)
    app.include_router(evidence.router)
    app.include_router(alerts.router)
    app.include_router(alert_reviews.router)
    app.include_router(fairness.router)
    app.include_router(events.router)
    app.include_router(audit.router)
    app.include_router(keys.router)
    app.include_router(models.router)
    # The settle calculator changes nothing, but like every route it needs a key (any role but a worker's).
    app.include_router(
        settle.router, dependencies=[Depends(require(*ALL_BUT_WORKER))], responses=AUTH_RESPONSES
    )
    app.include_router(reads.router)
    app.include_router(read_results.router)
    app.include_router(workers.router)
    app.include_router(enrollment.router)
    app.include_router(console.router)
    app.include_router(learning.router)
    dashboard.install(app)
    console.install(app)
    docs.install(app)
    app.add_exception_handler(StarletteHTTPException, _http_error_with_allow)
    install_error_handler(app)
    return app
