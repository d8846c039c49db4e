"""The service's wire shapes as msgspec Structs: what the kernel answers, what the
fronts render and what the OpenAPI document and MCP output schemas are made from."""
from __future__ import annotations

from .accounts import (
    AccessToken,
    AccessTokenRequest,
    Balance,
    ChainFunded,
    ChainFundRequest,
    CreditsGranted,
    GrantCreditsRequest,
    PendingItem,
    PendingReport,
    RegisterAgentRequest,
    RegisteredAgent,
    TopUpRecord,
    TopUpRequest,
)
from . import calls, slots
from .calls import CallMeta, Success
from .errors import ErrorBody, FieldProblem, PaymentRequiredBody, QuoteTerms
from .reads import CategorySpend, DataSourceState, Health, Notification, NotificationPage, ProviderState, SpendBreakdown
from .receipts import Receipt, ReceiptBody, ReceiptKeys, ReceiptPage, SigningKeyInfo
from .value_tags import ReturnOnSpend, ValueTag, ValueTagRequest
from .watches import (
    Watch,
    WatchAnswer,
    WatchCreateRequest,
    WatchDeleted,
    WatchDeletedAnswer,
    Watchable,
    WatchList,
    WatchListAnswer,
    WatchSourcePolled,
    WatchUpdateRequest,
)

# What the fronts document: a kernel answer with its slot's documented keys (core/wire/slots.py).
JobAccepted = slots.documented(calls.JobAccepted)
JobStatus = slots.documented(calls.JobStatus)

__all__ = [
    "AccessToken",
    "AccessTokenRequest",
    "Balance",
    "CallMeta",
    "CategorySpend",
    "ChainFundRequest",
    "ChainFunded",
    "CreditsGranted",
    "ErrorBody",
    "FieldProblem",
    "GrantCreditsRequest",
    "DataSourceState",
    "Health",
    "ProviderState",
    "JobAccepted",
    "JobStatus",
    "Notification",
    "NotificationPage",
    "PaymentRequiredBody",
    "PendingItem",
    "PendingReport",
    "QuoteTerms",
    "Receipt",
    "ReceiptBody",
    "ReceiptKeys",
    "ReceiptPage",
    "RegisterAgentRequest",
    "RegisteredAgent",
    "ReturnOnSpend",
    "SigningKeyInfo",
    "SpendBreakdown",
    "Success",
    "TopUpRecord",
    "TopUpRequest",
    "ValueTag",
    "ValueTagRequest",
    "Watch",
    "WatchAnswer",
    "WatchCreateRequest",
    "WatchDeleted",
    "WatchDeletedAnswer",
    "WatchList",
    "WatchListAnswer",
    "WatchSourcePolled",
    "WatchUpdateRequest",
    "Watchable",
]
