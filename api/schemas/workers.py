"""Table workers (issue 50): leases, a table's live configuration, reads recorded by a worker."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.leases import WORKER_ID_PATTERN
from api.schemas.rolls import SHA256_PATTERN

WORKER_ID_FIELD = Field(
    pattern=WORKER_ID_PATTERN, description="The worker's own id: 1-100 of A-Z a-z 0-9 . _ : -"
)


class LiveConfigOut(BaseModel):
    """What a worker needs to run a table's live loop, as the service's in-process loop would run it."""

    table_id: str
    game: str
    dice: int = Field(description="How many dice a throw has: 10 (hrd10) or 6 (hrd6).")
    camera_source: str | None = Field(
        description="The table's camera; `<demo clips>` for the demo table of `throwbox serve --demo`: the "
        "shipped demo clips, played with the demo croupier."
    )
    calibration_id: str | None = Field(description="The table's calibration id, null when uncalibrated.")
    calibration: dict[str, Any] | None = Field(
        description="The stored calibration file (format, version, checksum, body), verified as the "
        "in-process loop loads it (calibration.store.load_table); null when the table has none."
    )
    enrollment: dict[str, Any] | None = Field(
        description="The table's face enrollment file (vision/pips/enrolled.py format), null when none."
    )
    no_die: dict[str, Any] | None = Field(
        default=None,
        description="The table's no-die filter file (vision/table/no_die.py format: boxes like those its "
        "people struck out are set aside), null when none.",
    )
    lease_ttl_s: float = Field(description="The service's lease TTL: renew about every third of it.")


class LeaseIn(BaseModel):
    """A worker asking for (or renewing) a table's lease."""

    model_config = ConfigDict(extra="forbid")

    worker_id: str = WORKER_ID_FIELD


class LeaseOut(BaseModel):
    """A granted lease: send `epoch` with every roll (X-Throwbox-Lease-Epoch)."""

    table_id: str
    worker_id: str
    epoch: int = Field(description="Grows by one whenever another worker takes the table over.")
    expires_at: datetime
    ttl_s: float


class LeaseHeldOut(BaseModel):
    """Another worker holds the lease."""

    detail: str
    holder: str = Field(description="The worker holding it.")
    expires_at: datetime


class ReadDocumentIn(BaseModel):
    """A read document (api.read_document.read_document, plus the live loop's extras, kept as sent)."""

    model_config = ConfigDict(extra="allow")

    verdict: Literal["valid", "invalid", "void", "no_decision"]
    faces: list[int] = Field(max_length=100)


class WorkerReadIn(BaseModel):
    """A read a worker made, its evidence frame already uploaded with POST /v1/evidence."""

    model_config = ConfigDict(extra="forbid")

    table_id: str = Field(min_length=1, max_length=64)
    document: ReadDocumentIn
    evidence_sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)


class WorkerReadOut(BaseModel):
    """A recorded read."""

    read_id: str
    table_id: str
    evidence_sha256: str | None
    duplicate: bool = Field(description="True when this read id was already recorded with this body.")
