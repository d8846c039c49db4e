"""A local stand-in for the part of Twilio's REST API the telephony plugin uses, on 127.0.0.1
(the standard library's HTTP server, in a thread), built from Twilio's documented formats:

* `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` (form: To, From, Body, StatusCallback)
  and `.../Calls.json` (To, From, Twiml or Url, StatusCallback), HTTP Basic auth
  AccountSid:AuthToken; answered 201 with the created resource (`sid` SM…/CA…, `status`
  `queued`), or Twilio's error body `{code, message, more_info, status}`: 401 code 20003 for
  wrong credentials, 400 code 21211 for a `To` that is not a phone number (or one the test
  declares invalid), 400 code 21604/21602/21205 for a missing To, Body, or Twiml/Url.
* The account's numbers: `GET .../AvailablePhoneNumbers/{CountryCode}/Local.json` (query
  SmsEnabled, VoiceEnabled, PageSize) answers 200 `{available_phone_numbers: [{phone_number,
  friendly_name, iso_country, capabilities, ...}], page, page_size, uri, ...}` from the
  stand-in's stock (`stock`; an empty list when none is left, 404 code 20404 for a country it
  does not sell in); `POST .../IncomingPhoneNumbers.json` (form PhoneNumber, SmsUrl, SmsMethod,
  VoiceUrl, VoiceMethod, FriendlyName) buys one, 201 with the IncomingPhoneNumber resource
  (`sid` PN…, `phone_number`, `sms_url`, `voice_url`, `capabilities`, `status` `in-use`),
  or 400 code 21422 when the number is not for sale, 21421 when it is missing; `DELETE
  .../IncomingPhoneNumbers/{Sid}.json` releases it, 204 with no body (404 code 20404 when the
  account has no such number); `GET .../IncomingPhoneNumbers.json?FriendlyName=…` lists the
  account's numbers of that exact FriendlyName (`{incoming_phone_numbers: [...]}`). Messages
  and calls go only from a number of the account.
* Every request is recorded (path, form, whether the credentials were right), and a test
  may script the next answers (`fail_next`) or a delay (`delay_s`, or `number_delay_s` for
  the numbers' requests).
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
_AVAILABLE = re.compile(r"^/2010-04-01/Accounts/([^/]+)/AvailablePhoneNumbers/([A-Z]{2})/Local\.json$")
_INCOMING = re.compile(r"^/2010-04-01/Accounts/([^/]+)/IncomingPhoneNumbers(?:/(PN[0-9a-f]{32}))?\.json$")
INBOUND_CALL_PATH = "/v1/telephony/twilio/inbound-call"
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
        # numbers for sale (US, in this order), and those the account bought: sid -> the form it was bought with
        self.stock: list[str] = [f"+1415555{n:04d}" for n in range(7000, 7020)]
        self.countries = {"US"}
        self.owned: dict[str, dict[str, str]] = {}
        self.released: list[str] = []  # sids, in order
        self.number_delay_s = 0.0
        self._lock = threading.Lock()
        self.url = ""

    # -- the service's settings ---------------------------------------------------------
    def env(self, public_url: str = PUBLIC_URL, *, agent_numbers: bool = False) -> dict[str, str]:
        """The service's settings for this stand-in; agents share the configured number unless
        `agent_numbers` (then each agent buys its own)."""
        out = {"TOLLWAY_SMS_AGENT_NUMBERS": "on" if agent_numbers else "off"}
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
        if _AVAILABLE.match(urlsplit(path).path) or _INCOMING.match(urlsplit(path).path):
            if self.number_delay_s:
                time.sleep(self.number_delay_s)
            return self._numbers(method, path, authorized, form)
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
        if form.get("From") != self.from_number and form.get("From") not in self.numbers_owned():
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

    def _numbers(
        self, method: str, path: str, authorized: bool, form: dict[str, str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        split = urlsplit(path)
        available, incoming = _AVAILABLE.match(split.path), _INCOMING.match(split.path)
        account = (available or incoming).group(1)  # type: ignore[union-attr]
        if not authorized or account != self.account_sid:
            return _error(401, 20003, "Authenticate")
        base = f"/2010-04-01/Accounts/{self.account_sid}"
        if available and method == "GET":
            country = available.group(2)
            if country not in self.countries:
                return _error(404, 20404, "The requested resource was not found")
            query = dict(parse_qsl(split.query))
            size = int(query.get("PageSize") or 50)
            with self._lock:
                offered = self.stock[:size]
            return (
                200,
                {
                    "available_phone_numbers": [
                        {
                            "friendly_name": f"({n[2:5]}) {n[5:8]}-{n[8:]}",
                            "phone_number": n,
                            "lata": "722",
                            "locality": "San Francisco",
                            "rate_center": "SNFC CA 01",
                            "latitude": "37.774900",
                            "longitude": "-122.419400",
                            "region": "CA",
                            "postal_code": "94103",
                            "iso_country": country,
                            "address_requirements": "none",
                            "beta": False,
                            "capabilities": {"voice": True, "SMS": True, "MMS": True, "fax": False},
                        }
                        for n in offered
                    ],
                    "end": max(0, len(offered) - 1),
                    "first_page_uri": f"{base}/AvailablePhoneNumbers/{country}/Local.json?{split.query}",
                    "next_page_uri": None,
                    "page": 0,
                    "page_size": size,
                    "previous_page_uri": None,
                    "start": 0,
                    "uri": f"{base}/AvailablePhoneNumbers/{country}/Local.json?{split.query}",
                },
                {},
            )
        if incoming and incoming.group(2) is None and method == "GET":
            wanted = dict(parse_qsl(split.query)).get("FriendlyName")
            with self._lock:
                found = [
                    (sid, form)
                    for sid, form in self.owned.items()
                    if wanted is None or form.get("FriendlyName", form["PhoneNumber"]) == wanted
                ]
            return (
                200,
                {
                    "incoming_phone_numbers": [
                        {
                            "account_sid": self.account_sid,
                            "friendly_name": form.get("FriendlyName", form["PhoneNumber"]),
                            "phone_number": form["PhoneNumber"],
                            "sid": sid,
                            "sms_url": form.get("SmsUrl", ""),
                            "status": "in-use",
                            "voice_url": form.get("VoiceUrl", ""),
                        }
                        for sid, form in found
                    ],
                    "page": 0,
                    "page_size": 50,
                    "start": 0,
                    "end": max(0, len(found) - 1),
                    "next_page_uri": None,
                    "uri": f"{base}/IncomingPhoneNumbers.json?{split.query}",
                },
                {},
            )
        if incoming and incoming.group(2) is None and method == "POST":
            number = form.get("PhoneNumber", "")
            if not number:
                return _error(400, 21421, "PhoneNumber is invalid")
            with self._lock:
                if number not in self.stock:
                    return _error(400, 21422, "PhoneNumber is not available")
                self.stock.remove(number)
                sid = "PN" + secrets.token_hex(16)
                self.owned[sid] = dict(form)
            now = formatdate(usegmt=True)
            return (
                201,
                {
                    "account_sid": self.account_sid,
                    "address_requirements": "none",
                    "address_sid": None,
                    "api_version": "2010-04-01",
                    "beta": False,
                    "capabilities": {"voice": True, "sms": True, "mms": True, "fax": False},
                    "date_created": now,
                    "date_updated": now,
                    "emergency_status": "Inactive",
                    "friendly_name": form.get("FriendlyName") or number,
                    "origin": "twilio",
                    "phone_number": number,
                    "sid": sid,
                    "sms_method": form.get("SmsMethod", "POST"),
                    "sms_url": form.get("SmsUrl", ""),
                    "status": "in-use",
                    "status_callback": "",
                    "uri": f"{base}/IncomingPhoneNumbers/{sid}.json",
                    "voice_method": form.get("VoiceMethod", "POST"),
                    "voice_url": form.get("VoiceUrl", ""),
                },
                {},
            )
        if incoming and incoming.group(2) is not None and method == "DELETE":
            with self._lock:
                if self.owned.pop(incoming.group(2), None) is None:
                    return _error(404, 20404, "The requested resource was not found")
                self.released.append(incoming.group(2))
            return 204, {}, {}
        return _error(405, 20004, "Method not allowed")

    def numbers_owned(self) -> dict[str, str]:
        """The account's bought numbers: number -> sid."""
        with self._lock:
            return {form["PhoneNumber"]: sid for sid, form in self.owned.items()}

    def api_calls(self, resource: str) -> list[Recorded]:
        return [r for r in self.requests if urlsplit(r.path).path.endswith(f"/{resource}.json")]

    def number_calls(self, method: str) -> list[Recorded]:
        """The requests about the account's numbers: GET the offer, POST a purchase, DELETE a release."""
        return [r for r in self.requests if r.method == method and ("PhoneNumbers" in r.path)]

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
        to: str | None = None,
    ) -> Webhook:
        """Twilio's incoming-message webhook for a text someone sends to the service's number
        (or to `to`, a number the account bought: to the SmsUrl it was bought with)."""
        sid = sid or "SM" + secrets.token_hex(16)
        if to is not None and to in self.numbers_owned():
            url = self.owned[self.numbers_owned()[to]]["SmsUrl"]
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
            "To": to or self.from_number,
            "ToCountry": "US",
        }
        for i, media_url in enumerate(media):
            params[f"MediaUrl{i}"] = media_url
            params[f"MediaContentType{i}"] = "image/jpeg"
        return self._signed(url, params, token=token)

    def incoming_call(self, sender: str, to: str, *, token: str | None = None) -> Webhook:
        """Twilio's incoming-call webhook for a call to a number the account bought (its VoiceUrl)."""
        sid = "CA" + secrets.token_hex(16)
        params = {
            "AccountSid": self.account_sid,
            "ApiVersion": "2010-04-01",
            "CallSid": sid,
            "CallStatus": "ringing",
            "Called": to,
            "Caller": sender,
            "Direction": "inbound",
            "From": sender,
            "FromCountry": "US",
            "To": to,
            "ToCountry": "US",
        }
        return self._signed(self.owned[self.numbers_owned()[to]]["VoiceUrl"], params, token=token)


def _handler(standin: TwilioStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            form = dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
            split = urlsplit(self.path)
            path = split.path + (f"?{split.query}" if split.query and "PhoneNumbers" in split.path else "")
            status, body, headers = standin.answer(self.command, path, self.headers.get("authorization"), form)
            content = json.dumps(body).encode() if status != 204 else b""
            self.send_response(status)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(content)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(content)

        do_POST = _serve
        do_GET = _serve
        do_DELETE = _serve

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
