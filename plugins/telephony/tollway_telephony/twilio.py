"""The `twilio` providers of the `sms` and `voice` kinds: clients of Twilio's REST API
(`POST /2010-04-01/Accounts/{AccountSid}/Messages.json` and `.../Calls.json`, form-encoded,
HTTP Basic auth AccountSid:AuthToken) through the service's shared httpx client, and the
rule by which Twilio signs the webhooks it sends (`X-Twilio-Signature`). The same client
finds, buys and releases the account's numbers (`AvailablePhoneNumbers/{Country}/Local.json`,
`IncomingPhoneNumbers.json`, `IncomingPhoneNumbers/{Sid}.json`): an agent's own number.

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

from tollway import Provider, Refusal, Reply, Setting, Upstream, to_micro

API_VERSION = "2010-04-01"
DEFAULT_API_URL = "https://api.twilio.com"
TIMEOUT_S = 10.0
# Twilio's error codes for a recipient it will not reach: the number is not a valid phone
# number (21211), or not a mobile number that can receive SMS (21614).
INVALID_NUMBER_CODES = frozenset({21211, 21614})
DEFAULT_COST = {"sms": "0.0083", "voice": "0.014"}  # a US SMS segment, a US call's first minute (list prices)


# Twilio's error when the number asked for was bought by someone else meanwhile (21422).
NUMBER_TAKEN_CODES = frozenset({21422})


@dataclasses.dataclass(frozen=True)
class Created:
    """What Twilio answered to a created message or call: its SID and status."""

    sid: str
    status: str


@dataclasses.dataclass(frozen=True)
class Bought:
    """A number Twilio sold the account: its SID (PN…) and the number (E.164)."""

    sid: str
    phone_number: str


class NumbersClient(Protocol):
    """Finding, buying and releasing the account's numbers (`TwilioClient` does)."""

    @property
    def account_sid(self) -> str: ...

    async def available_numbers(self, country: str, *, limit: int = 5) -> list[str]: ...

    async def buy_number(self, phone_number: str, *, sms_url: str, voice_url: str, friendly_name: str) -> Bought: ...

    async def find_number(self, friendly_name: str) -> Bought | None: ...

    async def release_number(self, sid: str) -> bool: ...


class SmsClient(NumbersClient, Protocol):
    """What every `sms` provider's client offers (`TwilioClient` of kind `sms` is one)."""

    @property
    def from_number(self) -> str: ...

    async def send_sms(
        self, *, to: str, body: str, status_callback: str | None = None, from_number: str | None = None
    ) -> Created: ...


