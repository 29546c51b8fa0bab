"""Alert reviews (issue 8): surveillance (or an admin) marks an alert reviewed with a note.

The alert itself never changes; each review is an entry of the hash-chained audit trail (`alert.review`,
subject `alert:<id>`, the note in its payload), so the trail keeps both the alert and every review of it,
in order, and `GET /v1/alerts/{id}/reviews` reads them back from there. An admin still acknowledges
(`POST /v1/alerts/{id}/acknowledge`) when the matter is closed.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from api import audit
from api.db.models import Alert, AuditEntry
from api.deps import DatabaseDep, IdPath, Viewer, Watcher
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=AUTH_RESPONSES)

REVIEW_ACTION = "alert.review"


class ReviewIn(BaseModel):
    """A reviewer's note on an alert."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(min_length=1, max_length=4000, description="What the reviewer found or decided.")


class ReviewOut(BaseModel):
    """One review, as the audit trail keeps it."""

    alert_id: int
    seq: int
    at: str
    reviewer: str
    note: str


def _review_out(alert_id: int, entry: AuditEntry) -> ReviewOut:
    payload: dict[str, Any] = json.loads(entry.payload)
    return ReviewOut(
        alert_id=alert_id, seq=entry.seq, at=entry.at, reviewer=entry.actor, note=str(payload["note"])
    )


@router.post(
    "/{alert_id}/reviews",
    status_code=status.HTTP_201_CREATED,
    response_model=ReviewOut,
    responses=errors(400, 404),
)
def review(alert_id: IdPath, body: ReviewIn, principal: Watcher, database: DatabaseDep) -> ReviewOut:
    """Mark an alert reviewed with a note (surveillance, admin): an audit entry; the alert stays as it was."""
    with database.session() as session:
        if session.get(Alert, alert_id) is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no alert {alert_id}")
        entry = audit.append(
            session,
            actor=principal.actor,
            action=REVIEW_ACTION,
            subject=f"alert:{alert_id}",
            payload={"note": body.note},
        )
        return _review_out(alert_id, entry)


@router.get("/{alert_id}/reviews", response_model=list[ReviewOut], responses=errors(404))
def reviews(alert_id: IdPath, _: Viewer, database: DatabaseDep) -> list[ReviewOut]:
    """An alert's reviews, oldest first (dealer, surveillance, admin)."""
    with database.read_session() as session:
        if session.get(Alert, alert_id) is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no alert {alert_id}")
        entries = session.scalars(
            select(AuditEntry)
            .where(AuditEntry.action == REVIEW_ACTION, AuditEntry.subject == f"alert:{alert_id}")
            .order_by(AuditEntry.seq)
        ).all()
        return [_review_out(alert_id, e) for e in entries]
