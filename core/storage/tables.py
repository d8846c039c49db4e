"""The placeholder engine every kernel and plugin table is declared against.

Money columns are integers of micro-USDC and times are integers of unix milliseconds,
so SQLite and PostgreSQL agree exactly. Each area declares its own tables in its
`tables.py`; `runtime.database.Database.bind` points them all at the real engine.
"""

from __future__ import annotations

from collections.abc import Iterable

from piccolo.engine.base import Engine
from piccolo.engine.sqlite import SQLiteEngine
from piccolo.table import Table

# Never queried: replaced by Database.bind() before any query runs.
PLACEHOLDER_ENGINE = SQLiteEngine(path="tollway-unbound.sqlite")


class BoundEngine:
    """The engine every table is bound to in this process (one database per process):
    what hand-written statements run on, the same connections and transactions as the
    tables' own queries."""

    current: Engine = PLACEHOLDER_ENGINE


def bind(tables: Iterable[type[Table]], engine: Engine) -> None:
    """Point `tables`, and the statements of `sql`, at `engine`."""
    for table in tables:
        table._meta.db = engine
    BoundEngine.current = engine
