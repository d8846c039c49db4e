"""A local RDAP server for the `domains` provider's tests: a real HTTP server
(ThreadingHTTPServer on 127.0.0.1, a free port) answering RFC 9082's domain query
`GET /domain/<name>`.

Its answers follow the format RFC 9083 documents (no recorded responses of a registry
exist here): a domain object (section 5.3: `objectClassName`, `handle`, `ldhName`,
`status[]` with the RFC 8056 status values, `entities[]` with a registrar's jCard
`vcardArray`, `events[]` with `eventAction`/`eventDate`, `rdapConformance`, `notices`)
as `application/rdap+json`, and for an unknown domain a 404 with the error response body
of section 6 (`errorCode`, `title`, `description`).

Modes: `"direct"` answers at the base; `"redirect"` answers the base with a 302 to a
"registry" path on the same server, as rdap.org redirects to the registry's RDAP server
(RFC 7484 bootstrap); `"fail"` answers 503 with an RDAP error object. It counts requests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

CONFORMANCE = ["rdap_level_0", "icann_rdap_response_profile_1", "icann_rdap_technical_implementation_guide_1"]
REGISTRY_PREFIX = "/registry"


def rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Domain:
    expires_ms: int | None
    registered_ms: int | None = 946_684_800_000  # 2000-01-01
    registrar: str | None = "Example Registrar, Inc."
    statuses: list[str] = field(default_factory=lambda: ["client transfer prohibited"])
    unicode_name: str | None = None


def domain_object(name: str, d: Domain) -> dict[str, Any]:
    events = [{"eventAction": "last changed", "eventDate": "2026-01-15T10:00:00Z"}]
    if d.registered_ms is not None:
        events.insert(0, {"eventAction": "registration", "eventDate": rfc3339(d.registered_ms)})
    if d.expires_ms is not None:
        events.insert(1, {"eventAction": "expiration", "eventDate": rfc3339(d.expires_ms)})
    events.append({"eventAction": "last update of RDAP database", "eventDate": "2026-11-27T00:00:00Z"})
    body: dict[str, Any] = {
        "objectClassName": "domain",
        "handle": f"{abs(hash(name)) % 10**10}_DOMAIN_COM-VRSN",
        "ldhName": name.upper(),  # registries often answer in upper case
        "links": [
            {
                "value": f"https://rdap.example/domain/{name}",
                "rel": "self",
                "href": f"https://rdap.example/domain/{name}",
                "type": "application/rdap+json",
            }
        ],
        "status": list(d.statuses),
        "entities": [
            {
                "objectClassName": "entity",
                "handle": "292",
                "roles": ["registrar"],
                "publicIds": [{"type": "IANA Registrar ID", "identifier": "292"}],
                "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", d.registrar or ""]]],
                "entities": [
                    {
                        "objectClassName": "entity",
                        "roles": ["abuse"],
                        "vcardArray": [
                            "vcard",
                            [
                                ["version", {}, "text", "4.0"],
                                ["fn", {}, "text", ""],
                                ["email", {}, "text", "abuse@registrar.example"],
                            ],
                        ],
                    }
                ],
            }
        ]
        if d.registrar is not None
        else [],
        "events": events,
        "secureDNS": {"delegationSigned": False},
        "nameservers": [
            {"objectClassName": "nameserver", "ldhName": "NS1.EXAMPLE.NET"},
            {"objectClassName": "nameserver", "ldhName": "NS2.EXAMPLE.NET"},
        ],
        "rdapConformance": CONFORMANCE,
        "notices": [
            {
                "title": "Terms of Use",
                "description": ["Service subject to the registry's Terms of Use."],
                "links": [{"href": "https://registry.example/terms", "type": "text/html"}],
            }
        ],
    }
    if d.unicode_name:
        body["unicodeName"] = d.unicode_name
    return body


def error_object(code: int, title: str, description: str) -> dict[str, Any]:
    return {"rdapConformance": ["rdap_level_0"], "errorCode": code, "title": title, "description": [description]}


class RdapStandin:
    def __init__(self) -> None:
        self.domains: dict[str, Domain] = {}
        self.mode = "direct"  # "direct", "redirect" or "fail"
        self.requests: list[tuple[str, str]] = []  # (path, Accept header)
        self.url = ""
        self._lock = threading.Lock()

    def add(self, name: str, expires_ms: int | None, **more: Any) -> None:
        self.domains[name.lower()] = Domain(expires_ms, **more)

    @property
    def count(self) -> int:
        return len(self.requests)

    def answer(self, path: str, accept: str) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append((path, accept))
        if self.mode == "fail":
            return self._json(503, error_object(503, "Service Unavailable", "The registry is down for maintenance."))
        registry = path.startswith(REGISTRY_PREFIX + "/")
        query = path[len(REGISTRY_PREFIX) :] if registry else path
        if not query.startswith("/domain/"):
            return self._json(400, error_object(400, "Bad Request", "Only domain queries are served here."))
        if self.mode == "redirect" and not registry:
            return 302, {"Location": f"{self.url}{REGISTRY_PREFIX}{query}", "Content-Length": "0"}, b""
        name = unquote(query[len("/domain/") :]).lower()
        found = self.domains.get(name)
        if found is None:
            return self._json(404, error_object(404, "Not Found", f"The domain {name} is not registered here."))
        return self._json(200, domain_object(name, found))

    @staticmethod
    def _json(status: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        raw = json.dumps(body).encode()
        return status, {"Content-Type": "application/rdap+json", "Content-Length": str(len(raw))}, raw


@contextmanager
def rdap_server() -> Iterator[RdapStandin]:
    standin = RdapStandin()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            status, headers, body = standin.answer(self.path, self.headers.get("Accept", ""))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
