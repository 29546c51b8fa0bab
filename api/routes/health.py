"""Liveness endpoint."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """Say the process is up (open, for the internal network)."""
    return {"status": "ok"}
