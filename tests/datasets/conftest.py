"""Fixtures for the generator tests: one renderer per session (starting EGL costs about a second)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from calibration.layout import ThrowBoxLayout
from datasets.synth.render import SceneRenderer


@pytest.fixture(scope="session")
def renderer() -> Iterator[SceneRenderer]:
    """The default renderer (EGL when it starts, TinyRenderer otherwise)."""
    with SceneRenderer(ThrowBoxLayout()) as r:
        yield r


@pytest.fixture(scope="session")
def tiny_renderer() -> Iterator[SceneRenderer]:
    """TinyRenderer only: the fallback path must work too."""
    with SceneRenderer(ThrowBoxLayout(), prefer_egl=False) as r:
        yield r
