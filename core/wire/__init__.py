"""The service's wire shapes as msgspec Structs: what the kernel answers, what the
fronts render and what the OpenAPI document and MCP output schemas are made from."""

from __future__ import annotations

from tollway._core.wire import calls, slots
from tollway._core.wire.accounts import (
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
from tollway._core.wire.calls import CallMeta, Success
from tollway._core.wire.errors import ErrorBody, FieldProblem, PaymentRequiredBody, QuoteTerms
from tollway._core.wire.reads import (
    CategorySpend,
    DataSourceState,
    Health,
    Notification,
    NotificationPage,
    ProviderState,
    SpendBreakdown,
)
from tollway._core.wire.receipts import Receipt, ReceiptBody, ReceiptKeys, ReceiptPage, SigningKeyInfo
from tollway._core.wire.value_tags import ReturnOnSpend, ValueTag, ValueTagRequest
from tollway._core.wire.watches import (
    Watch,
    Watchable,
    WatchAnswer,
    WatchCreateRequest,
    WatchDeleted,
    WatchDeletedAnswer,
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

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = ("accounts", "calls", "errors", "reads", "receipts", "slots", "value_tags", "watches")
