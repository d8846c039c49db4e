"""Telephony migration 4: the numbers' indexes (a migration of its own: Piccolo runs a
migration's raw steps before its tables)."""

from piccolo.engine import engine_finder

from tollway import MigrationManager

ID = "2026-12-02T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "the telephony numbers' indexes"

INDEXES = (
    # one number held per agent and account: two first sends at once buy one number
    "CREATE UNIQUE INDEX IF NOT EXISTS telephony_numbers_holder ON telephony_numbers (holder)",
    # an inbound text or call finds the agent by the number it came to
    "CREATE INDEX IF NOT EXISTS telephony_numbers_number ON telephony_numbers (phone_number, state)",
    # the idle check, and the cap's count of the month's numbers
    "CREATE INDEX IF NOT EXISTS telephony_numbers_idle ON telephony_numbers (state, last_used_ms)",
    "CREATE INDEX IF NOT EXISTS telephony_numbers_released ON telephony_numbers (released_ms)",
)


async def _indexes() -> None:
    for ddl in INDEXES:
        await engine_finder().run_ddl(ddl)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="telephony", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
