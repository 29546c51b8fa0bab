"""The evidence routes' service: store an uploaded frame (audited) and fetch one back, checked.

Its routes (api/routes/evidence.py) only parse and answer; the errors raised here (api/errors.py) become
HTTP answers in api/http_errors.py. The frames themselves are api/audit.py's (`store_evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass

from api import audit
from api.audit import EvidenceError, load_evidence, store_evidence
from api.db.models import Evidence
from api.db.session import Database
from api.errors import NotFoundError, StateConflictError, UnprocessableError
from api.settings import Settings


def store(*, database: Database, settings: Settings, data: bytes, media_type: str, actor: str) -> str:
    """Keep a frame already checked to be a `media_type` image, audited; its SHA-256.

    Raises:
        UnprocessableError: the frame is refused (empty, larger than the service keeps).
    """
    try:
        with database.session() as session:
            sha256 = store_evidence(
                session,
                evidence_dir=settings.evidence_dir,
                data=data,
                media_type=media_type,
                max_bytes=settings.max_evidence_bytes,
            )
            audit.append(
                session,
                actor=actor,
                action="evidence.store",
                subject=f"evidence:{sha256}",
                payload={"size_bytes": len(data), "media_type": media_type},
            )
    except EvidenceError as exc:
        raise UnprocessableError(str(exc)) from exc
    return sha256


@dataclass(frozen=True)
class Frame:
    """A stored frame's bytes and media type, checked against its SHA-256."""

    data: bytes
    media_type: str


def fetch(*, database: Database, settings: Settings, sha256: str) -> Frame:
    """The frame stored under `sha256`, checked.

    Raises:
        NotFoundError: no such frame.
        StateConflictError: the stored bytes no longer match their SHA-256.
    """
    with database.read_session() as session:
        if session.get(Evidence, sha256) is None:
            raise NotFoundError(f"no evidence frame {sha256}")
        try:
            data, media_type = load_evidence(session, evidence_dir=settings.evidence_dir, sha256=sha256)
        except EvidenceError as exc:
            raise StateConflictError(str(exc)) from exc
    return Frame(data=data, media_type=media_type)
