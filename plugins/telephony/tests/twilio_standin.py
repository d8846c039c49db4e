"""A local stand-in for the part of Twilio's REST API the telephony plugin uses, on 127.0.0.1
(the standard library's HTTP server, in a thread), built from Twilio's documented formats:

* `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` (form: To, From, Body, StatusCallback)
  and `.../Calls.json` (To, From, Twiml or Url, StatusCallback), HTTP Basic auth
  AccountSid:AuthToken; answered 201 with the created resource (`sid` SM…/CA…, `status`
  `queued`), or Twilio's error body `{code, message, more_info, status}`: 401 code 20003 for
  wrong credentials, 400 code 21211 for a `To` that is not a phone number (or one the test
  declares invalid), 400 code 21604/21602/21205 for a missing To, Body, or Twiml/Url.
* Every request is recorded (path, form, whether the credentials were right), and a test
  may script the next answers (`fail_next`) or a delay (`delay_s`).
* The webhooks Twilio would post back are built here, signed the way Twilio signs them
  (base64 HMAC-SHA1 under the auth token of the URL followed by the parameters sorted by
  name, each name then its value), for the test to post through the service's ASGI client:
  a message's or a call's status callback (to the StatusCallback it was given) and an
  incoming SMS (to the incoming-message webhook URL the operator set).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

PUBLIC_URL = "https://tools.tollway.test"  # the service's public URL in these tests
INBOUND_PATH = "/v1/telephony/twilio/inbound-sms"
_RESOURCE = re.compile(r"^/2010-04-01/Accounts/([^/]+)/(Messages|Calls)\.json$")
_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")


@dataclasses.dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    form: dict[str, str]
    authorized: bool


@dataclasses.dataclass(frozen=True)
class Webhook:
    """A request Twilio would send to the service: post `content` to `path` with `headers`."""

    path: str  # with its query
    content: bytes
    headers: dict[str, str]
    params: dict[str, str]


def twilio_signature(auth_token: str, url: str, params: dict[str, str]) -> str:
    data = url
    for name in sorted(params):
        data += name + params[name]
    mac = hmac.new(auth_token.encode("utf-8"), data.encode("utf-8"), hashlib.sha1)
    return base64.b64encode(mac.digest()).decode("ascii")


def _error(status: int, code: int, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return (
        status,
        {"code": code, "message": message, "more_info": f"https://www.twilio.com/docs/errors/{code}", "status": status},
        {},
    )


class TwilioStandIn:
    def __init__(self) -> None:
        self.account_sid = "AC" + secrets.token_hex(16)
        self.auth_token = secrets.token_hex(16)
        self.from_number = "+15005550006"
        self.requests: list[Recorded] = []
        self.invalid: dict[str, int] = {}  # numbers Twilio refuses, with the error code
        self.fail_next: list[tuple[int, dict[str, Any], dict[str, str]]] = []  # scripted answers, first first
        self.delay_s = 0.0
        self.messages: dict[str, dict[str, str]] = {}  # sid -> the form it was created with
        self.calls: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self.url = ""

    # -- the service's settings ---------------------------------------------------------
    def env(self, public_url: str = PUBLIC_URL) -> dict[str, str]:
        out = {}
        for kind in ("SMS", "VOICE"):
            out.update(
                {
                    f"TOLLWAY_{kind}_TWILIO_ACCOUNT_SID": self.account_sid,
                    f"TOLLWAY_{kind}_TWILIO_AUTH_TOKEN": self.auth_token,
                    f"TOLLWAY_{kind}_TWILIO_FROM_NUMBER": self.from_number,
                    f"TOLLWAY_{kind}_TWILIO_API_URL": self.url,
                    f"TOLLWAY_{kind}_PUBLIC_URL": public_url,
                }
            )
        return out

    # -- the API --------------------------------------------------------------------------
    def answer(
        self, method: str, path: str, authorization: str | None, form: dict[str, str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        expected = "Basic " + base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
        authorized = authorization == expected
        with self._lock:
            self.requests.append(Recorded(method, path, dict(form), authorized))
            scripted = self.fail_next.pop(0) if self.fail_next else None
        if self.delay_s:
            time.sleep(self.delay_s)
        if scripted is not None:
            return scripted
        found = _RESOURCE.match(path)
        if method != "POST" or found is None:
            return _error(404, 20404, "The requested resource was not found")
        if not authorized or found.group(1) != self.account_sid:
            return _error(401, 20003, "Authenticate")
        resource = found.group(2)
        to = form.get("To", "")
        if not to:
            return _error(400, 21604, "A 'To' phone number is required.")
        if to in self.invalid or not _E164.match(to):
            code = self.invalid.get(to, 21211)
            text = (
                f"The 'To' number {to} is not a valid phone number."
                if code == 21211
                else f"To number: {to}, is not a mobile number"
            )
            return _error(400, code, text)
        if form.get("From") != self.from_number:
            return _error(
                400,
                21212,
                f"The 'From' number {form.get('From')} is not a valid phone number, shortcode, or alphanumeric sender ID.",
            )
        now = formatdate(usegmt=True)
        if resource == "Messages":
            if not form.get("Body"):
                return _error(400, 21602, "Message body is required.")
            sid = "SM" + secrets.token_hex(16)
            with self._lock:
                self.messages[sid] = dict(form)
            return (
                201,
                {
                    "account_sid": self.account_sid,
                    "api_version": "2010-04-01",
                    "body": form["Body"],
                    "date_created": now,
                    "date_sent": None,
                    "date_updated": now,
                    "direction": "outbound-api",
                    "error_code": None,
                    "error_message": None,
                    "from": form["From"],
                    "messaging_service_sid": None,
                    "num_media": "0",
                    "num_segments": "1",
                    "price": None,
                    "price_unit": "USD",
                    "sid": sid,
                    "status": "queued",
                    "subresource_uris": {"media": f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}/Media.json"},
                    "to": to,
                    "uri": f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}.json",
                },
                {},
            )
        if bool(form.get("Twiml")) == bool(form.get("Url")):
            return _error(400, 21205, "Url parameter is required.")
        sid = "CA" + secrets.token_hex(16)
        with self._lock:
            self.calls[sid] = dict(form)
        return (
            201,
            {
                "account_sid": self.account_sid,
                "answered_by": None,
                "api_version": "2010-04-01",
                "caller_name": None,
                "date_created": now,
                "date_updated": now,
                "direction": "outbound-api",
                "duration": None,
                "end_time": None,
                "forwarded_from": None,
                "from": form["From"],
                "from_formatted": form["From"],
                "parent_call_sid": None,
                "phone_number_sid": None,
                "price": None,
                "price_unit": "USD",
                "sid": sid,
                "start_time": None,
                "status": "queued",
                "to": to,
                "to_formatted": to,
                "uri": f"/2010-04-01/Accounts/{self.account_sid}/Calls/{sid}.json",
            },
            {},
        )

    def api_calls(self, resource: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith(f"/{resource}.json")]

    # -- webhooks, signed as Twilio signs them ---------------------------------------------
    def _signed(self, url: str, params: dict[str, str], *, token: str | None = None) -> Webhook:
        split = urlsplit(url)
        path = split.path + (f"?{split.query}" if split.query else "")
        headers = {
            "content-type": "application/x-www-form-urlencoded",
            "x-twilio-signature": twilio_signature(token or self.auth_token, url, params),
            "user-agent": "TwilioProxy/1.1",
            "i-twilio-idempotency-token": secrets.token_hex(16),
        }
        return Webhook(path=path, content=urlencode(params).encode(), headers=headers, params=params)

    def message_status(
        self, sid: str, status: str, *, error_code: str | None = None, token: str | None = None
    ) -> Webhook:
        """Twilio's status callback of an outbound message, to the StatusCallback it was created with."""
        form = self.messages[sid]
        params = {
            "AccountSid": self.account_sid,
            "ApiVersion": "2010-04-01",
            "From": form["From"],
            "MessageSid": sid,
            "MessageStatus": status,
            "SmsSid": sid,
            "SmsStatus": status,
            "To": form["To"],
        }
        if error_code is not None:
            params["ErrorCode"] = error_code
        return self._signed(form["StatusCallback"], params, token=token)

    def call_status(
        self, sid: str, status: str, *, duration_s: int | None = None, sequence: int = 0, token: str | None = None
    ) -> Webhook:
        """Twilio's status callback of an outbound call (sent when it ends, by default)."""
        form = self.calls[sid]
        params = {
            "AccountSid": self.account_sid,
            "ApiVersion": "2010-04-01",
            "CallSid": sid,
            "CallStatus": status,
            "CallbackSource": "call-progress-events",
            "Called": form["To"],
            "Caller": form["From"],
            "Direction": "outbound-api",
            "From": form["From"],
            "SequenceNumber": str(sequence),
            "Timestamp": formatdate(usegmt=True),
            "To": form["To"],
        }
        if duration_s is not None:
            params["CallDuration"] = str(duration_s)
        return self._signed(form["StatusCallback"], params, token=token)

    def incoming_sms(
        self,
        sender: str,
        body: str,
        *,
        media: tuple[str, ...] = (),
        sid: str | None = None,
        url: str = PUBLIC_URL + INBOUND_PATH,
        token: str | None = None,
    ) -> Webhook:
        """Twilio's incoming-message webhook for a text someone sends to the service's number."""
        sid = sid or "SM" + secrets.token_hex(16)
        params = {
            "AccountSid": self.account_sid,
            "ApiVersion": "2010-04-01",
            "Body": body,
            "From": sender,
            "FromCountry": "US",
            "MessageSid": sid,
            "NumMedia": str(len(media)),
            "NumSegments": "1",
            "SmsMessageSid": sid,
            "SmsSid": sid,
            "SmsStatus": "received",
            "To": self.from_number,
            "ToCountry": "US",
        }
        for i, media_url in enumerate(media):
            params[f"MediaUrl{i}"] = media_url
            params[f"MediaContentType{i}"] = "image/jpeg"
        return self._signed(url, params, token=token)


def _handler(standin: TwilioStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            form = dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
            status, body, headers = standin.answer(
                self.command, urlsplit(self.path).path, self.headers.get("authorization"), form
            )
            content = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(content)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(content)

        do_POST = _serve
        do_GET = _serve

    return Handler


@contextmanager
def twilio_standin() -> Iterator[TwilioStandIn]:
    standin = TwilioStandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(standin))
    server.daemon_threads = True
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
