"""Alerts: listed by dealer, surveillance and admin; reviews raised by surveillance, live alerts by a table
worker; acknowledged by admin."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from api.alerts import REVIEW_KIND, acknowledge_alert, alert_by_key, raise_alert
from api.auth import Role
from api.db.models import Alert
from api.deps import Admin, AlertRaiser, DatabaseDep, IdPath, MetricsDep, SettingsDep, TableIdQuery, Viewer
from api.lookup import check_subject, check_table
from api.schemas.admin import AlertIn, AlertOut
from api.schemas.errors import AUTH_RESPONSES, MESSAGE_OR_VALIDATION, errors

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=AUTH_RESPONSES)


def alert_out(row: Alert) -> AlertOut:
    """Response form of an alert."""
    return AlertOut.model_validate(row, from_attributes=True)


@router.get("", response_model=list[AlertOut], responses=errors((404, "`table_id` names no table.")))
def list_alerts(
    _: Viewer,
    database: DatabaseDep,
    table_id: TableIdQuery = None,
    open_only: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[AlertOut]:
    """Alerts, newest first (dealer, surveillance, admin); of one table with `table_id`."""
    check_table(database, table_id)
    query = select(Alert)
    if table_id is not None:
        query = query.where(Alert.table_id == table_id)
    if open_only:
        query = query.where(Alert.acknowledged_at.is_(None))
    with database.read_session() as session:
        return [alert_out(row) for row in session.scalars(query.order_by(Alert.id.desc()).limit(limit))]


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
    worker's live loop, the kinds the in-process loop raises)."""
    worker = principal.role is Role.WORKER
    if worker == (body.kind == REVIEW_KIND):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            detail="a table worker raises live alert kinds only"
            if worker
            else f"role {principal.role.value!r} raises reviews only (kind 'review')",
        )
    if body.alert_key is not None:
        replayed = _replayed(database, body)
        if replayed is not None:
            response.status_code = status.HTTP_200_OK
            return replayed
    try:
        with database.session() as session:
            check_subject(session, table_id=body.table_id, round_id=body.round_id)
            row = raise_alert(
                session,
                kind=body.kind,
                message=body.message,
                actor=principal.actor,
                table_id=body.table_id,
                round_id=body.round_id,
                data=body.data,
                webhook_urls=settings.webhook_urls,
                metrics=metrics,
                client_key=body.alert_key,
            )
            return alert_out(row)
    except IntegrityError:
        # The same key sent twice at once: the other request raised it (the key is unique).
        replayed = _replayed(database, body) if body.alert_key is not None else None
        if replayed is None:
            raise
        response.status_code = status.HTTP_200_OK
        return replayed


def _replayed(database: DatabaseDep, body: AlertIn) -> AlertOut | None:
    """The alert raised before with `body.alert_key` (None: none); 409 when it is not this alert."""
    assert body.alert_key is not None
    with database.read_session() as session:
        row = alert_by_key(session, body.alert_key)
        if row is None:
            return None
        if (row.kind, row.table_id, row.round_id, row.message) != (
            body.kind,
            body.table_id,
            body.round_id,
            body.message,
        ):
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                detail=f"alert_key {body.alert_key!r} names another alert ({row.id})",
            )
        return alert_out(row)


@router.post(
    "/{alert_id}/acknowledge",
    response_model=AlertOut,
    responses=errors(404, (409, "The alert is already acknowledged.")),
)
def acknowledge(alert_id: IdPath, principal: Admin, database: DatabaseDep) -> AlertOut:
    """Mark an alert as dealt with (admin); the alert itself stays."""
    with database.session() as session:
        row = session.get(Alert, alert_id, with_for_update=True)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no alert {alert_id}")
        if row.acknowledged_at is not None:
            raise HTTPException(status.HTTP_409_CONFLICT, detail=f"alert {alert_id} is already acknowledged")
        acknowledge_alert(session, row, actor=principal.actor, payload={})
        session.flush()
        return alert_out(row)
