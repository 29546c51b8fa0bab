"""What a worker and the service agree on: the fencing headers, the worker id's pattern, the refusal that
means another worker took the table, and the clock a worker records with."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

log = logging.getLogger("throwbox.worker")


EPOCH_HEADER = "X-Throwbox-Lease-Epoch"
WORKER_HEADER = "X-Throwbox-Worker-Id"
WORKER_ID = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
SUPERSEDED = "lease_superseded"


def now_iso() -> str:
    """The UTC time now, ISO 8601."""
    return datetime.now(UTC).isoformat()
