"""Events: a server-sent event stream and signed webhooks, both carrying the event id.

Every event is a row in `events`, written in the same transaction as the roll, settlement or alert it
announces, so an acknowledged change always has its event. The SSE stream (`GET /v1/events`) reads
that table from the id a client last saw (`Last-Event-ID`), so a reconnecting client misses nothing.

On PostgreSQL, publishing also sends `NOTIFY throwbox_events` (delivered when the transaction commits),
which wakes the streams of every replica at once (api/event_wakeup.py); they still poll, more slowly.

Webhooks use an outbox: publishing writes one `webhook_deliveries` row per configured URL in the same
transaction; `WebhookDispatcher` (a background thread) POSTs them and retries failures with doubling
back-off, up to `webhook_max_attempts`. Replicas each run one: a dispatcher claims due deliveries in a
short transaction (`FOR UPDATE SKIP LOCKED`, then `claimed_until`), POSTs them outside any transaction
and records the outcome, so two dispatchers never send the same delivery at once. Delivery is at least
once: receivers de-duplicate by the `X-Throwbox-Event-Id` header. The body is signed::

    X-Throwbox-Timestamp: <unix seconds>
    X-Throwbox-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>." + body)>
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import func, or_, select, text
from sqlalchemy.orm import Session

from api.audit import canonical_json
from api.db.models import AuditHead, Event, WebhookDelivery
from api.db.session import Database

log = logging.getLogger("throwbox.events")

# The PostgreSQL NOTIFY channel `publish` signals on (payload: the event id).
NOTIFY_CHANNEL = "throwbox_events"

EVENT_TYPES = (
    "round_opened",
    "wager_placed",
    "no_more_bets",
    "roll",
    "invalid_roll",
    "settlement",
    "correction",
    "alert",
    "read",
    "enrollment",
)


def as_utc(moment: datetime) -> datetime:
    """SQLite hands datetimes back naive; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def event_document(event: Event) -> dict[str, Any]:
    """The JSON form of an event, as the stream and the webhooks send it."""
    return {
        "id": event.id,
        "type": event.type,
        "table_id": event.table_id,
        "created_at": as_utc(event.created_at).isoformat(),
        "data": event.data,
    }


def publish(
    session: Session, *, event_type: str, table_id: str | None, data: dict[str, Any], webhook_urls: list[str]
) -> Event:
    """Record an event (and its webhook deliveries) in the caller's transaction.

    Call it after `audit.append` in the same transaction: the audit head's row lock then orders the
    transactions that publish, so event ids become visible in increasing order (on PostgreSQL too) and
    a stream reading "ids above the last one seen" never skips an event that commits late. The lock is
    the database's, so this holds across every process on one PostgreSQL (replicas): the id is drawn
    from the sequence while the lock is held, and the lock is released by the commit that shows it. On
    PostgreSQL the lock is taken here again (a no-op for a caller that holds it), so a caller that
    forgot `audit.append` still publishes in order; SQLite's writers are serialised by BEGIN IMMEDIATE.
    """
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        session.execute(select(AuditHead.id).where(AuditHead.id == 1).with_for_update())
    event = Event(type=event_type, table_id=table_id, data=data)
    session.add(event)
    session.flush()
    for url in webhook_urls:
        session.add(WebhookDelivery(event_id=event.id, url=url))
    if postgres:
        # Queued with the transaction: listeners hear it when (and only if) it commits.
        session.execute(
            text("SELECT pg_notify(:channel, :id)"), {"channel": NOTIFY_CHANNEL, "id": str(event.id)}
        )
    return event


def events_after(
    session: Session, *, after_id: int, limit: int, types: set[str] | None, table_id: str | None
) -> list[dict[str, Any]]:
    """Events with an id above `after_id`, oldest first."""
    query = select(Event).where(Event.id > after_id)
    if types:
        query = query.where(Event.type.in_(sorted(types)))
    if table_id is not None:
        query = query.where(Event.table_id == table_id)
    rows = session.scalars(query.order_by(Event.id).limit(limit)).all()
    return [event_document(row) for row in rows]


def head_event_id(session: Session) -> int:
    """The newest event's id (0 when there is none): where a stream "from now" starts."""
    return session.scalar(select(func.max(Event.id))) or 0


def latest_events(
    session: Session,
    *,
    after_id: int,
    up_to_id: int,
    limit: int,
    types: set[str] | None,
    table_id: str | None,
) -> list[dict[str, Any]]:
    """The newest `limit` events with `after_id < id <= up_to_id`, oldest first (the recent past)."""
    query = select(Event).where(Event.id > after_id, Event.id <= up_to_id)
    if types:
        query = query.where(Event.type.in_(sorted(types)))
    if table_id is not None:
        query = query.where(Event.table_id == table_id)
    rows = session.scalars(query.order_by(Event.id.desc()).limit(limit)).all()
    return [event_document(row) for row in reversed(rows)]


