"""Stored reads (made by `POST /v1/reads`): the JSON document, and the annotated frame checked against its
SHA-256. Read by dealer, surveillance and admin; the reader submits, it does not browse."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Response, status

from api.audit import EvidenceError, load_evidence
from api.db.models import Read
from api.deps import DatabaseDep, SettingsDep, Viewer
from api.events import as_utc
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/reads", tags=["reads"], responses=AUTH_RESPONSES)

ReadId = Annotated[str, Path(max_length=64)]


@router.get("/{read_id}", responses=errors(404))
def get_read(read_id: ReadId, _: Viewer, database: DatabaseDep) -> dict[str, Any]:
    """A stored read: the same document `POST /v1/reads` answered, with who made it and when."""
    with database.read_session() as session:
        row = session.get(Read, read_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no read {read_id!r}")
        return {
            "read_id": row.id,
            "table_id": row.table_id,
            "evidence_sha256": row.evidence_sha256,
            "created_by": row.created_by,
            "created_at": as_utc(row.created_at).isoformat(),
            **row.result,
        }


@router.get(
    "/{read_id}/frame",
    response_class=Response,
    responses={
        200: {"content": {"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}},
        **errors(404, (409, "The stored frame no longer matches its SHA-256.")),
    },
)
def get_read_frame(read_id: ReadId, _: Viewer, database: DatabaseDep, settings: SettingsDep) -> Response:
    """The read's annotated frame, after checking it against its SHA-256 (409 when it no longer matches)."""
    with database.read_session() as session:
        row = session.get(Read, read_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no read {read_id!r}")
        if row.evidence_sha256 is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"read {read_id!r} has no stored frame")
        try:
            data, media_type = load_evidence(
                session, evidence_dir=settings.evidence_dir, sha256=row.evidence_sha256
            )
        except EvidenceError as exc:
            raise HTTPException(status.HTTP_409_CONFLICT, detail=str(exc)) from exc
    return Response(data, media_type=media_type, headers={"X-Content-SHA256": row.evidence_sha256})
