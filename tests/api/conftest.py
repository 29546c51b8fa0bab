"""Service fixtures: the app on a real uvicorn server, on SQLite (always) and PostgreSQL (when
THROWBOX_TEST_POSTGRES_URL names a server whose user may create databases), with one key per role."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from api.auth import Role, create_key
from api.main import create_app
from api.settings import Settings
from tests.conftest import serve_app

POSTGRES_ENV = "THROWBOX_TEST_POSTGRES_URL"


def tiny_png(*, value: int = 0) -> bytes:
    """A real 4x4 PNG: evidence must be an image its header backs (api/uploads.py)."""
    import cv2
    import numpy as np

    ok, data = cv2.imencode(".png", np.full((4, 4, 3), value, np.uint8))
    if not ok:
        raise RuntimeError("OpenCV could not encode a 4x4 PNG")
    return bytes(data)


BACKENDS = ("sqlite", "postgres")


@contextmanager
def database_url(backend: str, data_dir: Path) -> Iterator[str | None]:
    """None for SQLite under `data_dir`; for PostgreSQL, a fresh database dropped afterwards."""
    if backend == "sqlite":
        yield None
        return
    admin_url = os.environ.get(POSTGRES_ENV)
    if not admin_url:
        pytest.skip(f"PostgreSQL run: set {POSTGRES_ENV}=postgresql+psycopg://user:pw@host/db to include it")
    name = f"throwbox_test_{secrets.token_hex(6)}"
    admin = create_engine(make_url(admin_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@dataclass
class Service:
    """A running service: its URL, settings, and a key for each role (plus a supervisor dealer key)."""

    base_url: str
    settings: Settings
    keys: dict[str, str]
    client: httpx.Client

    def headers(self, who: str | None) -> dict[str, str]:
        """Authorization header for a role name (or "supervisor"); none for None."""
        return {} if who is None else {"Authorization": f"Bearer {self.keys[who]}"}

    def call(self, method: str, path: str, who: str | None, **kwargs: Any) -> httpx.Response:
        """One request as `who`."""
        headers = {**kwargs.pop("headers", {}), **self.headers(who)}
        return self.client.request(method, self.base_url + path, headers=headers, **kwargs)

    def ok(self, method: str, path: str, who: str | None, expect: int = 200, **kwargs: Any) -> Any:
        """One request that must answer `expect`; its JSON."""
        response = self.call(method, path, who, **kwargs)
        assert response.status_code == expect, (response.status_code, response.text)
        return response.json()


@contextmanager
def running_service(backend: str, data_dir: Path, **overrides: Any) -> Iterator[Service]:
    """Start the app on a free port with keys for every role."""
    with database_url(backend, data_dir) as url:
        settings = Settings(data_dir=data_dir, database_url=SecretStr(url) if url else None, **overrides)
        app = create_app(settings)
        with serve_app(app) as base_url, httpx.Client(timeout=30.0) as client:
            keys: dict[str, str] = {}
            with app.state.database.session() as session:
                for role in Role:
                    keys[role.value] = create_key(session, role=role, name=f"test-{role.value}").secret
                keys["supervisor"] = create_key(
                    session, role=Role.DEALER, name="test-supervisor", supervisor=True
                ).secret
            yield Service(base_url=base_url, settings=settings, keys=keys, client=client)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each database backend in turn."""
    name: str = request.param
    return name


@pytest.fixture
def service(backend: str, tmp_path: Path) -> Iterator[Service]:
    """The service on `backend`, fresh."""
    with running_service(backend, tmp_path / "data") as svc:
        yield svc


ServiceFactory = Callable[..., Any]


@pytest.fixture
def service_factory(tmp_path: Path) -> ServiceFactory:
    """`with service_factory(backend="sqlite", **settings) as svc:` for tests that need other settings."""

    def factory(backend: str = "sqlite", **overrides: Any) -> Any:
        return running_service(backend, tmp_path / f"data-{secrets.token_hex(3)}", **overrides)

    return factory
