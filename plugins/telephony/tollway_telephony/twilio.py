"""The `twilio` providers of the `sms` and `voice` kinds: clients of Twilio's REST API
(`POST /2010-04-01/Accounts/{AccountSid}/Messages.json` and `.../Calls.json`, form-encoded,
HTTP Basic auth AccountSid:AuthToken) through the service's shared httpx client, and the
rule by which Twilio signs the webhooks it sends (`X-Twilio-Signature`).

How Twilio's refusals map to the service's failure codes (docs/providers.md):
401/403 `provider_auth`, 429 `rate_limited`, 5xx, timeouts and unreadable answers
`provider_unavailable`, and a 400 with error 21211 (invalid `To` number) or 21614 (not a
mobile number) an `invalid_input` refusal of that recipient."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from tollway import Provider, Refusal, Setting, Upstream, to_micro

API_VERSION = "2010-04-01"
DEFAULT_API_URL = "https://api.twilio.com"
TIMEOUT_S = 10.0
# Twilio's error codes for a recipient it will not reach: the number is not a valid phone
# number (21211), or not a mobile number that can receive SMS (21614).
INVALID_NUMBER_CODES = frozenset({21211, 21614})
DEFAULT_COST = {"sms": "0.0083", "voice": "0.014"}  # a US SMS segment, a US call's first minute (list prices)


@dataclasses.dataclass(frozen=True)
class Created:
    """What Twilio answered to a created message or call: its SID and status."""

    sid: str
    status: str


class SmsClient(Protocol):
    """What every `sms` provider's client offers (`TwilioClient` of kind `sms` is one)."""

    @property
    def from_number(self) -> str: ...

    async def send_sms(self, *, to: str, body: str, status_callback: str | None = None) -> Created: ...


class VoiceClient(Protocol):
    """What every `voice` provider's client offers (`TwilioClient` of kind `voice` is one)."""

    @property
    def from_number(self) -> str: ...

    async def call(
        self, *, to: str, twiml: str | None = None, url: str | None = None, status_callback: str | None = None
    ) -> Created: ...


def _settings(kind: str) -> tuple[Upstream, tuple[Setting, ...], tuple[Setting, ...]]:
    """The kind's Twilio API (its URL setting), its settings, and those it cannot work without."""
    api = Upstream(
        family=kind,
        name="twilio",
        label="Twilio",
        default_base_url=DEFAULT_API_URL,
        timeout_s=TIMEOUT_S,
        description="Base URL of Twilio's REST API (or a local stand-in in tests).",
    )
    account_sid = Setting(kind, "twilio_account_sid", None, "The Twilio account SID (AC…) that sends.")
    auth_token = Setting(
        kind,
        "twilio_auth_token",
        None,
        "The account's auth token: the API's password and the key of the webhook signatures.",
        secret=True,
    )
    from_number = Setting(
        kind, "twilio_from_number", None, "The Twilio number (E.164, e.g. +15005550006) the service sends from."
    )
    cost = Setting(
        kind,
        "twilio_cost_usdc",
        DEFAULT_COST[kind],
        f"What one {'message' if kind == 'sms' else 'call'} costs us at Twilio (USDC; set your rate).",
    )
    required = (account_sid, auth_token, from_number)
    return api, (*required, api.base_url_setting, cost), required


