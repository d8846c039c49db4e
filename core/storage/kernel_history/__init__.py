"""The migrations of the releases before each area owned its tables (app `kernel`), frozen.

They are replayed only on a database those releases made (one that records them, or
that has the kernel's tables but records no migration of the area apps): they bring
it to the last schema of that time, which the areas' first migrations then adopt
table by table. A new database never runs them.
"""

from __future__ import annotations

from pathlib import Path

from piccolo.conf.apps import AppConfig

LEGACY_APP = AppConfig(app_name="kernel", migrations_folder_path=Path(__file__).parent, table_classes=[])
# A table the releases before the areas always made: its presence marks their database.
LEGACY_MARKER_TABLE = "tw_agents"
