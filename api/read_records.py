"""Store one read: its annotated evidence frame (by SHA-256), the `reads` row, an audit entry and a `read`
event. One implementation for `POST /v1/reads`, the live loop and a table worker's `PUT /v1/reads/{id}`, so
all leave the same trail; and the transactions those routes open for it (`store_read`, `record_worker_read`,
`table_calibration_id`), whose errors (api/errors.py) api/http_errors.py answers."""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api import audit
from api.audit import store_evidence
from api.db.models import Evidence, GameTable, Read
from api.db.session import Database
from api.errors import NotFoundError, StateConflictError
from api.events import publish
from api.settings import Settings

# The read document's key naming the plain frame (the camera's, nothing drawn on it) in the evidence store.
FRAME_KEY = "frame_sha256"


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
    frame_jpeg: bytes | None = None,
) -> str | None:
    """Store the read in `session` and return the evidence frame's SHA-256 (None: no frame kept).

    `details` are extra fields for the audit entry and the event (frame id, calibration id, ...).
    A frame larger than `settings.max_evidence_bytes` is not kept; the read still is. Without
    `evidence_jpeg`, `evidence_sha256` names a frame stored already (a worker uploaded it first).

    `frame_jpeg` is the frame as the camera gave it, with nothing drawn on it: kept in the evidence store
    too, its SHA-256 the document's `frame_sha256` (`FRAME_KEY`). The evidence frame is annotated (boxes,
    faces, reasons drawn over the dice) for people to look at; a table learns its dice from the plain one
    (`api.enrollment.plain_frame`). A worker uploads both and names the plain one in its document.
    """

    def kept(jpeg: bytes | None) -> str | None:
        """The JPEG stored in the evidence store (its SHA-256); None: none, or larger than the limit."""
        if not jpeg or len(jpeg) > settings.max_evidence_bytes:
            return None
        return store_evidence(
            session,
            evidence_dir=settings.evidence_dir,
            data=jpeg,
            media_type="image/jpeg",
            max_bytes=settings.max_evidence_bytes,
        )

    if (plain := kept(frame_jpeg)) is not None:
        document = {**document, FRAME_KEY: plain}
    sha256 = kept(evidence_jpeg) or evidence_sha256
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


def store_read(
    *,
    database: Database,
    settings: Settings,
    read_id: str,
    table_id: str | None,
    document: dict[str, Any],
    evidence_jpeg: bytes,
    actor: str,
    frame_jpeg: bytes | None = None,
) -> str | None:
    """`record_read` of a read the service made, in a transaction of its own; the evidence frame's SHA-256."""
    with database.session() as session:
        return record_read(
            session,
            settings=settings,
            read_id=read_id,
            table_id=table_id,
            document=document,
            evidence_jpeg=evidence_jpeg,
            actor=actor,
            frame_jpeg=frame_jpeg,
        )


def table_calibration_id(*, database: Database, table_id: str) -> str | None:
    """The calibration id the table names; None for an unknown table or one with none."""
    with database.session() as session:
        table = session.get(GameTable, table_id)
        return None if table is None else table.calibration_id


def record_worker_read(
    *,
    database: Database,
    settings: Settings,
    read_id: str,
    table_id: str,
    evidence_sha256: str | None,
    document: dict[str, Any],
    actor: str,
) -> bool:
    """Store a table worker's read; True when it was stored already with this body. The same read sent twice
    at once (PostgreSQL: the other one stored it) is tried once more, and then is that duplicate.

    Raises:
        StateConflictError: the read id was recorded with another body.
        NotFoundError: no such table, or no such evidence frame.
    """
    try:
        return _record_worker_read_once(
            database=database, settings=settings, read_id=read_id, table_id=table_id,
            evidence_sha256=evidence_sha256, document=document, actor=actor,
        )  # fmt: skip
    except IntegrityError:
        return _record_worker_read_once(
            database=database, settings=settings, read_id=read_id, table_id=table_id,
            evidence_sha256=evidence_sha256, document=document, actor=actor,
        )  # fmt: skip


def _record_worker_read_once(
    *,
    database: Database,
    settings: Settings,
    read_id: str,
    table_id: str,
    evidence_sha256: str | None,
    document: dict[str, Any],
    actor: str,
) -> bool:
    """One try of `record_worker_read`."""
    with database.session() as session:
        existing = session.get(Read, read_id)
        if existing is not None:
            same = (
                existing.table_id == table_id
                and existing.result == document
                and existing.evidence_sha256 == evidence_sha256
            )
            if not same:
                raise StateConflictError(f"read {read_id!r} was recorded with another body")
            return True
        if session.get(GameTable, table_id) is None:
            raise NotFoundError(f"no table {table_id!r}")
        if evidence_sha256 is not None and session.get(Evidence, evidence_sha256) is None:
            raise NotFoundError(f"no evidence frame {evidence_sha256}; upload it first (POST /v1/evidence)")
        record_read(
            session,
            settings=settings,
            read_id=read_id,
            table_id=table_id,
            document=document,
            evidence_jpeg=None,
            evidence_sha256=evidence_sha256,
            actor=actor,
            details=live_read_details(document),
        )
        session.flush()
    return False
