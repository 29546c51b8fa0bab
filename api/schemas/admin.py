"""Keys, alerts, audit entries and health documents."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.alerts import LiveAlertKind

RoleName = Literal["reader", "dealer", "surveillance", "admin", "worker"]


class KeyIn(BaseModel):
    """A key to create."""

    model_config = ConfigDict(extra="forbid")

    role: RoleName
    name: str = Field(min_length=1, max_length=100)
    supervisor: bool = Field(default=False, strict=True)


class KeyOut(BaseModel):
    """A key's record (never the key itself)."""

    id: int
    name: str
    role: RoleName
    supervisor: bool
    created_at: datetime
    revoked_at: datetime | None


class NewKeyOut(BaseModel):
    """A created key: `key` is shown this once."""

    id: int
    name: str
    role: RoleName
    supervisor: bool
    key: str


class AlertIn(BaseModel):
    """A review raised by surveillance (or an admin), or a live alert raised by a table worker."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=2000)
    table_id: str | None = Field(default=None, max_length=64)
    round_id: int | None = Field(default=None, ge=1)
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


class ReadyOut(BaseModel):
    """Readiness: every check, and whether the service may take traffic."""

    ready: bool
    checks: dict[str, CheckOut]


class EvidenceOut(BaseModel):
    """A stored evidence frame's reference."""

    sha256: str
    size_bytes: int
    media_type: str
