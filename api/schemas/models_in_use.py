"""The models the service reads with (`GET /v1/models`, `POST /v1/models/reload`)."""

from __future__ import annotations

from pydantic import BaseModel


class ModelOut(BaseModel):
    """One model in use: its manifest name, tag (weight file's stem), version and SHA-256."""

    name: str
    tag: str
    version: str
    sha256: str
    temperature: float | None = None
    sure_bar: float | None = None


class ModelsOut(BaseModel):
    """The models the service's reader has loaded, and on a reload those whose weights changed."""

    manifest: str
    models: list[ModelOut]
    changed: list[str] = []
