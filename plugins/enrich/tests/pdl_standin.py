"""A local server on 127.0.0.1 answering People Data Labs' Person Enrichment API as its
documentation describes it (`GET /v5/person/enrich`, `X-Api-Key`; 200 `{status, likelihood,
data}`, 404 when nobody matches, 401 for a bad key), keeping every query."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KEY = "pdl-test-key-1234567890"
DANA = {
    "full_name": "dana reyes",
    "job_title": "head of finance",
    "job_company_name": "example corp",
    "job_company_website": "example.com",
    "location_name": "austin, texas, united states",
    "linkedin_url": "linkedin.com/in/dana-reyes",
    "work_email": "dana.reyes@example.com",
    "personal_emails": ["dana@gmail.example"],
    "phone_numbers": ["+15125550100"],
}


class Standin:
    def __init__(self) -> None:
        self.queries: list[dict[str, str]] = []
        self.url = ""
        self.status: int | None = None  # forced answer status


@contextlib.contextmanager
def pdl_standin() -> Iterator[Standin]:
    standin = Standin()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            standin.queries.append(query)
            if self.headers.get("X-Api-Key") != KEY:
                return self.answer(
                    401, {"status": 401, "error": {"type": "authentication_error", "message": "Invalid API key"}}
                )
            if standin.status is not None:
                return self.answer(
                    standin.status, {"status": standin.status, "error": {"type": "error", "message": "forced"}}
                )
            if parts.path != "/v5/person/enrich":
                return self.answer(404, {"status": 404, "error": {"type": "not_found", "message": "no route"}})
            match = (
                query.get("email") == DANA["work_email"]
                or query.get("profile") == DANA["linkedin_url"]
                or (query.get("name", "").lower() == "dana reyes" and query.get("company") == "example.com")
            )
            if not match:
                return self.answer(
                    404,
                    {
                        "status": 404,
                        "error": {"type": "not_found", "message": "No records were found matching your request"},
                    },
                )
            return self.answer(200, {"status": 200, "likelihood": 9, "data": DANA})

        def answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