def sse_message(document: dict[str, Any]) -> str:
    """One server-sent event: its id, its type and its JSON on one data line."""
    return f"id: {document['id']}\nevent: {document['type']}\ndata: {canonical_json(document)}\n\n"


def sign(secret: bytes, *, timestamp: int, body: bytes) -> str:
    """The X-Throwbox-Signature value of a webhook body."""
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


# Deliveries one dispatcher claims at a time, and the slack added to their claim.
CLAIM_BATCH = 20
CLAIM_MARGIN_S = 10.0


class WebhookDispatcher:
    """Background thread that delivers the webhook outbox with retries."""

    def __init__(
        self,
        *,
        database: Database,
        secret: bytes,
        max_attempts: int,
        backoff_s: float,
        timeout_s: float,
        poll_s: float = 0.2,
    ) -> None:
        self._db = database
        self._secret = secret
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s
        self._timeout_s = timeout_s
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="throwbox-webhooks", daemon=True)

    def start(self) -> None:
        """Start delivering."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the delivery in progress."""
        self._stop.set()
        self._thread.join(timeout=self._timeout_s + 5)

    def _run(self) -> None:
        with httpx.Client(timeout=self._timeout_s) as client:
            while not self._stop.is_set():
                try:
                    delivered = self.deliver_due(client)
                except Exception:  # keep the thread alive; the rows stay due and are retried
                    log.exception("webhook delivery pass failed")
                    delivered = 0
                if delivered == 0:
                    self._stop.wait(self._poll_s)

    def claim_due(self, *, limit: int = CLAIM_BATCH) -> list[tuple[int, str, int, str]]:
        """Take up to `limit` due deliveries for this dispatcher: (delivery id, url, event id, body).

        A short transaction: the due rows are locked (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so another
        replica's dispatcher takes other rows instead of waiting; SQLite's writers are serialised anyway)
        and marked `claimed_until`, long enough for their POSTs; nothing is held open while they are sent.
        A claim that outlives a dead dispatcher expires and the delivery is due again.
        """
        now = datetime.now(UTC)
        with self._db.session() as session:
            due = session.scalars(
                select(WebhookDelivery)
                .where(
                    WebhookDelivery.delivered_at.is_(None),
                    WebhookDelivery.failed_at.is_(None),
                    WebhookDelivery.next_attempt_at <= now,
                    or_(WebhookDelivery.claimed_until.is_(None), WebhookDelivery.claimed_until <= now),
                )
                .order_by(WebhookDelivery.id)
                .limit(limit)
                .with_for_update(skip_locked=True)
            ).all()
            claimed_until = now + timedelta(seconds=(self._timeout_s + 1.0) * len(due) + CLAIM_MARGIN_S)
            jobs = []
            for delivery in due:
                delivery.claimed_until = claimed_until
                event = session.get(Event, delivery.event_id)
                if event is not None:
                    jobs.append((delivery.id, delivery.url, event.id, canonical_json(event_document(event))))
        return jobs

    def deliver_due(self, client: httpx.Client) -> int:
        """Claim the deliveries that are due, POST each once, record the outcome; return how many."""
        jobs = self.claim_due()
        for delivery_id, url, event_id, body in jobs:
            error = self._post(client, url=url, event_id=event_id, body=body.encode("utf-8"))
            with self._db.session() as session:
                row = session.get(WebhookDelivery, delivery_id, with_for_update=True)
                if row is None:
                    continue
                row.attempts += 1
                row.claimed_until = None
                if error is None:
                    row.delivered_at = datetime.now(UTC)
                    row.last_error = None
                else:
                    row.last_error = error
                    if row.attempts >= self._max_attempts:
                        row.failed_at = datetime.now(UTC)
                        log.warning("webhook event %s to %s given up: %s", event_id, url, error)
                    else:
                        delay_s = self._backoff_s * 2 ** (row.attempts - 1)
                        row.next_attempt_at = datetime.now(UTC) + timedelta(seconds=delay_s)
        return len(jobs)

    def _post(self, client: httpx.Client, *, url: str, event_id: int, body: bytes) -> str | None:
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "X-Throwbox-Event-Id": str(event_id),
            "X-Throwbox-Timestamp": str(timestamp),
            "X-Throwbox-Signature": sign(self._secret, timestamp=timestamp, body=body),
        }
        try:
            response = client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        if 200 <= response.status_code < 300:
            return None
        return f"HTTP {response.status_code}"
