"""Store one read: its annotated evidence frame (by SHA-256), the `reads` row, an audit entry and a `read`
event. One implementation for `POST /v1/reads`, the live loop and a table worker's `PUT /v1/reads/{id}`, so
all leave the same trail."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from api import audit
from api.audit import store_evidence
from api.db.models import Read
from api.events import publish
from api.settings import Settings


def record_read(
    session: Session,
    *,
    settings: Settings,
    read_id: str,
    table_id: str | None,
    document: dict[str, Any],
    evidence_jpeg: bytes | None,
    actor: str,
    details: dict[str, Any] | None = None,
    evidence_sha256: str | None = None,
) -> str | None:
    """Store the read in `session` and return the evidence frame's SHA-256 (None: no frame kept).

    `details` are extra fields for the audit entry and the event (frame id, calibration id, ...).
    A frame larger than `settings.max_evidence_bytes` is not kept; the read still is. Without
    `evidence_jpeg`, `evidence_sha256` names a frame stored already (a worker uploaded it first).
    """
    sha256 = evidence_sha256
    if evidence_jpeg and len(evidence_jpeg) <= settings.max_evidence_bytes:
        sha256 = store_evidence(
            session,
            evidence_dir=settings.evidence_dir,
            data=evidence_jpeg,
            media_type="image/jpeg",
            max_bytes=settings.max_evidence_bytes,
        )
    session.add(
        Read(id=read_id, table_id=table_id, result=document, evidence_sha256=sha256, created_by=actor)
    )
    extra = details or {}
    audit.append(
        session,
        actor=actor,
        action="read.create",
        subject=f"read:{read_id}",
        payload={
            "verdict": document["verdict"],
            "faces": document["faces"],
            "evidence_sha256": sha256,
            **{k: v for k, v in extra.items() if k in ("frame_id", "calibration_id")},
        },
    )
    publish(
        session,
        event_type="read",
        table_id=table_id,
        data={
            "read_id": read_id,
            "verdict": document["verdict"],
            "faces": document["faces"],
            "evidence_sha256": sha256,
            **extra,
        },
        webhook_urls=settings.webhook_urls,
    )
    return sha256


def live_read_details(document: dict[str, Any]) -> dict[str, Any]:
    """The audit entry's and event's extra fields of a live read (the in-process loop's, a worker's)."""
    return {
        "reasons": document.get("reasons"),
        "winner": document.get("winner"),
        "match_count": document.get("match_count"),
        "frame_id": document.get("frame_id"),
        "calibration_id": document.get("calibration_id"),
        "source": document.get("source"),
        "layout": document.get("layout"),
        "extra_roll": document.get("extra_roll"),
    }
