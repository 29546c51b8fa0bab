"""The worker's `GET /healthz`, on the stdlib's http.server."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from api.worker.worker import Worker

log = logging.getLogger("throwbox.worker")


def serve_health(worker: Worker, host: str, port: int) -> ThreadingHTTPServer:
    """`GET /healthz` (the worker's `health()` as JSON) on `host:port`, in a daemon thread.

    The stdlib's http.server, not uvicorn: one read-only JSON route needs no ASGI app nor event loop, and
    uvicorn would take over SIGTERM, which the worker handles itself to release its leases cleanly.
    """

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/healthz":
                self.send_error(404)
                return
            body = json.dumps(worker.health()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("healthz: " + format, *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="worker-healthz", daemon=True).start()
    return server
