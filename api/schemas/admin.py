"""Keys, alerts, audit entries and health documents."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.alerts import LiveAlertKind
from api.leases import WORKER_ID_PATTERN
from api.schemas import DB_INT_MAX

RoleName = Literal["reader", "dealer", "surveillance", "admin", "worker"]


class KeyIn(BaseModel):
    """A key to create."""

    # The schema says what the validator checks: `worker_id` only on a worker key.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"required": ["role"], "properties": {"role": {"not": {"const": "worker"}}}},
            "then": {"properties": {"worker_id": {"type": "null"}}},
        },
    )

    role: RoleName
    name: str = Field(min_length=1, max_length=100)
    supervisor: bool = Field(default=False, strict=True)
    worker_id: str | None = Field(
        default=None,
        pattern=WORKER_ID_PATTERN,
        description="A `worker` key only: the one worker id it may act as (leases, rolls). Absent: any id.",
    )

    @model_validator(mode="after")
    def _bound_only_if_worker(self) -> KeyIn:
        if self.worker_id is not None and self.role != "worker":
            raise ValueError(f"only a worker key can be bound to a worker id, not a {self.role} key")
        return self


class KeyOut(BaseModel):
    """A key's record (never the key itself)."""

    id: int
    name: str
    role: RoleName
    supervisor: bool
    worker_id: str | None = None
    created_at: datetime
    revoked_at: datetime | None


class NewKeyOut(BaseModel):
    """A created key: `key` is shown this once."""

    id: int
    name: str
    role: RoleName
    supervisor: bool
    worker_id: str | None = None
    key: str


class AlertIn(BaseModel):
    """A review raised by surveillance (or an admin), or a live alert raised by a table worker."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=2000)
    table_id: str | None = Field(default=None, max_length=64)
    # A database id: refused (422) beyond the 32-bit range PostgreSQL's INTEGER holds, before any lookup.
    round_id: int | None = Field(default=None, ge=1, le=DB_INT_MAX)
    kind: Literal["review"] | LiveAlertKind = Field(
        default="review",
        description="`review` (surveillance, admin); a live loop's kind (a table worker's key only).",
    )
    data: dict[str, Any] = Field(default_factory=dict, description="The live alert's details.")
    alert_key: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9._:-]{1,64}$",
        description="An idempotency key: sent again (a table worker's spool replayed after a lost answer), "
        "the alert already raised with it is answered (200), none is raised twice.",
    )


class AlertOut(BaseModel):
    """An alert."""

    id: int
    kind: str
    table_id: str | None
    round_id: int | None
    message: str
    data: dict[str, Any]
    raised_by: str
    created_at: datetime
    acknowledged_at: datetime | None
    acknowledged_by: str | None


class AuditEntryOut(BaseModel):
    """One audit entry, with the hashes that chain it."""

    seq: int
    at: str
    actor: str
    action: str
    subject: str
    payload: Any
    prev_hash: str
    hash: str


class AuditVerifyOut(BaseModel):
    """The result of checking the audit chain."""

    ok: bool
    entries: int
    first_bad_seq: int | None
    problem: str | None


class CheckOut(BaseModel):
    """One readiness check."""

    ok: bool
    detail: str


class TableReadyOut(BaseModel):
    """One table's state in the readiness document: reported, never a reason for the service's 503."""

    ok: bool
    faults: list[str]


class ReadyOut(BaseModel):
    """Readiness: the service's checks, whether it may take traffic, and each table's own faults."""

    ready: bool
    checks: dict[str, CheckOut]
    tables: dict[str, TableReadyOut] = Field(default_factory=dict)


class EvidenceOut(BaseModel):
    """A stored evidence frame's reference."""

    sha256: str
    size_bytes: int
    media_type: str


class ReviewIn(BaseModel):
    """A reviewer's note on an alert."""

    model_config = ConfigDict(extra="forbid")

    note: str = Field(min_length=1, max_length=4000, description="What the reviewer found or decided.")


class ReviewOut(BaseModel):
    """One review of an alert, as the audit trail keeps it."""

    alert_id: int
    seq: int
    at: str
    reviewer: str
    note: str
