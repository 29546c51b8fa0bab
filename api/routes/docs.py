"""The API's documentation pages, `/docs` (Swagger UI) and `/redoc` (ReDoc), with every asset served by the
service itself: a casino floor network has no internet, and a page that loads its scripts from a CDN is
blank there.

The scripts, styles and icon come from the `fastapi-offline` package (Swagger UI and ReDoc distribution
files, MIT and Apache-2.0), served under `/docs-assets/`; FastAPI's own page builders point at them.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))
ASSETS_PATH = "/docs-assets"


def install(app: FastAPI) -> None:
    """Serve `/docs`, `/redoc` and their assets (build the app with `docs_url=None, redoc_url=None`)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=ASSETS_DIR), name="docs-assets")

    def urls(request: Request) -> tuple[str, str]:
        # Behind a proxy that mounts the service under a prefix, every URL carries the prefix.
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return root + str(app.openapi_url), root + ASSETS_PATH

    @app.get("/docs", include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        """Swagger UI: try the API with a key (Authorize, then `Bearer` is added)."""
        openapi_url, assets = urls(request)
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title}: API",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            # No badge from the public validator: it would call out to validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        """ReDoc: the API reference to read."""
        openapi_url, assets = urls(request)
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title}: API reference",
            redoc_js_url=f"{assets}/redoc.standalone.js",
            redoc_favicon_url=f"{assets}/favicon.png",
            with_google_fonts=False,
        )
