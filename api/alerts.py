"""Alerts: raised by the service itself (a reader that cannot decide, a dealer's call or payment the dice do
not show, a live camera lost) or by surveillance, stored with their audit entry and published as events.

Routes (`api/routes/alerts.py`, rolls, rounds, calls) and the live service (`api/live_service.py`) raise
them here, in the caller's transaction; only the routes speak HTTP.

The kinds (each described in docs/live.md, Alerts): the live loop's and live service's (`LiveAlertKind`,
which a table worker, issue 50, raises through `POST /v1/alerts`); `no_decision` (rolls),
`dealer_call_mismatch` (calls), `dealer_read_mismatch` (the table console, api/console_decisions.py),
`payout_mismatch` (payouts), `dice_bias_suspected` (api/fairness.py), `worker_lost` (api/leases.py: a
worker's lease expired without a release) and `review` (surveillance).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, get_args

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit
from api.db.models import Alert
from api.events import publish
from api.metrics import Metrics

# What the live loop (api/live.py) and the live service raise, so what a table worker may raise by REST.
LiveAlertKind = Literal[
    "camera_lost",
    "camera_recovered",
    "camera_moved",
    "camera_in_place",
    "camera_exposure",
    "camera_exposure_ok",
    "camera_grainy",
    "camera_grain_ok",
    "calibration_stale",
    "dealer_error",
    "layout_unverified",
    "roll_not_posted",
    "read_failed",
    "reader_unavailable",
    "enrollment_unusable",
    "live_loop_stopped",
    "round_not_ready",
]
LIVE_ALERT_KINDS: frozenset[str] = frozenset(get_args(LiveAlertKind))
REVIEW_KIND = "review"


def raise_alert(
    session: Session,
    *,
    kind: str,
    message: str,
    actor: str,
    table_id: str | None,
    round_id: int | None,
    data: dict[str, Any],
    webhook_urls: list[str],
    metrics: Metrics,
    client_key: str | None = None,
) -> Alert:
    """Store an alert, audit it and publish it as an event, in the caller's transaction (`client_key`: the
    sender's idempotency key, unique; see `alert_by_key`)."""
    row = Alert(
        kind=kind,
        message=message,
        table_id=table_id,
        round_id=round_id,
        data=data,
        raised_by=actor,
        client_key=client_key,
    )
    session.add(row)
    session.flush()
    audit.append(
        session,
        actor=actor,
        action="alert.raise",
        subject=f"alert:{row.id}",
        payload={"kind": kind, "message": message, "table_id": table_id, "round_id": round_id, "data": data},
    )
    publish(
        session,
        event_type="alert",
        table_id=table_id,
        data={"alert_id": row.id, "kind": kind, "message": message, "round_id": round_id, "data": data},
        webhook_urls=webhook_urls,
    )
    metrics.alerts.labels(kind=kind).inc()
    return row


def alert_by_key(session: Session, client_key: str) -> Alert | None:
    """The alert raised with this idempotency key, if any."""
    return session.scalars(select(Alert).where(Alert.client_key == client_key)).first()


def acknowledge_alert(session: Session, row: Alert, *, actor: str, payload: dict[str, Any]) -> None:
    """Mark an alert as dealt with by `actor`, in the audit trail too; the alert itself stays."""
    row.acknowledged_at = datetime.now(UTC)
    row.acknowledged_by = actor
    audit.append(session, actor=actor, action="alert.acknowledge", subject=f"alert:{row.id}", payload=payload)
