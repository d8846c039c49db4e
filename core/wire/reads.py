"""Free reads of an agent's own things: notifications and the spend breakdown; and
the service's health."""

from __future__ import annotations

from typing import Any

import msgspec


class Notification(msgspec.Struct):
    id: str
    agent_id: str = msgspec.field(name="agentId")
    type: str
    title: str
    body: str | None
    metadata: dict[str, Any]
    read: bool
    created_at: str = msgspec.field(name="createdAt")


class NotificationPage(msgspec.Struct):
    notifications: list[Notification]
    count: int


class CategorySpend(msgspec.Struct):
    category: str
    total: str  # USDC, 6 decimals
    count: int
    pct: float


class SpendBreakdown(msgspec.Struct):
    categories: list[CategorySpend]
    total: str
    period_days: int


class ProviderState(msgspec.Struct):
    """One kind of provider: which is chosen and whether it is configured (never a value)."""

    kind: str
    provider: str | None
    configured: bool
    unset_settings: list[str]
    available: list[str]


class DataSourceState(msgspec.Struct):
    """One downloadable data source: whether the tools answering from it can answer now."""

    name: str
    status: str  # `ok`, or `degraded` while its tools refuse every call (`problem` says why)
    tools: list[str]
    problem: str | None


class Health(msgspec.Struct):
    status: str  # `ok`, or `degraded` while a data source names a problem
    tools: int
    network: str
    providers: list[ProviderState] = []
    data_sources: list[DataSourceState] = []
