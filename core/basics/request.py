"""The protocol-neutral request and answer the fronts exchange with the kernel."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from tollway._core.basics.errors import invalid_request

PAYMENT_METHODS = ("credits", "x402")  # the values of X-Payment-Method, in any case


@dataclasses.dataclass(frozen=True)
class TokenCredential:
    """Who calls: the agent of an access token (checked by the kernel like a bearer token)."""

    token: str


@dataclasses.dataclass(frozen=True)
class HeldWallet:
    """Who calls: a wallet whose private key the front itself holds (the stdio MCP
    front's TOLLWAY_AGENT_KEY). It counts as proven for reads and writes, as a signed
    agent proof of that wallet would; only a front holding the key may build one."""

    address: str


Credential = TokenCredential | HeldWallet


@dataclasses.dataclass
class CallRequest:
    method: str
    path: str  # without the query string (the HTTP front's router drops a trailing slash)
    url: str  # absolute URL, used as the x402 resource
    headers: Mapping[str, str]  # lower-case names
    body: bytes = b""
    query: Mapping[str, str] = dataclasses.field(default_factory=dict)
    client_ip: str | None = None
    # Who calls and how it pays, when the front says so without HTTP headers (MCP):
    # `credential` replaces Authorization / X-Agent-ID + X-Agent-Proof, `payment`
    # (the x402 payment object, or its base64 header form) replaces PAYMENT-SIGNATURE.
    credential: Credential | None = None
    payment: dict[str, Any] | str | None = None
    # What handling this request has worked out already (the verified proof, the
    # access token's caller, the payment's payer), so that it is done only once.
    memo: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    raw_path: str | None = None  # the path as the client sent it, trailing slash kept (HTTP only)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def payment_method(self) -> Literal["credits", "x402"] | None:
        """The payment method the caller asks for (`X-Payment-Method`, any case), None
        when it names none; another value is refused (400, before any payment)."""
        raw = (self.header("x-payment-method") or "").strip().lower()
        if raw in PAYMENT_METHODS:
            return raw  # type: ignore[return-value]
        if raw:
            raise invalid_request(
                "X-Payment-Method must be credits or x402.",
                [{"field": "X-Payment-Method", "message": "expected credits or x402"}],
            )
        return None


@dataclasses.dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    # The x402 SettleResponse object of a call paid by x402: the HTTP front sends it
    # as the PAYMENT-RESPONSE header (base64 JSON), the MCP front in the result's _meta.
    settlement: dict[str, Any] | None = None
