"""Build the FastAPI application."""

from __future__ import annotations

from fastapi import FastAPI

from api.routes import health

API_TITLE = "throwbox"


def create_app() -> FastAPI:
    """Create the service with every router attached."""
    app = FastAPI(
        title=API_TITLE,
        version="0.1.0",
        description="Dice reader and High Roll Dice rules engine (58 Pa. Code ch. 593, 675a).",
    )
    app.include_router(health.router)
    return app
