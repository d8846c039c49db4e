"""Goals migration 1: goals, cases, events, sessions, steps, decisions, asks and deliveries."""

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar

ID = "2026-11-26T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "goals, cases, events, sessions, steps, decisions, asks, deliveries"

# The tables as this migration made them (written out: later changes are later migrations).
TABLES = (
    (
        "Goal",
        "goals_goals",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("agent_id", Varchar, {"length": 64, "index": True}),
            ("request_id", Varchar, {"length": 64, "unique": True}),
            ("receipt_id", Varchar, {"length": 64}),
            ("goal", Text, {}),
            ("status", Varchar, {"length": 24}),
            ("budget", BigInt, {}),
            ("spent", BigInt, {}),
            ("held", BigInt, {}),
            ("cases_enabled", Boolean, {}),
            ("max_depth", Integer, {}),
            ("max_awake", Integer, {}),
            ("done_check", Text, {"null": True, "default": None}),
            ("result_webhook_url", Text, {"null": True, "default": None}),
            ("webhook_secret", Varchar, {"length": 128}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
            ("seq", BigInt, {}),
        ),
    ),
    (
        "Case",
        "goals_cases",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("goal_id", Varchar, {"length": 64, "index": True}),
            ("case_key", Varchar, {"length": 200}),
            ("state", Varchar, {"length": 40}),
            ("owner", Text, {"null": True, "default": None}),
            ("next_action", Text, {"null": True, "default": None}),
            ("due_date", Varchar, {"length": 40, "null": True, "default": None}),
            ("evidence", Text, {}),
            ("task", Text, {}),
            ("session_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("parent_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("depth", Integer, {}),
            ("budget", BigInt, {"null": True, "default": None}),
            ("held", BigInt, {}),
            ("spent", BigInt, {}),
            ("step_limit", Integer, {"null": True, "default": None}),
            ("steps", BigInt, {}),
            ("opened_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
            ("ended_ms", BigInt, {"null": True, "default": None}),
        ),
    ),
    (
        "Event",
        "goals_events",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("goal_id", Varchar, {"length": 64}),
            ("event_id", Varchar, {"length": 200}),
            ("target", Varchar, {"length": 8}),
            ("case_key", Varchar, {"length": 200, "null": True, "default": None}),
            ("outcome", Varchar, {"length": 16}),
            ("created_ms", BigInt, {}),
        ),
    ),
    (
        "Session",
        "goals_sessions",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("goal_id", Varchar, {"length": 64, "index": True}),
            ("case_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("parent_session_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("depth", Integer, {}),
            ("status", Varchar, {"length": 16}),
            ("inbox", BigInt, {}),
            ("lease_owner", Varchar, {"length": 128, "null": True, "default": None}),
            ("lease_until_ms", BigInt, {}),
            ("attempt", Integer, {}),
            ("steps", BigInt, {}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    (
        "Step",
        "goals_steps",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("session_id", Varchar, {"length": 64}),
            ("seq", BigInt, {}),
            ("kind", Varchar, {"length": 16}),
            ("body", Text, {}),
            ("cost", BigInt, {}),
            ("created_ms", BigInt, {}),
        ),
    ),
    (
        "Decision",
        "goals_decisions",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("case_id", Varchar, {"length": 64, "index": True}),
            ("decision", Text, {}),
            ("reason", Text, {"null": True, "default": None}),
            ("created_ms", BigInt, {}),
        ),
    ),
    (
        "Ask",
        "goals_asks",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("case_id", Varchar, {"length": 64, "index": True}),
            ("goal_id", Varchar, {"length": 64}),
            ("session_id", Varchar, {"length": 64}),
            ("kind", Varchar, {"length": 16}),
            ("status", Varchar, {"length": 16}),
            ("person_name", Text, {}),
            ("person_address", Text, {}),
            ("question", Text, {}),
            ("shown", Text, {"null": True, "default": None}),
            ("shown_hash", Varchar, {"length": 64, "null": True, "default": None}),
            ("chase_after_s", Integer, {"null": True, "default": None}),
            ("chases", Integer, {}),
            ("next_chase_ms", BigInt, {"null": True, "default": None}),
            ("deadline_ms", BigInt, {}),
            ("escalated_ms", BigInt, {"null": True, "default": None}),
            ("answer", Text, {"null": True, "default": None}),
            ("message_id", Varchar, {"length": 255, "null": True, "index": True, "default": None}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    (
        "Delivery",
        "goals_deliveries",
        (
            ("id", Varchar, {"length": 64, "primary_key": True}),
            ("case_id", Varchar, {"length": 64, "index": True}),
            ("goal_id", Varchar, {"length": 64}),
            ("webhook_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("status", Varchar, {"length": 16}),
            ("reason", Text, {"null": True, "default": None}),
            ("result", Text, {}),
            ("created_ms", BigInt, {}),
        ),
    ),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="goals", description=DESCRIPTION)
    for class_name, tablename, columns in TABLES:
        manager.add_table(class_name=class_name, tablename=tablename)
        for name, column, params in columns:
            manager.add_column(
                table_class_name=class_name,
                tablename=tablename,
                column_name=name,
                db_column_name=name,
                column_class=column,
                params=params,
            )
    return manager
