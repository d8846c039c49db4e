"""Telephony migration 2: the indexes the webhooks, the threading of replies and the inbox
read use (a migration of its own: Piccolo runs a migration's raw steps before its tables)."""

from piccolo.engine import engine_finder

from tollway import MigrationManager

ID = "2026-12-01T00:00:01:000000"
VERSION = "1.38.0"
DESCRIPTION = "the telephony tables' indexes"

INDEXES = (
    # one row per recipient of a batch: a job's second attempt finds the first one's rows
    "CREATE UNIQUE INDEX IF NOT EXISTS telephony_sms_messages_batch ON telephony_sms_messages (request_id, position)",
    "CREATE INDEX IF NOT EXISTS telephony_sms_messages_sid ON telephony_sms_messages (sid)",
    # threading a reply: the last message sent to its number from the number it came to
    "CREATE INDEX IF NOT EXISTS telephony_sms_messages_to ON telephony_sms_messages (recipient, sender, sent_ms)",
    # Twilio may post an incoming message again: it is kept once
    "CREATE UNIQUE INDEX IF NOT EXISTS telephony_sms_inbox_sid ON telephony_sms_inbox (message_sid)",
    "CREATE INDEX IF NOT EXISTS telephony_sms_inbox_agent ON telephony_sms_inbox (agent_id, received_ms, id)",
    "CREATE INDEX IF NOT EXISTS telephony_voice_calls_sid ON telephony_voice_calls (sid)",
)


async def _indexes() -> None:
    for ddl in INDEXES:
        await engine_finder().run_ddl(ddl)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="telephony", description=DESCRIPTION)
    manager.add_raw(_indexes)
    return manager
