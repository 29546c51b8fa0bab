"""The table worker's errors and what counts as no answer from the service (see the package docstring)."""

from __future__ import annotations

import logging

import httpx

log = logging.getLogger("throwbox.worker")


class WorkerError(Exception):
    """Base class of the table worker's errors."""


class ServiceDownError(WorkerError):
    """The service answered 5xx: as good as no answer (the request is spooled and retried)."""


class SpoolBusyError(WorkerError):
    """Another worker process holds this spool."""


# Everything that means "the service did not answer": the request may be spooled and replayed.
UNREACHABLE = (httpx.TransportError, ServiceDownError)
