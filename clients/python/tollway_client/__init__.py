"""tollway-client: call Tollway's tools from Python, paying by x402 or from credits.

    from tollway_client import Client

    with Client("http://127.0.0.1:8402", wallet_key="0x…") as tollway:
        answer = tollway.vehicle_recalls({"make": "Honda", "model": "Accord", "model_year": 2021})
        print(answer.data["result"]["total"], answer.receipt_id)

`AsyncClient` is the same for asyncio. Every tool is a typed method (generated from the
service's OpenAPI document); `call(name, input)` calls any tool by name.
"""

from ._client import AsyncClient, Client
from ._errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    JobFailed,
    NotFound,
    PaymentFailed,
    PaymentRequired,
    RateLimited,
    ServiceUnavailable,
    SpendCapExceeded,
    TollwayError,
    ToolFailed,
    TransportError,
    Unauthorized,
    WaitTimeout,
)
from ._receipts import ReceiptInvalid, check_receipt, verify_receipt
from ._results import JobAccepted, JobResult, Payment, ToolResult
from ._spec import ToolSpec
from ._tools import TOOLS

__all__ = [
    "TOOLS",
    "AsyncClient",
    "Client",
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "JobAccepted",
    "JobFailed",
    "JobResult",
    "NotFound",
    "Payment",
    "PaymentFailed",
    "PaymentRequired",
    "RateLimited",
    "ReceiptInvalid",
    "ServiceUnavailable",
    "SpendCapExceeded",
    "TollwayError",
    "ToolFailed",
    "ToolResult",
    "ToolSpec",
    "TransportError",
    "Unauthorized",
    "WaitTimeout",
    "check_receipt",
    "verify_receipt",
]
