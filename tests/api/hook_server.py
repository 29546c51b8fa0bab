"""A local webhook endpoint for the service tests: a threading HTTP server whose POSTs go to a callback."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conftest import free_port

# Called with the request's headers and body; returns the status to answer.
OnPost = Callable[[dict[str, str], bytes], int]


class HookServer:
    """POST http://127.0.0.1:PORT/hook -> `on_post(headers, body)`, answered with the status it returns."""

    def __init__(self, on_post: OnPost) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(on_post(dict(self.headers), body))
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    @contextmanager
    def serving(self) -> Iterator[None]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self.server.shutdown()
            self.server.server_close()
