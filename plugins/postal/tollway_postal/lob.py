"""The `lob` provider of the `mail` kind: Lob's REST API (https://docs.lob.com) through the
service's shared httpx client, authenticated with HTTP Basic, the API key as the user name
and an empty password.

The `mail` kind's client offers:

* `verify(address) -> Verification`: `POST /v1/us_verifications`, the USPS deliverability
  of a US address (`deliverable`, `deliverable_unnecessary_unit`,
  `deliverable_incorrect_unit`, `deliverable_missing_unit`, `undeliverable`);
* `send_letter(to=..., html=..., color=..., idempotency_key=..., description=..., metadata=...)
  -> Letter`: `POST /v1/letters` from the operator's return address, with Lob's own
  `Idempotency-Key` header, so a repeated request (a retry after a lost answer, a job run
  again after a worker crash) gives back the same letter instead of printing a second one.
  HTML under Lob's inline limit (10,000 characters) is sent as a form field, longer HTML
  as an uploaded `letter.html` (multipart);
* `letter(letter_id) -> Letter | None`: `GET /v1/letters/{id}`, with its tracking events.

Failures are `ToolError`s as for every provider (docs/providers.md): 401/403
`provider_auth`, 429 `rate_limited`, other statuses and transport failures
`provider_unavailable`; Lob refusing the recipient's address as undeliverable
(`failed_deliverability_strictness`, or a verification it cannot read) is
`target_unreachable`. The API key is sent only in the Authorization header and never
appears in a message.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Protocol

import httpx

from tollway import Provider, Reply, Setting, ToolError, Upstream, to_micro

from .shapes import PostalAddress

KIND = "mail"
INLINE_HTML_MAX = 10_000  # Lob takes an HTML string of under 10,000 characters; longer HTML is uploaded
DELIVERABLE = ("deliverable", "deliverable_unnecessary_unit", "deliverable_incorrect_unit", "deliverable_missing_unit")
UNDELIVERABLE = "undeliverable"
RETRY_DELAYS_S = (0.5, 1.5)  # a letter request that got no answer, a 5xx or a 429 is sent again, same key
_LETTER_ID = re.compile(r"^ltr_[A-Za-z0-9]{1,64}$")

LOB = Upstream(
    family=KIND,
    name="lob",
    label="Lob",
    default_base_url="https://api.lob.com",
    description="Base URL of Lob's API (or a local stand-in in tests).",
    api_key="Lob secret API key (live_... prints and mails; test_... does not); the Basic auth user name.",
    timeout_s=30.0,
)
USE_TYPE = Setting(
    KIND, "lob_use_type", "operational", "Lob's use_type of every letter: operational (default) or marketing."
)
COST = Setting(
    KIND,
    "lob_cost_usdc",
    "0",
    "What one letter costs the operator at Lob, in USDC (stored beside receipts for margins; never shown).",
)
FROM_NAME = Setting(KIND, "from_name", None, "The sender's name on the return address (at most 40 characters).")
FROM_LINE1 = Setting(KIND, "from_line1", None, "The return address's street line.")
FROM_LINE2 = Setting(KIND, "from_line2", None, "The return address's second line (suite, unit), if any.")
FROM_CITY = Setting(KIND, "from_city", None, "The return address's city.")
FROM_STATE = Setting(KIND, "from_state", None, "The return address's two-letter state code.")
FROM_ZIP = Setting(KIND, "from_zip", None, "The return address's ZIP or ZIP+4.")
API_KEY: Setting = LOB.api_key_setting  # type: ignore[assignment]  # `api_key=` above declares it


@dataclasses.dataclass(frozen=True)
class Verification:
    id: str | None  # us_ver_...
    deliverability: str
    primary_line: str | None
    secondary_line: str | None
    last_line: str | None


@dataclasses.dataclass(frozen=True)
class TrackingEvent:
    name: str
    time: str | None
    location: str | None


@dataclasses.dataclass(frozen=True)
class Letter:
    id: str  # ltr_...
    expected_delivery_date: str | None
    status: str | None
    tracking_events: tuple[TrackingEvent, ...]


class MailClient(Protocol):
    """The `mail` kind's client (see the module docstring; `LobMail` is one): what the
    tool and the tracking route use of `provider("mail")`."""

    async def verify(self, address: PostalAddress) -> Verification: ...

    async def send_letter(
        self,
        *,
        to: PostalAddress,
        html: str,
        color: bool,
        idempotency_key: str,
        description: str,
        metadata: Mapping[str, str],
    ) -> Letter: ...

    async def letter(self, letter_id: str) -> Letter | None: ...


def _text(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def _lob_code(reply: Reply) -> str | None:
    body = reply.body
    error = body.get("error") if isinstance(body, dict) else None
    return _text(error.get("code")) if isinstance(error, dict) else None


def _lob_message(reply: Reply) -> str | None:
    body = reply.body
    error = body.get("error") if isinstance(body, dict) else None
    return _text(error.get("message")) if isinstance(error, dict) else None


def _address_fields(prefix: str, address: Mapping[str, str | None]) -> dict[str, str]:
    """An inline Lob address as form fields (`to[address_line1]`, ...)."""
    return {f"{prefix}[{name}]": value for name, value in address.items() if value}


@dataclasses.dataclass(frozen=True)
class LobMail:
    """The `mail` client for Lob (see the module docstring)."""

    http: httpx.AsyncClient
    base_url: str
    api_key: str = dataclasses.field(repr=False)
    sender: Mapping[str, str | None] = dataclasses.field(
        default_factory=dict
    )  # Lob's address fields of the return address
    use_type: str = "operational"

    @property
    def _auth(self) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"{self.api_key}:".encode()).decode()}

    async def verify(self, address: PostalAddress) -> Verification:
        form = {
            "recipient": address.name,
            "primary_line": address.line1,
            "secondary_line": address.line2 or "",
            "city": address.city,
            "state": address.state.upper(),
            "zip_code": address.zip,
        }
        reply = await LOB.send(
            self.http, "/v1/us_verifications", base_url=self.base_url, method="POST", data=form, headers=self._auth
        )
        if reply.status in (400, 422):  # Lob could not read the address at all: it cannot be mailed to
            raise ToolError(
                "target_unreachable",
                f"Lob could not verify the address: {_lob_message(reply) or 'refused'}.",
                status=400,
                details={"upstream_status": reply.status, "lob_code": _lob_code(reply)},
            )
        body = LOB.json_of(reply)
        found = body if isinstance(body, dict) else {}
        deliverability = found.get("deliverability")
        if not isinstance(deliverability, str) or deliverability not in (*DELIVERABLE, UNDELIVERABLE):
            raise LOB.unavailable(
                "Lob answered the address verification without a deliverability it documents.",
                upstream_status=reply.status,
            )
        return Verification(
            id=_text(found.get("id")),
            deliverability=deliverability,
            primary_line=_text(found.get("primary_line")),
            secondary_line=_text(found.get("secondary_line")),
            last_line=_text(found.get("last_line")),
        )

    async def send_letter(
        self,
        *,
        to: PostalAddress,
        html: str,
        color: bool,
        idempotency_key: str,
        description: str,
        metadata: Mapping[str, str],
    ) -> Letter:
        recipient = {
            "name": to.name,
            "address_line1": to.line1,
            "address_line2": to.line2,
            "address_city": to.city,
            "address_state": to.state.upper(),
            "address_zip": to.zip,
            "address_country": "US",
        }
        form = {
            "description": description[:255],
            **_address_fields("to", recipient),
            **_address_fields("from", {**self.sender, "address_country": "US"}),
            "color": "true" if color else "false",
            "use_type": self.use_type,
            **{f"metadata[{k}]": v for k, v in metadata.items()},
        }
        headers = {**self._auth, "Idempotency-Key": idempotency_key}
        failure: ToolError | None = None
        for delay in (0.0, *RETRY_DELAYS_S):
            await asyncio.sleep(delay)
            try:
                reply = await self._post_letter(form, html, headers)
            except ToolError as exc:  # no answer: Lob may or may not have made it; the same key asks again
                failure = exc
                continue
            if reply.status == 429 or reply.status >= 500:
                failure = LOB.refusal(reply, lob_code=_lob_code(reply))
                continue
            if reply.status == 422 and _lob_code(reply) == "failed_deliverability_strictness":
                raise ToolError(
                    "target_unreachable",
                    "Lob refused to mail to the address: it does not meet the account's deliverability setting.",
                    status=400,
                    details={"upstream_status": 422, "lob_code": "failed_deliverability_strictness"},
                )
            if not reply.ok:
                raise LOB.refusal(reply, lob_code=_lob_code(reply))
            return self._letter_of(LOB.json_of(reply), reply.status)
        assert failure is not None
        raise failure

    async def _post_letter(self, form: dict[str, str], html: str, headers: dict[str, str]) -> Reply:
        if len(html) < INLINE_HTML_MAX:
            return await LOB.send(
                self.http,
                "/v1/letters",
                base_url=self.base_url,
                method="POST",
                data={**form, "file": html},
                headers=headers,
            )
        try:  # an upload: Upstream.send has no files, so the same failure mapping by hand
            response = await self.http.post(
                self.base_url.rstrip("/") + "/v1/letters",
                data=form,
                headers=headers,
                timeout=LOB.timeout_s,
                files={"file": ("letter.html", html.encode(), "text/html")},
            )
        except httpx.TimeoutException as exc:
            raise LOB.unavailable("Lob did not answer in time.", reason="timeout") from exc
        except httpx.HTTPError as exc:
            raise LOB.unavailable("Lob could not be reached.", reason=type(exc).__name__) from exc
        return Reply.of(response)

    async def letter(self, letter_id: str) -> Letter | None:
        if not _LETTER_ID.match(letter_id):
            return None
        reply = await LOB.send(self.http, f"/v1/letters/{letter_id}", base_url=self.base_url, headers=self._auth)
        if reply.status == 404:
            return None
        return self._letter_of(LOB.json_of(reply), reply.status)

    @staticmethod
    def _letter_of(body: Any, status: int) -> Letter:
        letter_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(letter_id, str) or not _LETTER_ID.match(letter_id):
            raise LOB.unavailable("Lob answered a letter without a letter id.", upstream_status=status)
        events = body.get("tracking_events")
        tracking = tuple(
            TrackingEvent(name=str(e.get("name")), time=_text(e.get("time")), location=_text(e.get("location")))
            for e in (events if isinstance(events, list) else [])
            if isinstance(e, dict) and _text(e.get("name"))
        )
        return Letter(
            id=letter_id,
            expected_delivery_date=_text(body.get("expected_delivery_date")),
            status=_text(body.get("status")),
            tracking_events=tracking,
        )


def _build(settings: Mapping[str, str], http: httpx.AsyncClient) -> LobMail:
    sender = {
        "name": settings.get("from_name"),
        "address_line1": settings.get("from_line1"),
        "address_line2": settings.get("from_line2"),
        "address_city": settings.get("from_city"),
        "address_state": (settings.get("from_state") or "").upper() or None,
        "address_zip": settings.get("from_zip"),
    }
    use_type = (settings.get("lob_use_type") or "operational").strip().lower()
    return LobMail(
        http=http,
        base_url=LOB.base_url(settings),
        api_key=(settings.get("lob_api_key") or "").strip(),
        sender={k: (v or "").strip() or None for k, v in sender.items()},
        use_type=use_type if use_type in ("operational", "marketing") else "operational",
    )


def _cost(settings: Mapping[str, str]) -> int:
    try:
        return max(0, to_micro((settings.get("lob_cost_usdc") or "0").strip()))
    except (ValueError, ArithmeticError):
        return 0


LOB_MAIL = Provider(
    kind=KIND,
    name="lob",
    build=_build,
    settings=(*LOB.settings, USE_TYPE, COST, FROM_NAME, FROM_LINE1, FROM_LINE2, FROM_CITY, FROM_STATE, FROM_ZIP),
    requires=(API_KEY, FROM_NAME, FROM_LINE1, FROM_CITY, FROM_STATE, FROM_ZIP),
    cost_estimate=_cost,
    description="Lob: US address verification and letters printed and mailed (HTTP Basic with the API key).",
)
