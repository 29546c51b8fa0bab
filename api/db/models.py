"""SQLAlchemy 2 models of everything the service stores.

Money never lives in a float column: wagers and settlements are stored as the JSON documents the rules
engine reads and writes, with amounts as decimal strings.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Boolean, DateTime, Dialect, Float, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    """Timezone-aware now, in UTC."""
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """A moment stored in UTC and read back timezone-aware in UTC, on every backend.

    PostgreSQL keeps `timestamptz` and hands back the session's zone; SQLite has no zone at all and hands
    back naive values (its DATETIME drops the offset of what it is given, without converting). So values are
    converted to UTC on the way in (stored naive on SQLite, as before) and marked UTC on the way out. A naive
    value is refused: it names no moment.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """UTC for the database (naive UTC on SQLite); a naive value is a programming error."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"a naive datetime names no moment; give it a zone: {value!r}")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Timezone-aware UTC, whatever the backend handed back."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Base of every model; `Base.metadata` is what Alembic migrates."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class ApiKey(Base):
    """An API key: only its SHA-256 is stored; the key itself is shown once, at creation."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(20))
    supervisor: Mapped[bool] = mapped_column(Boolean, default=False)
    key_prefix: Mapped[str] = mapped_column(String(32), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # A `worker` key bound to one worker id (migration 0007): leases, releases and rolls it sends name that
    # id or are refused (api.auth.Principal.acts_as). None: any id, as before.
    worker_id: Mapped[str | None] = mapped_column(String(100), nullable=True)


class GameTable(Base):
    """A dice table: its game, paytable, interpretation settings, calibration and camera."""

    __tablename__ = "tables"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    game: Mapped[str] = mapped_column(String(20))
    paytable: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    calibration_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    camera_source: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Round(Base):
    """One round at a table; `state` is the rules engine's round state, stored as JSON after each step."""

    __tablename__ = "rounds"
    __table_args__ = (
        # One open round per table: a partial unique index, enforced by the database itself.
        Index(
            "ix_rounds_one_open_per_table",
            "table_id",
            unique=True,
            sqlite_where=text("closed_at IS NULL"),
            postgresql_where=text("closed_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(ForeignKey("tables.id"), index=True)
    game: Mapped[str] = mapped_column(String(20))
    phase: Mapped[str] = mapped_column(String(40))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)  # paytable + settings snapshot at opening
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    settlement: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    opened_by: Mapped[str] = mapped_column(String(100))
    opened_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    settled_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    closed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class Wager(Base):
    """A wager placed at a seat, as accepted by the rules engine."""

    __tablename__ = "wagers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"), index=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
    placed_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Roll(Base):
    """A submitted roll, keyed by the submitter's roll id (idempotency), with the outcome it produced."""

    __tablename__ = "rolls"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    table_id: Mapped[str] = mapped_column(ForeignKey("tables.id"), index=True)
    round_id: Mapped[int | None] = mapped_column(ForeignKey("rounds.id"), nullable=True, index=True)
    request_sha256: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(20))
    verdict: Mapped[str] = mapped_column(String(20))
    faces: Mapped[list[Any]] = mapped_column(JSON)
    evidence_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    applied: Mapped[bool] = mapped_column(Boolean)
    outcome: Mapped[dict[str, Any]] = mapped_column(JSON)
    submitted_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Correction(Base):
    """A supervisor's correction of a settled round: a new entry linked to the round, never an edit."""

    __tablename__ = "corrections"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"), index=True)
    supersedes_id: Mapped[int | None] = mapped_column(ForeignKey("corrections.id"), nullable=True)
    reason: Mapped[str] = mapped_column(Text)
    settlement: Mapped[dict[str, Any]] = mapped_column(JSON)
    made_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class AuditEntry(Base):
    """One entry of the append-only, hash-chained audit trail (update and delete refused by triggers)."""

    __tablename__ = "audit_log"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[str] = mapped_column(String(40))  # ISO-8601 UTC, as hashed
    actor: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(60))
    subject: Mapped[str] = mapped_column(String(200))
    payload: Mapped[str] = mapped_column(Text)  # canonical JSON, exactly as hashed
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class AuditHead(Base):
    """The single row naming the last audit entry; updating it first serialises concurrent appenders."""

    __tablename__ = "audit_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    seq: Mapped[int] = mapped_column(Integer)
    hash: Mapped[str] = mapped_column(String(64))


