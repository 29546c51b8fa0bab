"""Shared fixtures: a real uvicorn server on a free port, for API tests over real HTTP."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"


def free_port() -> int:
    """Ask the OS for a free TCP port on loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve_app(app: FastAPI) -> Iterator[str]:
    """Run `app` under a real uvicorn server in a thread; yield its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 15.0
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def live_server() -> Callable[[FastAPI], Iterator[str]]:
    """Factory fixture: `with live_server(app) as base_url: ...`."""
    return serve_app


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """A plain HTTP client with a short timeout."""
    with httpx.Client(timeout=10.0) as client:
        yield client


@pytest.fixture(scope="session")
def committed_reader() -> Any:
    """The whole reader with the committed models on one thread, shared by every test that reads frames;
    skips where models/manifest.json lists no detector, face and die-state models (models/train_*.py)."""
    from vision.onnx_session import manifest_lists

    if not manifest_lists("detector", "pips", "die_state"):
        pytest.skip("models/manifest.json lists no detector, face and die-state models (models/train_*.py)")
    from vision.reader import Reader

    return Reader(threads=1)
