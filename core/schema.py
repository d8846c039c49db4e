"""The kernel's Piccolo apps, one per area that owns tables, in the order a new database
applies them, and the frozen app of the releases before the areas owned their tables."""

from __future__ import annotations

from piccolo.conf.apps import AppConfig
from piccolo.table import Table

from tollway._core.auth.migrations import APP as AUTH
from tollway._core.calls.migrations import APP as CALLS
from tollway._core.credits.migrations import APP as CREDITS
from tollway._core.history.migrations import APP as HISTORY
from tollway._core.jobs.migrations import APP as JOBS
from tollway._core.messages.migrations import APP as MESSAGES
from tollway._core.payments.migrations import APP as PAYMENTS
from tollway._core.receipts.migrations import APP as RECEIPTS
from tollway._core.storage.kernel_history import LEGACY_APP
from tollway._core.watches.migrations import APP as WATCHES
from tollway._core.webhooks.migrations import APP as WEBHOOKS

KERNEL_APPS: tuple[AppConfig, ...] = (
    AUTH,
    CREDITS,
    PAYMENTS,
    RECEIPTS,
    JOBS,
    MESSAGES,
    CALLS,
    HISTORY,
    WATCHES,
    WEBHOOKS,
)
KERNEL_TABLES: tuple[type[Table], ...] = tuple(t for app in KERNEL_APPS for t in app.table_classes)

__all__ = ["KERNEL_APPS", "KERNEL_TABLES", "LEGACY_APP"]