class VoiceClient(NumbersClient, Protocol):
    """What every `voice` provider's client offers (`TwilioClient` of kind `voice` is one)."""

    @property
    def from_number(self) -> str: ...

    async def call(
        self,
        *,
        to: str,
        twiml: str | None = None,
        url: str | None = None,
        status_callback: str | None = None,
        from_number: str | None = None,
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

    async def send_sms(
        self, *, to: str, body: str, status_callback: str | None = None, from_number: str | None = None
    ) -> Created:
        """Create one outbound message (from `from_number`, else the configured number);
        Twilio's SID (SM…) and status (`queued`, usually)."""
        form = {"To": to, "From": from_number or self.from_number, "Body": body}
        if status_callback:
            form["StatusCallback"] = status_callback
        return await self._create("Messages", form, to)

    async def call(
        self,
        *,
        to: str,
        twiml: str | None = None,
        url: str | None = None,
        status_callback: str | None = None,
        from_number: str | None = None,
    ) -> Created:
        """Place one outbound call (from `from_number`, else the configured number) that runs
        `twiml` (or the TwiML Twilio fetches from `url`); Twilio's SID (CA…) and status. The
        status callback is sent when the call ends."""
        if (twiml is None) == (url is None):
            raise ValueError("give exactly one of twiml and url")
        form = {"To": to, "From": from_number or self.from_number}
        form.update({"Twiml": twiml} if twiml is not None else {"Url": url or ""})
        if status_callback:
            form["StatusCallback"] = status_callback
        return await self._create("Calls", form, to)

    # -- the account's numbers ---------------------------------------------------------
    async def available_numbers(self, country: str, *, limit: int = 5) -> list[str]:
        """Local numbers of `country` (ISO 3166-1 alpha-2) Twilio offers now that take both
        texts and calls (`GET .../AvailablePhoneNumbers/{country}/Local.json?SmsEnabled=true
        &VoiceEnabled=true`) and need no address on file, in Twilio's order; empty when none."""
        path = f"{self._account_path()}/AvailablePhoneNumbers/{quote(country.upper(), safe='')}/Local.json"
        reply = await self.api.send(
            self.http,
            path,
            base_url=self.api_url,
            params={"SmsEnabled": "true", "VoiceEnabled": "true", "PageSize": str(limit)},
            headers=self._headers(),
        )
        body = self.api.json_of(reply)
        found = body.get("available_phone_numbers") if isinstance(body, dict) else None
        if not isinstance(found, list):
            raise self.api.unavailable(
                "Twilio answered a search of numbers without its list.", upstream_status=reply.status
            )
        # a number that needs an address or a regulatory bundle on file cannot be bought without one
        usable = [n for n in found if isinstance(n, dict) and n.get("address_requirements") in (None, "none")]
        numbers = [n.get("phone_number") for n in usable]
        return [n for n in numbers if isinstance(n, str) and n.startswith("+")][:limit]

    async def buy_number(self, phone_number: str, *, sms_url: str, voice_url: str, friendly_name: str) -> Bought:
        """Buy `phone_number` for the account (`POST .../IncomingPhoneNumbers.json`) with its
        incoming-message and incoming-call webhooks set. A number bought by someone else
        meanwhile raises `Refusal("number_taken")`; every other failure as `_create`'s."""
        form = {
            "PhoneNumber": phone_number,
            "SmsUrl": sms_url,
            "SmsMethod": "POST",
            "VoiceUrl": voice_url,
            "VoiceMethod": "POST",
            "FriendlyName": friendly_name[:64],
        }
        reply, code = await self._post("IncomingPhoneNumbers", form)
        if reply.status == 400 and code in NUMBER_TAKEN_CODES:
            raise Refusal("number_taken", f"Twilio no longer offers {phone_number} (Twilio error {code}).")
        if not reply.ok:
            raise self.api.refusal(reply, **({"twilio_code": code} if code is not None else {}))
        bought = self.api.json_of(reply)
        sid, number = (bought.get("sid"), bought.get("phone_number")) if isinstance(bought, dict) else (None, None)
        if not isinstance(sid, str) or not sid or not isinstance(number, str) or not number:
            raise self.api.unavailable(
                "Twilio answered a bought number without its sid and phone_number.", upstream_status=reply.status
            )
        return Bought(sid=sid, phone_number=number)

    async def find_number(self, friendly_name: str) -> Bought | None:
        """The account's number of that exact FriendlyName (`GET .../IncomingPhoneNumbers.json
        ?FriendlyName=…`), or None: finds a number bought by a send that died before keeping it."""
        reply = await self.api.send(
            self.http,
            f"{self._account_path()}/IncomingPhoneNumbers.json",
            base_url=self.api_url,
            params={"FriendlyName": friendly_name[:64], "PageSize": "20"},
            headers=self._headers(),
        )
        body = self.api.json_of(reply)
        found = body.get("incoming_phone_numbers") if isinstance(body, dict) else None
        if not isinstance(found, list):
            raise self.api.unavailable(
                "Twilio answered a list of numbers without its list.", upstream_status=reply.status
            )
        for number in found:
            if (
                isinstance(number, dict)
                and isinstance(number.get("sid"), str)
                and isinstance(number.get("phone_number"), str)
            ):
                return Bought(sid=number["sid"], phone_number=number["phone_number"])
        return None

    async def release_number(self, sid: str) -> bool:
        """Release a number of the account (`DELETE .../IncomingPhoneNumbers/{sid}.json`, 204);
        False when Twilio no longer has it (404): released already."""
        reply = await self.api.send(
            self.http,
            f"{self._account_path()}/IncomingPhoneNumbers/{quote(sid, safe='')}.json",
            base_url=self.api_url,
            method="DELETE",
            headers=self._headers(),
        )
        if reply.status == 404:
            return False
        if not reply.ok:
            raise self.api.refusal(reply)
        return True

    def _account_path(self) -> str:
        return f"/{API_VERSION}/Accounts/{quote(self.account_sid, safe='')}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": self._authorization(), "Accept": "application/json"}

    def _authorization(self) -> str:
        return "Basic " + base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()

    async def _post(self, resource: str, form: Mapping[str, str]) -> tuple[Reply, int | None]:
        """POST `form` to one of the account's list resources: the reply and Twilio's error code, if any."""
        reply = await self.api.send(
            self.http,
            f"{self._account_path()}/{resource}.json",
            base_url=self.api_url,
            method="POST",
            data=form,
            headers=self._headers(),
        )
        error = reply.body if isinstance(reply.body, dict) else {}
        return reply, error.get("code") if isinstance(error.get("code"), int) else None

    async def _create(self, resource: str, form: Mapping[str, str], to: str) -> Created:
        reply, code = await self._post(resource, form)
        error = reply.body if isinstance(reply.body, dict) else {}
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
