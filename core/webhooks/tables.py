"""The webhook outbox and the record of every attempt."""

from __future__ import annotations

from piccolo.columns import BigInt, BigSerial, Boolean, Integer, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class Webhook(Table, tablename="tw_webhooks", db=PLACEHOLDER_ENGINE):
    """The webhook outbox: one signed POST to send, written in the transaction
    that decided it, sent and retried by the workers (docs/webhooks.md)."""

    id = Varchar(length=40, primary_key=True)  # the delivery id, sent as `webhook-id`
    kind = Varchar(length=32)  # watch.change, case.result
    subject = Varchar(length=64, index=True)  # the watch or goal it belongs to
    url = Text()
    secret = Text()
    body = Text()  # JSON object; `attempt` is set per attempt when `numbered`
    numbered = Boolean(default=False)
    state = Varchar(length=12, index=True)  # pending, delivered, abandoned
    attempts = Integer(default=0)
    next_attempt_ms = BigInt(index=True)
    lease_until_ms = BigInt(default=0)
    created_ms = BigInt()
    updated_ms = BigInt()
    signing = Varchar(length=16, null=True, default=None)  # None: the service's signature; "acp": ACP's
    # The operator's redelivery of a given-up webhook (redelivery.py): the attempts made before
    # it (a fresh budget of MAX_ATTEMPTS counts from there) and when it was asked for.
    budget_from = Integer(default=0)
    redelivered_ms = BigInt(null=True, default=None)


class WebhookAttempt(Table, tablename="tw_webhook_attempts", db=PLACEHOLDER_ENGINE):
    """Every attempt to send a webhook, successful or not."""

    id = BigSerial(primary_key=True)
    webhook_id = Varchar(length=40, index=True)
    attempt = Integer()
    started_ms = BigInt()
    duration_ms = Integer()
    status_code = Integer(null=True, default=None)
    error = Text(null=True, default=None)


WEBHOOK_TABLES: tuple[type[Table], ...] = (
    Webhook,
    WebhookAttempt,
)
