"""The Piccolo app of core/history: its tables and the folder of their migrations.

Each file here is one forward-only migration (an `ID` that orders it, `forwards()`
returning a `MigrationManager`); a released one is never edited (docs/storage.md).
"""

from __future__ import annotations

from pathlib import Path

from piccolo.conf.apps import AppConfig

from tollway._core.history.tables import HISTORY_TABLES

APP = AppConfig(
    app_name="kernel_history", migrations_folder_path=Path(__file__).parent, table_classes=list(HISTORY_TABLES)
)
