"""Alerts: listed by dealer, surveillance and admin; reviews raised by surveillance, live alerts by a table
worker; acknowledged by admin. Each route parses, calls api/alert_service.py once and answers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from api import alert_service
from api.deps import Admin, AlertRaiser, DatabaseDep, IdPath, MetricsDep, SettingsDep, TableIdQuery, Viewer
from api.schemas.admin import AlertIn, AlertOut
from api.schemas.errors import AUTH_RESPONSES, MESSAGE_OR_VALIDATION, errors

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=AUTH_RESPONSES)


@router.get("", response_model=list[AlertOut], responses=errors((404, "`table_id` names no table.")))
def list_alerts(
    _: Viewer,
    database: DatabaseDep,
    table_id: TableIdQuery = None,
    open_only: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[AlertOut]:
    """Alerts, newest first (dealer, surveillance, admin); of one table with `table_id`."""
    return alert_service.list_alerts(database=database, table_id=table_id, open_only=open_only, limit=limit)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=AlertOut,
    responses={
        200: {"model": AlertOut, "description": "The alert already raised with this `alert_key` (a replay)."},
        **errors(
            400,
            (403, "This key's role may not do this, or not raise this kind (a worker: live kinds only)."),
            (404, "`table_id` or `round_id` names nothing."),
            (409, "This `alert_key` was used for another alert (another kind, table or message)."),
            (422, "A malformed alert, or a `round_id` of another table than `table_id`."),
            unprocessable=MESSAGE_OR_VALIDATION,
        ),
    },
)
def raise_review(
    body: AlertIn,
    principal: AlertRaiser,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
    response: Response,
) -> AlertOut:
    """Raise a review (surveillance, admin): an alert a person asked for; or a live alert (worker: a table
    worker's live loop, the kinds the in-process loop raises). An `alert_key` sent again answers the alert
    raised with it (200)."""
    raised = alert_service.raise_requested(
        database=database, body=body, principal=principal, webhook_urls=settings.webhook_urls, metrics=metrics
    )
    if raised.replayed:
        response.status_code = status.HTTP_200_OK
    return raised.alert


@router.post(
    "/{alert_id}/acknowledge",
    response_model=AlertOut,
    responses=errors(404, (409, "The alert is already acknowledged.")),
)
def acknowledge(alert_id: IdPath, principal: Admin, database: DatabaseDep) -> AlertOut:
    """Mark an alert as dealt with (admin); the alert itself stays."""
    return alert_service.acknowledge(database=database, alert_id=alert_id, actor=principal.actor)
