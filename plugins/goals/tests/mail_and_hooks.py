"""A local peer of the goals story: an HTTP receiver keeping every webhook POSTed to it
(headers and raw body); the SMTP server is `tollway.testing.smtp_server`."""
from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class HookReceiver:
    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.url = ""

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _headers, body in self.received]


@contextlib.contextmanager
def hook_receiver() -> Iterator[HookReceiver]:
    receiver = HookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/results"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
