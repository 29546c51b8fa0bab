"""The audit trail over HTTP (surveillance, admin): entries, and a check of the whole chain."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import select

from api.audit import verify_chain
from api.db.models import AuditEntry
from api.deps import DatabaseDep, Watcher
from api.schemas import DB_INT_MAX
from api.schemas.admin import AuditEntryOut, AuditVerifyOut
from api.schemas.errors import AUTH_RESPONSES

router = APIRouter(prefix="/v1/audit", tags=["audit"], responses=AUTH_RESPONSES)


@router.get("", response_model=list[AuditEntryOut])
def list_entries(
    _: Watcher,
    database: DatabaseDep,
    after_seq: Annotated[int, Query(ge=0, le=DB_INT_MAX)] = 0,
    subject: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[AuditEntryOut]:
    """Entries after `after_seq`, oldest first, optionally of one subject (e.g. `round:12`)."""
    query = select(AuditEntry).where(AuditEntry.seq > after_seq)
    if subject is not None:
        query = query.where(AuditEntry.subject == subject)
    with database.read_session() as session:
        rows = session.scalars(query.order_by(AuditEntry.seq).limit(limit)).all()
        return [
            AuditEntryOut(
                seq=row.seq,
                at=row.at,
                actor=row.actor,
                action=row.action,
                subject=row.subject,
                payload=json.loads(row.payload),
                prev_hash=row.prev_hash,
                hash=row.hash,
            )
            for row in rows
        ]


@router.get("/verify", response_model=AuditVerifyOut)
def verify(_: Watcher, database: DatabaseDep) -> AuditVerifyOut:
    """Recompute the hash chain; `ok` is false at the first entry that was changed or removed."""
    with database.read_session() as session:
        report = verify_chain(session)
    return AuditVerifyOut(
        ok=report.ok, entries=report.entries, first_bad_seq=report.first_bad_seq, problem=report.problem
    )
