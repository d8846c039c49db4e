"""The buyer's ACP client: checkout session calls to one merchant over httpx, with the
headers the checkout RFC asks of a client (§3.1): `Authorization: Bearer <ACP token>`,
`API-Version`, `Content-Type`, `Idempotency-Key` on every POST (derived from the buying job,
so a job run again after a crash repeats each call with the same key and the merchant
answers it as before, never twice), `Request-Id`, and `Signature` + `Timestamp` when the
operator configured a signing key.

Signature (docs/commerce.md, "Signing"): `Timestamp` is RFC 3339 UTC; `Signature` is
base64url (no padding) of HMAC-SHA256(signing key, "<Timestamp>." + the body as RFC 8785
canonical JSON), the body being empty for a GET."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import rfc8785

TIMEOUT_S = 20.0
USER_AGENT = "Tollway-commerce-buyer/1 (ACP 2026-01-30)"


class Unreachable(Exception):
    """The merchant could not be reached or did not answer (no answer to read)."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any  # the decoded JSON, or None when the answer was not JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300 and isinstance(self.body, dict)

    def error(self) -> str:
        """The ACP error of a refusal, in words (`type`/`code`: `message`)."""
        if isinstance(self.body, dict) and "code" in self.body:
            return f"{self.body.get('type', 'error')}/{self.body.get('code')}: {self.body.get('message', '')}".strip()
        return f"HTTP {self.status}"


def canonical(body: Any) -> bytes:
    return b"" if body is None else rfc8785.dumps(body)


def sign(key: str, timestamp: str, body: Any) -> str:
    digest = hmac.new(key.encode(), timestamp.encode() + b"." + canonical(body), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AcpClient:
    """Checkout session calls to one merchant (a row of commerce_buyer_merchants)."""

    def __init__(self, http: httpx.AsyncClient, merchant: Mapping[str, Any], request_id: str) -> None:
        self.http = http
        self.base = str(merchant["base_url"]).rstrip("/")
        self.token = str(merchant["acp_token"])
        self.version = str(merchant["api_version"])
        self.signing_key = merchant.get("signing_key")
        self.request_id = request_id

    def _headers(self, body: Any, idempotency_key: str | None) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "API-Version": self.version,
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            "Request-Id": self.request_id,
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        if self.signing_key:
            stamp = now_rfc3339()
            headers["Timestamp"] = stamp
            headers["Signature"] = sign(str(self.signing_key), stamp, body)
        return headers

    async def call(self, method: str, path: str, body: Any = None, *, idempotency_key: str | None = None) -> Answer:
        content = None if body is None else canonical(body)
        try:
            reply = await self.http.request(
                method,
                self.base + path,
                content=content,
                headers=self._headers(body, idempotency_key),
                timeout=TIMEOUT_S,
                follow_redirects=False,
            )
        except httpx.HTTPError as exc:
            raise Unreachable(f"{method} {path}: {type(exc).__name__}") from exc
        try:
            decoded = msgspec.json.decode(reply.content) if reply.content else None
        except msgspec.DecodeError:
            decoded = None
        return Answer(reply.status_code, decoded)

    async def create(self, body: Mapping[str, Any], key: str) -> Answer:
        return await self.call("POST", "/checkout_sessions", body, idempotency_key=key)

    async def update(self, session_id: str, body: Mapping[str, Any], key: str) -> Answer:
        return await self.call("POST", f"/checkout_sessions/{session_id}", body, idempotency_key=key)

    async def get(self, session_id: str) -> Answer:
        return await self.call("GET", f"/checkout_sessions/{session_id}")

    async def complete(self, session_id: str, body: Mapping[str, Any], key: str) -> Answer:
        return await self.call("POST", f"/checkout_sessions/{session_id}/complete", body, idempotency_key=key)

    async def cancel(self, session_id: str, key: str) -> Answer:
        return await self.call("POST", f"/checkout_sessions/{session_id}/cancel", {}, idempotency_key=key)
