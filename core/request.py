"""The protocol-neutral request and answer the fronts exchange with the kernel."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass
class CallRequest:
    method: str
    path: str  # without the query string
    url: str  # absolute URL, used as the x402 resource
    headers: Mapping[str, str]  # lower-case names
    body: bytes = b""
    query: Mapping[str, str] = dataclasses.field(default_factory=dict)
    client_ip: str | None = None
    # What handling this request has worked out already (the verified proof, the
    # access token's caller, the payment's payer), so that it is done only once.
    memo: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclasses.dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
