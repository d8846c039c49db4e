"""A local stand-in of Lob's API on 127.0.0.1 (the standard library's threaded HTTP server),
for the `lob` mail provider's tests.

No answer here is recorded: none can be without a Lob account, and a live key would mail
real letters. The routes, the request fields it reads and the answers' shapes follow Lob's
documented API (docs.lob.com and its OpenAPI specification, github.com/lob/lob-openapi):

* every request needs HTTP Basic auth with the API key as the user name and an empty
  password, else 401 with Lob's error body `{"error": {"message", "status_code", "code"}}`;
* `POST /v1/us_verifications` (form or JSON: recipient, primary_line, secondary_line, city,
  state, zip_code) answers a `us_verification` (`us_ver_...`) whose `deliverability` is
  `deliverable` unless the test set another for that primary line;
* `POST /v1/letters` (form, JSON, or multipart with an uploaded HTML `file`) needs `to`,
  `from`, `file`, `color` and `use_type`, else 422; it answers a `letter` (`ltr_...`,
  `expected_delivery_date`, `tracking_events`, ...). Its `Idempotency-Key` header is
  honoured: a second request with a key already used gets the same letter back;
* `GET /v1/letters/{id}` answers the letter (with the tracking events a test added), or 404.

It records every request (`requests`), and can be told to lose the answers of the next
letter requests after making the letters (`lose_letter_answers`), as a dropped
connection or a 5xx after the work was done would.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import email.parser
import email.policy
import json
import re
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

API_KEY = "test_0standin0key0for0tollway"
SENDER = {
    "TOLLWAY_MAIL_FROM_NAME": "Tollway Mailroom",
    "TOLLWAY_MAIL_FROM_LINE1": "1 Market St",
    "TOLLWAY_MAIL_FROM_LINE2": "Ste 300",
    "TOLLWAY_MAIL_FROM_CITY": "San Francisco",
    "TOLLWAY_MAIL_FROM_STATE": "CA",
    "TOLLWAY_MAIL_FROM_ZIP": "94105",
}
_KEY = re.compile(r"^([^\[]+)\[([^\]]+)\]$")


@dataclasses.dataclass
class Seen:
    """One request the stand-in received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    content_type: str
    fields: dict[str, Any]  # the body's fields, `to[name]` nested as {"to": {"name": ...}}
    files: dict[str, tuple[str | None, str, bytes]]  # field -> (file name, content type, content)
    authorized: bool


def _nested(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        m = _KEY.match(key)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = value
        else:
            out[key] = value
    return out


def _multipart(content_type: str, body: bytes) -> tuple[dict[str, Any], dict[str, tuple[str | None, str, bytes]]]:
    message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\nMIME-Version: 1.0\r\n\r\n" + body
    )
    pairs: list[tuple[str, str]] = []
    files: dict[str, tuple[str | None, str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        content = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            files[str(name)] = (part.get_filename(), part.get_content_type(), content)
        else:
            pairs.append((str(name), content.decode()))
    return _nested(pairs), files


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "status_code": status, "code": code}}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _address(fields: Any) -> dict[str, Any] | None:
    if not isinstance(fields, dict):
        return None
    if not all(fields.get(k) for k in ("address_line1", "address_city", "address_state", "address_zip")) or not (
        fields.get("name") or fields.get("company")
    ):
        return None
    return {
        "id": "adr_" + secrets.token_hex(8),
        "description": None,
        "name": str(fields.get("name") or "").upper() or None,
        "company": None,
        "phone": None,
        "email": None,
        "address_line1": fields["address_line1"].upper(),
        "address_line2": (fields.get("address_line2") or "").upper() or None,
        "address_city": fields["address_city"].upper(),
        "address_state": fields["address_state"].upper(),
        "address_zip": fields["address_zip"],
        "address_country": "UNITED STATES",
        "metadata": {},
        "date_created": _now(),
        "date_modified": _now(),
        "object": "address",
    }


