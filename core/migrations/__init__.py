"""The kernel's Piccolo app: the tables `core` owns and the folder of their migrations.

Each file in this folder is one forward-only migration (Piccolo's format: an `ID`
that orders it, and `forwards()` returning a `MigrationManager`). A released
migration is never edited; a schema change is a new file (docs/storage.md).
"""

from __future__ import annotations

from pathlib import Path

from piccolo.conf.apps import AppConfig

from tollway._core.calls.idempotency import IDEMPOTENCY_TABLES
from tollway._core.calls.ratelimits import RATE_LIMIT_TABLES
from tollway._core.credits.payouts import PAYOUT_TABLES
from tollway._core.history.tables import HISTORY_TABLES
from tollway._core.storage.tables import KERNEL_TABLES
from tollway._core.watches.tables import WATCH_TABLES
from tollway._core.webhooks.tables import WEBHOOK_TABLES

KERNEL_APP = AppConfig(
    app_name="kernel",
    migrations_folder_path=Path(__file__).parent,
    table_classes=[
        *KERNEL_TABLES,
        *RATE_LIMIT_TABLES,
        *IDEMPOTENCY_TABLES,
        *HISTORY_TABLES,
        *WATCH_TABLES,
        *WEBHOOK_TABLES,
        *PAYOUT_TABLES,
    ],
)
