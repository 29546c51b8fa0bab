"""Fail-over between replicas of one service, and the httpx client a worker talks to them with."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import httpx

from api.worker.errors import ServiceDownError

log = logging.getLogger("throwbox.worker")


class FailoverTransport(httpx.BaseTransport):
    """An httpx transport over several replicas of one service: each request goes to the replica that
    answered last; one that refuses the connection (or does not accept it in time) is skipped for the next.

    Only connection failures move on: a request that reached a replica and then lost its answer is not
    sent again here (the caller spools it; rolls, evidence and reads are idempotent on replay).
    """

    def __init__(self, urls: Sequence[str]) -> None:
        if not urls:
            raise ValueError("at least one service URL is needed")
        parsed = [httpx.URL(u.rstrip("/")) for u in urls]
        for url, text in zip(parsed, urls, strict=True):
            if url.scheme not in ("http", "https") or not url.host:
                raise ValueError(f"a service URL must be http:// or https://host[:port]: {text!r}")
        if len({u.path for u in parsed}) > 1:
            raise ValueError("every --service URL must have the same path (replicas of one service)")
        self.urls = parsed
        self._inner = [httpx.HTTPTransport() for _ in parsed]
        self._current = 0
        self._lock = threading.Lock()

    @property
    def current(self) -> str:
        """The replica requests go to now."""
        return str(self.urls[self._current])

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            start = self._current
        last: Exception | None = None
        for step in range(len(self.urls)):
            k = (start + step) % len(self.urls)
            target = self.urls[k]
            request.url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
            request.headers["Host"] = target.netloc.decode("ascii")
            try:
                response = self._inner[k].handle_request(request)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last = exc
                continue
            if k != start:
                with self._lock:
                    self._current = k
                log.warning("service %s did not answer; now using %s", self.urls[start], target)
            return response
        assert last is not None
        raise last

    def close(self) -> None:
        for inner in self._inner:
            inner.close()


def service_client(
    transport: FailoverTransport, key: str, *, timeout_s: float = 10.0, raise_5xx: bool = False
) -> httpx.Client:
    """An HTTP client for the service (through the fail-over `transport`) with `key`. With `raise_5xx`, a
    5xx answer raises `ServiceDownError` (for code that would take it for a refusal: the demo croupier)."""

    def check(response: httpx.Response) -> None:
        if response.status_code >= 500:
            raise ServiceDownError(f"{response.request.url}: HTTP {response.status_code}")

    return httpx.Client(
        base_url=str(transport.urls[0]),
        transport=transport,
        headers={"Authorization": f"Bearer {key}"},
        timeout=httpx.Timeout(timeout_s, connect=min(2.0, timeout_s)),
        event_hooks={"response": [check]} if raise_5xx else None,
    )
