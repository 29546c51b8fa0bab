"""Build the FastAPI application."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from api import fairness as fairness_watch
from api.auth import ALL_ROLES
from api.db.session import Database
from api.deps import require
from api.events import WebhookDispatcher
from api.live_service import LiveService
from api.metrics import Metrics, install
from api.routes import (
    alert_reviews,
    alerts,
    audit,
    calls,
    dashboard,
    events,
    evidence,
    fairness,
    health,
    keys,
    read_results,
    reads,
    rolls,
    rounds,
    settle,
    tables,
)
from api.settings import Settings

API_TITLE = "throwbox"


def create_app(settings: Settings | None = None) -> FastAPI:
    """Create the service with every router attached.

    The database is migrated to the latest schema when the app starts (its lifespan), and the webhook
    dispatcher runs while it is up.
    """
    settings = settings if settings is not None else Settings()
    database = Database(settings.resolved_database_url)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        database.migrate()
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
        # The live table loops (demo table, cameras): they post to this service once it answers.
        live = LiveService(settings=settings, database=database, metrics=metrics, app_state=app.state)
        app.state.live = live
        live.start()
        try:
            yield
        finally:
            live.stop()
            if dispatcher is not None:
                dispatcher.stop()
            database.dispose()

    app = FastAPI(
        title=API_TITLE,
        version="0.1.0",
        description="Dice reader and High Roll Dice rules engine (58 Pa. Code ch. 593, 675a).",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.database = database
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
    # The settle calculator changes nothing, but like every route it needs a key (any role).
    app.include_router(settle.router, dependencies=[Depends(require(*ALL_ROLES))])
    app.include_router(reads.router)
    app.include_router(read_results.router)
    dashboard.install(app)
    return app
