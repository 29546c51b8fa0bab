"""The dashboard: one static page at `/` (HTML, CSS and JS served from `api/static/`, no build step, no CDN).

The page asks once for a dealer or surveillance key (kept in the browser's sessionStorage for the tab's
life; `#key=...` in the URL is taken and removed, which is how `throwbox serve --demo` hands over its
read-only surveillance key). With it, the page reads `/v1/events` (read, roll, settlement, alert, round
events), the table's current round, its recent rolls and alerts, and the annotated evidence frames, all
through the same API and roles as any other client: the page itself holds no data.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"


def install(app: FastAPI) -> None:
    """Serve the page at `/` and its files under `/static/`."""

    @app.get("/", include_in_schema=False)
    def dashboard() -> FileResponse:
        """The live table dashboard."""
        return FileResponse(STATIC_DIR / "dashboard.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
