"""The alert routes' service: list alerts, raise a review or a table worker's live alert (once per
`alert_key`), acknowledge one, review one with a note and list its reviews. Each function is one
transaction; its errors (api/errors.py) become HTTP answers in api/http_errors.py, so api/routes/alerts.py
and api/routes/alert_reviews.py only parse and answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from api import audit
from api.alerts import REVIEW_KIND, acknowledge_alert, alert_by_key, raise_alert
from api.auth import Principal, Role
from api.db.models import Alert, AuditEntry
from api.db.session import Database
from api.errors import ForbiddenError, NotFoundError, StateConflictError
from api.lookup import check_subject, check_table
from api.metrics import Metrics
from api.schemas.admin import AlertIn, AlertOut, ReviewOut


def alert_out(row: Alert) -> AlertOut:
    """Response form of an alert."""
    return AlertOut.model_validate(row, from_attributes=True)


def list_alerts(*, database: Database, table_id: str | None, open_only: bool, limit: int) -> list[AlertOut]:
    """Alerts, newest first, of one table or all (NotFoundError: `table_id` names no table)."""
    check_table(database, table_id)
    query = select(Alert)
    if table_id is not None:
        query = query.where(Alert.table_id == table_id)
    if open_only:
        query = query.where(Alert.acknowledged_at.is_(None))
    with database.read_session() as session:
        return [alert_out(row) for row in session.scalars(query.order_by(Alert.id.desc()).limit(limit))]


@dataclass(frozen=True)
class RaisedAlert:
    """The alert a request raised, or the one raised before with its `alert_key` (`replayed`)."""

    alert: AlertOut
    replayed: bool


def raise_requested(
    *, database: Database, body: AlertIn, principal: Principal, webhook_urls: list[str], metrics: Metrics
) -> RaisedAlert:
    """Raise a review (surveillance, admin) or a live alert (a table worker), once per `alert_key`.

    Raises:
        ForbiddenError: a worker raising a review, or another role a live kind.
        NotFoundError: `table_id` or `round_id` names nothing.
        UnprocessableError: `round_id` is a round of another table than `table_id`.
        StateConflictError: the `alert_key` names another alert.
    """
    worker = principal.role is Role.WORKER
    if worker == (body.kind == REVIEW_KIND):
        raise ForbiddenError(
            "a table worker raises live alert kinds only"
            if worker
            else f"role {principal.role.value!r} raises reviews only (kind 'review')"
        )
    if body.alert_key is not None and (replayed := _replayed(database, body)) is not None:
        return RaisedAlert(replayed, replayed=True)
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
                webhook_urls=webhook_urls,
                metrics=metrics,
                client_key=body.alert_key,
            )
            return RaisedAlert(alert_out(row), replayed=False)
    except IntegrityError:
        # The same key sent twice at once: the other request raised it (the key is unique).
        replayed = _replayed(database, body) if body.alert_key is not None else None
        if replayed is None:
            raise
        return RaisedAlert(replayed, replayed=True)


def _replayed(database: Database, body: AlertIn) -> AlertOut | None:
    """The alert raised before with `body.alert_key` (None: none); StateConflictError when it is not this
    alert."""
    if body.alert_key is None:
        return None
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
            raise StateConflictError(f"alert_key {body.alert_key!r} names another alert ({row.id})")
        return alert_out(row)


def acknowledge(*, database: Database, alert_id: int, actor: str) -> AlertOut:
    """Mark an alert as dealt with; the alert itself stays.

    Raises:
        NotFoundError: no such alert.
        StateConflictError: it is already acknowledged.
    """
    with database.session() as session:
        row = session.get(Alert, alert_id, with_for_update=True)
        if row is None:
            raise NotFoundError(f"no alert {alert_id}")
        if row.acknowledged_at is not None:
            raise StateConflictError(f"alert {alert_id} is already acknowledged")
        acknowledge_alert(session, row, actor=actor, payload={})
        session.flush()
        return alert_out(row)


# An alert's reviews are entries of the audit trail with this action, subject `alert:<id>`.
REVIEW_ACTION = "alert.review"


def _review_out(alert_id: int, entry: AuditEntry) -> ReviewOut:
    """Response form of a review: its audit entry."""
    payload: dict[str, Any] = json.loads(entry.payload)
    return ReviewOut(
        alert_id=alert_id, seq=entry.seq, at=entry.at, reviewer=entry.actor, note=str(payload["note"])
    )


def review_alert(*, database: Database, alert_id: int, actor: str, note: str) -> ReviewOut:
    """Mark an alert reviewed with a note: an audit entry; the alert stays as it was.

    Raises:
        NotFoundError: no such alert.
    """
    with database.session() as session:
        if session.get(Alert, alert_id) is None:
            raise NotFoundError(f"no alert {alert_id}")
        entry = audit.append(
            session, actor=actor, action=REVIEW_ACTION, subject=f"alert:{alert_id}", payload={"note": note}
        )
        return _review_out(alert_id, entry)


def reviews_of(*, database: Database, alert_id: int) -> list[ReviewOut]:
    """An alert's reviews, oldest first (NotFoundError: no such alert)."""
    with database.read_session() as session:
        if session.get(Alert, alert_id) is None:
            raise NotFoundError(f"no alert {alert_id}")
        entries = session.scalars(
            select(AuditEntry)
            .where(AuditEntry.action == REVIEW_ACTION, AuditEntry.subject == f"alert:{alert_id}")
            .order_by(AuditEntry.seq)
        ).all()
        return [_review_out(alert_id, e) for e in entries]
