"""Telephony migration 1: SMS batches and their messages, the SMS inbox, voice calls."""

from piccolo.columns import BigInt, Integer, Text, Varchar

from tollway import MigrationManager

ID = "2026-12-01T00:00:00:000000"
VERSION = "1.38.0"
DESCRIPTION = "telephony_sms_batches, telephony_sms_messages, telephony_sms_inbox, telephony_voice_calls"

TABLES = (
    (
        "SmsBatch",
        "telephony_sms_batches",
        (
            ("request_id", Varchar, {"length": 64, "primary_key": True}),
            ("agent_id", Varchar, {"length": 64}),
            ("recipients", Integer, {}),
            ("state", Varchar, {"length": 16}),
            ("notified_ms", BigInt, {"null": True, "default": None}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    (
        "SmsMessage",
        "telephony_sms_messages",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("request_id", Varchar, {"length": 64}),
            ("position", Integer, {}),
            ("agent_id", Varchar, {"length": 64}),
            ("sender", Varchar, {"length": 20}),
            ("recipient", Varchar, {"length": 20}),
            ("thread_id", Varchar, {"length": 40}),
            ("sid", Varchar, {"length": 64, "null": True, "default": None}),
            ("status", Varchar, {"length": 24}),
            ("error_code", Varchar, {"length": 40, "null": True, "default": None}),
            ("error_message", Text, {"null": True, "default": None}),
            ("sent_ms", BigInt, {"null": True, "default": None}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
    (
        "InboundSms",
        "telephony_sms_inbox",
        (
            ("id", Varchar, {"length": 40, "primary_key": True}),
            ("message_sid", Varchar, {"length": 64}),
            ("agent_id", Varchar, {"length": 64, "null": True, "default": None}),
            ("sender", Varchar, {"length": 40}),
            ("recipient", Varchar, {"length": 40}),
            ("body", Text, {}),
            ("num_media", Integer, {}),
            ("media_urls", Text, {}),
            ("thread_id", Varchar, {"length": 40}),
            ("related_outbound_id", Varchar, {"length": 40, "null": True, "default": None}),
            ("received_ms", BigInt, {}),
            ("created_ms", BigInt, {}),
        ),
    ),
    (
        "VoiceCall",
        "telephony_voice_calls",
        (
            ("request_id", Varchar, {"length": 64, "primary_key": True}),
            ("agent_id", Varchar, {"length": 64}),
            ("sender", Varchar, {"length": 20}),
            ("recipient", Varchar, {"length": 20}),
            ("goal", Text, {"null": True, "default": None}),
            ("words", Integer, {}),
            ("sid", Varchar, {"length": 64, "null": True, "default": None}),
            ("status", Varchar, {"length": 24}),
            ("duration_s", Integer, {"null": True, "default": None}),
            ("answered_by", Varchar, {"length": 40, "null": True, "default": None}),
            ("evaluation", Text, {"null": True, "default": None}),
            ("state", Varchar, {"length": 16}),
            ("notified_ms", BigInt, {"null": True, "default": None}),
            ("created_ms", BigInt, {}),
            ("updated_ms", BigInt, {}),
        ),
    ),
)


async def forwards() -> MigrationManager:
    manager = MigrationManager(migration_id=ID, app_name="telephony", description=DESCRIPTION)
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
