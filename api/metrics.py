"""Prometheus metrics (prometheus-client), one registry per app so tests can build many apps."""

from __future__ import annotations

import time

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The service's counters and histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "throwbox_http_requests_total",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "throwbox_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["route", "method"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.reads = Counter(
            "throwbox_reads_total", "Single-image reads, by verdict.", ["verdict"], registry=self.registry
        )
        self.verdicts = Counter(
            "throwbox_roll_verdicts_total",
            "Rolls submitted, by verdict and whether the round advanced.",
            ["verdict", "applied"],
            registry=self.registry,
        )
        self.alerts = Counter(
            "throwbox_alerts_total", "Alerts raised, by kind.", ["kind"], registry=self.registry
        )
        self.errors = Counter(
            "throwbox_errors_total",
            "Requests answered with an error, by kind (client_4xx, server_5xx, refused_by_rules).",
            ["kind"],
            registry=self.registry,
        )

    def render(self) -> Response:
        """The Prometheus text exposition."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


def _route_template(scope: Scope) -> str:
    # Label by route template (/v1/tables/{table_id}), never by raw path: bounded label values.
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


class MetricsMiddleware:
    """Pure ASGI middleware (unlike BaseHTTPMiddleware it leaves streaming responses alone): counts and
    times every HTTP request, labelled by the route template the router matched."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status_code = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = _route_template(scope)
            method = str(scope.get("method", ""))
            self.metrics.latency.labels(route=route, method=method).observe(time.perf_counter() - started)
            self.metrics.requests.labels(route=route, method=method, status=str(status_code)).inc()
            if status_code >= 500:
                self.metrics.errors.labels(kind="server_5xx").inc()
            elif status_code >= 400:
                self.metrics.errors.labels(kind="client_4xx").inc()


def install(app: FastAPI, metrics: Metrics) -> None:
    """Count and time every request."""
    app.add_middleware(MetricsMiddleware, metrics=metrics)
