"""Alert reviews (issue 8): surveillance (or an admin) marks an alert reviewed with a note.

The alert itself never changes; each review is an entry of the hash-chained audit trail (`alert.review`,
subject `alert:<id>`, the note in its payload), so the trail keeps both the alert and every review of it,
in order, and `GET /v1/alerts/{id}/reviews` reads them back from there. An admin still acknowledges
(`POST /v1/alerts/{id}/acknowledge`) when the matter is closed.
"""

from __future__ import annotations

from fastapi import APIRouter, status

from api import alert_service
from api.deps import DatabaseDep, IdPath, Viewer, Watcher
from api.schemas.admin import ReviewIn, ReviewOut
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=AUTH_RESPONSES)


@router.post(
    "/{alert_id}/reviews",
    status_code=status.HTTP_201_CREATED,
    response_model=ReviewOut,
    responses=errors(400, 404),
)
def review(alert_id: IdPath, body: ReviewIn, principal: Watcher, database: DatabaseDep) -> ReviewOut:
    """Mark an alert reviewed with a note (surveillance, admin): an audit entry; the alert stays as it was."""
    return alert_service.review_alert(
        database=database, alert_id=alert_id, actor=principal.actor, note=body.note
    )


@router.get("/{alert_id}/reviews", response_model=list[ReviewOut], responses=errors(404))
def reviews(alert_id: IdPath, _: Viewer, database: DatabaseDep) -> list[ReviewOut]:
    """An alert's reviews, oldest first (dealer, surveillance, admin)."""
    return alert_service.reviews_of(database=database, alert_id=alert_id)
