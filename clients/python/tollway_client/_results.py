"""What a tool call returns: an inline answer, a job's acceptance, or a finished job."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass
class Payment:
    """How a call was paid: `method` "x402" (with the settlement from PAYMENT-RESPONSE) or "credits"."""

    method: str
    amount_usdc: Decimal | None = None
    settlement: dict[str, Any] | None = None


@dataclass
class ToolResult(Generic[T]):
    """An inline tool's answer: `data` is the answer's `data` (the call's ids and the tool's output)."""

    data: T
    payment: Payment

    @property
    def request_id(self) -> str:
        return self.data["request_id"]  # type: ignore[index]

    @property
    def receipt_id(self) -> str:
        return self.data["receipt_id"]  # type: ignore[index]


@dataclass
class JobAccepted:
    """A job tool's 202: the job is paid for and queued; wait for it with `client.wait(request_id)`."""

    request_id: str
    tool: str
    status: str
    receipt_id: str | None
    message: str | None
    payment: Payment
    body: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobResult:
    """A completed job: `result` is its result, `job` the whole Job resource, `channel` which
    channel saw it finish first ("websocket" or "polling")."""

    request_id: str
    receipt_id: str | None
    result: Any
    job: dict[str, Any]
    channel: str
    payment: Payment | None = None
