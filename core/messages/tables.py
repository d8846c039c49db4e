"""Notifications kept for agents to read.

Piccolo tables of this area (money in integer micro-USDC, times in unix milliseconds);
its app is `migrations.APP`."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class Notification(Table, tablename="tw_notifications", db=PLACEHOLDER_ENGINE):
    """Stored notifications for an agent (job_completed, job_failed, ...)."""

    id = Varchar(length=36, primary_key=True)
    agent_id = Varchar(length=36)  # agent_id, created_ms, seq: tw_notifications_agent_newest
    type = Varchar(length=32)
    title = Text()
    body = Text(null=True, default=None)
    metadata = Text()  # JSON
    read = Boolean(default=False)
    created_ms = BigInt()
    seq = BigInt(default=0)  # monotonic microseconds: newest-first order within one millisecond


TABLES: tuple[type[Table], ...] = (Notification,)