class Event(Base):
    """An event for the SSE stream and webhooks; its id is the de-duplication key."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    type: Mapped[str] = mapped_column(String(40), index=True)
    table_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class WebhookDelivery(Base):
    """One event to one webhook URL: written with the event (outbox), retried until delivered."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id"), index=True)
    url: Mapped[str] = mapped_column(String(1000))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, index=True)
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    failed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # A dispatcher that took this delivery to POST it holds it until then (replicas: one POST at a time).
    claimed_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class Alert(Base):
    """Something a person should look at: a dealer call the dice do not show, a roll nobody can read."""

    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(40))
    table_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    round_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    message: Mapped[str] = mapped_column(Text)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    raised_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    acknowledged_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    acknowledged_by: Mapped[str | None] = mapped_column(String(100), nullable=True)
    # The sender's idempotency key (`alert_key`): the same key again is this alert, not a second one.
    client_key: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True, index=True)


class Evidence(Base):
    """An evidence frame on disk, named and checked by its SHA-256."""

    __tablename__ = "evidence"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size_bytes: Mapped[int] = mapped_column(Integer)
    media_type: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Read(Base):
    """A single-image read (`POST /v1/reads`): the JSON contract document and its annotated frame."""

    __tablename__ = "reads"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    table_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    evidence_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class DiceSet(Base):
    """A set of dice in play at a table (issue 49), and the fairness watch over it.

    `state` holds the sequential tests' statistics and counts (api/fairness.py); registering the next set
    closes this one, so swapping the dice starts a fresh watch.
    """

    __tablename__ = "dice_sets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    table_id: Mapped[str] = mapped_column(ForeignKey("tables.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    per_position: Mapped[bool] = mapped_column(Boolean, default=False)
    in_play_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    out_of_play_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    registered_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class TableLease(Base):
    """Which table worker watches a table (issue 50): one row per table, taken, renewed and released by
    `api.leases` with row locks (PostgreSQL) or the write lock (SQLite), so that across every service
    replica exactly one worker holds a table at a time. `epoch` grows at each takeover by another worker;
    the rolls of a superseded worker are refused by it (fencing)."""

    __tablename__ = "table_leases"

    table_id: Mapped[str] = mapped_column(ForeignKey("tables.id"), primary_key=True)
    worker_id: Mapped[str] = mapped_column(String(100))
    epoch: Mapped[int] = mapped_column(Integer)
    acquired_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    released_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # Set (once, by one replica) when the lease expired without a release and `worker_lost` was raised.
    lost_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class EnrollmentJob(Base):
    """A table enrollment run as a background job (`POST /v1/tables/{id}/enrollment`, issue 47), kept here so
    that any replica of the service can answer for it; the enrollment itself is a file beside the table's
    calibration (vision/pips/enrolled.py)."""

    __tablename__ = "enrollment_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    table_id: Mapped[str] = mapped_column(ForeignKey("tables.id"), index=True)
    source: Mapped[str] = mapped_column(String(20))  # photos, frames, confirmed
    state: Mapped[str] = mapped_column(String(20))  # queued, running, done, failed
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    dice_per_face: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    examples: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # what was used and left out
    result_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    held_in_accuracy: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class ConsoleDecision(Base):
    """A person's decision at the table console (`POST /v1/console/decisions`, issue 56) of a roll the reader
    left to a person: the dealer roll it became, the read it decides, and the labelled boxes (each of the
    read's dice with the person's face or struck out, and the dice the camera missed, added by a click), so
    a later refit can learn from them. `mismatch`: the person gave a die the reader was sure of another face
    (or struck it out); surveillance acknowledges it (`acknowledged_*`)."""

    __tablename__ = "console_decisions"

    roll_id: Mapped[str] = mapped_column(String(100), primary_key=True)  # the waiting (no_decision) roll
    dealer_roll_id: Mapped[str] = mapped_column(String(100), unique=True)
    table_id: Mapped[str] = mapped_column(ForeignKey("tables.id"), index=True)
    round_id: Mapped[int] = mapped_column(Integer)
    read_id: Mapped[str] = mapped_column(String(64))
    evidence_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    verdict: Mapped[str] = mapped_column(String(20))
    rule: Mapped[str | None] = mapped_column(String(40), nullable=True)
    faces: Mapped[list[Any]] = mapped_column(JSON)
    boxes: Mapped[list[Any]] = mapped_column(JSON)  # the labelled boxes (api/console.py, `labelled_boxes`)
    request_sha256: Mapped[str] = mapped_column(String(64))
    mismatch: Mapped[bool] = mapped_column(Boolean, default=False)
    decided_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    acknowledged_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    acknowledged_by: Mapped[str | None] = mapped_column(String(100), nullable=True)