class LobStandIn:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.letters: dict[str, dict[str, Any]] = {}
        self.by_key: dict[str, str] = {}  # Idempotency-Key -> letter id
        self.deliverability: dict[str, str] = {}  # upper-case primary line -> deliverability
        self.lose_letter_answers = 0
        self.lock = threading.Lock()
        self.base_url = ""

    def env(self) -> dict[str, str]:
        """The `mail` kind's settings that point the `lob` provider here."""
        return {"TOLLWAY_MAIL_LOB_API_URL": self.base_url, "TOLLWAY_MAIL_LOB_API_KEY": API_KEY, **SENDER}

    def seen(self, method: str, path: str) -> list[Seen]:
        return [r for r in self.requests if r.method == method and r.path == path]

    def track(self, letter_id: str, name: str, location: str = "94107") -> None:
        event = {
            "id": "evnt_" + secrets.token_hex(8),
            "type": "normal",
            "name": name,
            "location": location,
            "time": _now(),
            "date_created": _now(),
            "date_modified": _now(),
            "object": "tracking_event",
        }
        self.letters[letter_id]["tracking_events"].append(event)

    # -- the routes -----------------------------------------------------------------
    def answer(self, seen: Seen) -> tuple[int, dict[str, Any]]:
        if not seen.authorized:
            return _error(
                401, "unauthorized", "Your API key is not valid. Please sign up on lob.com to get a valid api key."
            )
        if seen.method == "POST" and seen.path == "/v1/us_verifications":
            return self._verify(seen.fields)
        if seen.method == "POST" and seen.path == "/v1/letters":
            return self._letter(seen)
        m = re.fullmatch(r"/v1/letters/(ltr_[A-Za-z0-9]+)", seen.path)
        if seen.method == "GET" and m:
            letter = self.letters.get(m.group(1))
            return (200, letter) if letter is not None else _error(404, "not_found", "letter not found")
        return _error(404, "unrecognized_endpoint", "The requested endpoint does not exist.")

    def _verify(self, f: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        primary = str(f.get("primary_line") or "").strip().upper()
        if not primary or not (f.get("zip_code") or (f.get("city") and f.get("state"))):
            return _error(422, "invalid", "primary_line is required, with zip_code or city and state")
        deliverability = self.deliverability.get(primary, "deliverable")
        zip5 = str(f.get("zip_code") or "94107")[:5]
        city, state = str(f.get("city") or "").upper(), str(f.get("state") or "").upper()
        undeliverable = deliverability == "undeliverable"
        return 200, {
            "id": "us_ver_" + secrets.token_hex(10),
            "recipient": str(f.get("recipient") or "").upper() or None,
            "primary_line": primary,
            "secondary_line": str(f.get("secondary_line") or "").upper(),
            "urbanization": "",
            "last_line": f"{city} {state} {zip5}" + ("" if undeliverable else "-1741"),
            "deliverability": deliverability,
            "components": {
                "primary_number": primary.split(" ")[0],
                "city": city,
                "state": state,
                "zip_code": zip5,
                "zip_code_plus_4": "" if undeliverable else "1741",
                "record_type": "street",
                "address_type": "commercial",
            },
            "deliverability_analysis": {
                "dpv_confirmation": "N" if undeliverable else "Y",
                "dpv_cmra": "N",
                "dpv_vacant": "N",
                "dpv_active": "N" if undeliverable else "Y",
                "dpv_footnotes": ["AA", "M1"] if undeliverable else ["AA", "BB"],
                "ews_match": False,
                "lacs_indicator": "",
                "lacs_return_code": "",
                "suite_return_code": "",
            },
            "lob_confidence_score": {"score": 0 if undeliverable else 100, "level": "low" if undeliverable else "high"},
            "object": "us_verification",
        }

    def _letter(self, seen: Seen) -> tuple[int, dict[str, Any]]:
        f = seen.fields
        key = seen.headers.get("idempotency-key")
        if key and key in self.by_key:  # Lob's idempotency: the same key gives the same letter back
            return self._maybe_lost(200, self.letters[self.by_key[key]])
        to, sender = _address(f.get("to")), _address(f.get("from"))
        file = f.get("file")
        upload = seen.files.get("file")
        problems = []
        if to is None:
            problems.append("to is invalid")
        if sender is None:
            problems.append("from is invalid")
        if upload is None and not (isinstance(file, str) and "<" in file and len(file) < 10_000):
            problems.append("file must be an HTML string of under 10,000 characters or an uploaded file")
        if str(f.get("color")).lower() not in ("true", "false"):
            problems.append("color is required")
        if f.get("use_type") not in ("marketing", "operational"):
            problems.append("use_type must be one of [marketing, operational]")
        if problems:
            return _error(422, "invalid", "; ".join(problems))
        letter_id = "ltr_" + secrets.token_hex(8)
        created = _now()
        letter = {
            "id": letter_id,
            "description": f.get("description"),
            "metadata": f.get("metadata") or {},
            "to": to,
            "from": sender,
            "color": str(f.get("color")).lower() == "true",
            "double_sided": True,
            "address_placement": "top_first_page",
            "return_envelope": False,
            "perforated_page": None,
            "custom_envelope": None,
            "extra_service": None,
            "mail_type": "usps_first_class",
            "url": f"https://lob-assets.example/letters/{letter_id}.pdf",
            "carrier": "USPS",
            "tracking_number": None,
            "tracking_events": [],
            "thumbnails": [],
            "expected_delivery_date": (datetime.date.today() + datetime.timedelta(days=5)).isoformat(),
            "date_created": created,
            "date_modified": created,
            "send_date": created,
            "use_type": f.get("use_type"),
            "fsc": False,
            "status": "processed",
            "object": "letter",
        }
        self.letters[letter_id] = letter
        if key:
            self.by_key[key] = letter_id
        return self._maybe_lost(200, letter)

    def _maybe_lost(self, status: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.lose_letter_answers > 0:
            self.lose_letter_answers -= 1
            return _error(500, "internal_server_error", "An internal server error occurred.")
        return status, body


def _handler(stand_in: LobStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            content_type = self.headers.get("content-type") or ""
            fields: dict[str, Any] = {}
            files: dict[str, tuple[str | None, str, bytes]] = {}
            if content_type.startswith("application/x-www-form-urlencoded"):
                fields = _nested(parse_qsl(body.decode(), keep_blank_values=True))
            elif content_type.startswith("multipart/form-data"):
                fields, files = _multipart(content_type, body)
            elif content_type.startswith("application/json") and body:
                fields = json.loads(body)
            auth = self.headers.get("authorization") or ""
            try:
                user, _, password = (
                    base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")
                    if auth.startswith("Basic ")
                    else ("", "", "")
                )
            except ValueError:
                user, password = "", ""
            seen = Seen(
                self.command,
                self.path.split("?")[0],
                {k.lower(): v for k, v in self.headers.items()},
                content_type,
                fields,
                files,
                authorized=user == API_KEY and password == "",
            )
            with stand_in.lock:
                stand_in.requests.append(seen)
                status, answer = stand_in.answer(seen)
            raw = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _serve

    return Handler


@contextlib.contextmanager
def lob_standin() -> Iterator[LobStandIn]:
    """Serve a fresh stand-in on a free port of 127.0.0.1 for the duration of the block."""
    stand_in = LobStandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stand_in))
    server.daemon_threads = True
    stand_in.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, name="lob-standin", kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