@dataclasses.dataclass(frozen=True)
class TwilioClient:
    """One account's client for one kind; every provider of the kind offers `from_number`,
    `auth_token` (to check webhooks) and the kind's method (`send_sms` or `call`)."""

    kind: str
    account_sid: str
    from_number: str
    api_url: str
    api: Upstream = dataclasses.field(repr=False)
    http: httpx.AsyncClient = dataclasses.field(repr=False)
    auth_token: str = dataclasses.field(repr=False)

    async def send_sms(self, *, to: str, body: str, status_callback: str | None = None) -> Created:
        """Create one outbound message; Twilio's SID (SM…) and status (`queued`, usually)."""
        form = {"To": to, "From": self.from_number, "Body": body}
        if status_callback:
            form["StatusCallback"] = status_callback
        return await self._create("Messages", form, to)

    async def call(
        self, *, to: str, twiml: str | None = None, url: str | None = None, status_callback: str | None = None
    ) -> Created:
        """Place one outbound call that runs `twiml` (or the TwiML Twilio fetches from `url`);
        Twilio's SID (CA…) and status. The status callback is sent when the call ends."""
        if (twiml is None) == (url is None):
            raise ValueError("give exactly one of twiml and url")
        form = {"To": to, "From": self.from_number}
        form.update({"Twiml": twiml} if twiml is not None else {"Url": url or ""})
        if status_callback:
            form["StatusCallback"] = status_callback
        return await self._create("Calls", form, to)

    def _authorization(self) -> str:
        return "Basic " + base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()

    async def _create(self, resource: str, form: Mapping[str, str], to: str) -> Created:
        path = f"/{API_VERSION}/Accounts/{quote(self.account_sid, safe='')}/{resource}.json"
        reply = await self.api.send(
            self.http,
            path,
            base_url=self.api_url,
            method="POST",
            data=form,
            headers={"Authorization": self._authorization(), "Accept": "application/json"},
        )
        error = reply.body if isinstance(reply.body, dict) else {}
        code = error.get("code") if isinstance(error.get("code"), int) else None
        if reply.status == 400 and code in INVALID_NUMBER_CODES:
            said = str(error.get("message") or "not a number Twilio can reach")[:300]
            raise Refusal(
                "invalid_input",
                f"Twilio refused the number {to}: {said} (Twilio error {code}).",
                details=[{"field": "to", "message": said}],
                extra={"twilio_code": code},
            )
        if not reply.ok:
            raise self.api.refusal(reply, **({"twilio_code": code} if code is not None else {}))
        created = self.api.json_of(reply)
        sid, status = (created.get("sid"), created.get("status")) if isinstance(created, dict) else (None, None)
        if not isinstance(sid, str) or not sid or not isinstance(status, str):
            raise self.api.unavailable(
                f"Twilio answered a created {resource[:-1].lower()} without its sid and status.",
                upstream_status=reply.status,
            )
        return Created(sid=sid, status=status)


def _provider(kind: str, description: str) -> Provider:
    api, settings, required = _settings(kind)

    def build(values: Mapping[str, str], http: httpx.AsyncClient) -> TwilioClient:
        return TwilioClient(
            kind=kind,
            account_sid=values["twilio_account_sid"].strip(),
            from_number=values["twilio_from_number"].strip(),
            api_url=api.base_url(values),
            api=api,
            http=http,
            auth_token=values["twilio_auth_token"].strip(),
        )

    def cost(values: Mapping[str, str]) -> int:
        try:
            return max(0, to_micro((values.get("twilio_cost_usdc") or DEFAULT_COST[kind]).strip()))
        except (ValueError, ArithmeticError):  # an unreadable rate: the list price
            return to_micro(DEFAULT_COST[kind])

    return Provider(
        kind=kind,
        name="twilio",
        build=build,
        settings=settings,
        requires=required,
        cost_estimate=cost,
        description=description,
    )


SMS_TWILIO = _provider("sms", "Twilio Programmable Messaging: one message per recipient, statuses by signed callbacks.")
VOICE_TWILIO = _provider(
    "voice", "Twilio Programmable Voice: a call that speaks TwiML, its end reported by a signed callback."
)


# -- webhook signatures ------------------------------------------------------------------
def signature(auth_token: str, url: str, params: Iterable[tuple[str, str]]) -> str:
    """What Twilio puts in `X-Twilio-Signature`: base64 of HMAC-SHA1 under the auth token of
    the full URL it posted to, followed by every POST parameter sorted by name, each name
    immediately followed by its value."""
    signed = url + "".join(name + value for name, value in sorted(params))
    return base64.b64encode(hmac.new(auth_token.encode(), signed.encode(), hashlib.sha1).digest()).decode()


def signed_by(auth_token: str, url: str, params: Iterable[tuple[str, str]], header: str | None) -> bool:
    """Whether `header` is the signature of `url` and `params` under `auth_token`."""
    if not header or not auth_token:
        return False
    return hmac.compare_digest(signature(auth_token, url, params).encode(), header.strip().encode())


def account_of(settings: Mapping[str, Any]) -> tuple[str, str] | None:
    """(account SID, auth token) of a kind's Twilio settings, when both are set."""
    sid = str(settings.get("twilio_account_sid") or "").strip()
    token = str(settings.get("twilio_auth_token") or "").strip()
    return (sid, token) if sid and token else None
