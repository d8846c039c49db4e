"""The operator's redelivery of a given-up webhook (the console's redeliver button, through
`Platform.redeliver_webhook`): an `abandoned` row becomes `pending` again, due now, with a
fresh budget of six attempts counted from the attempts it has made (`budget_from`); its
attempt history is kept and its attempt numbers go on from there. One guarded UPDATE, so a
second click, or two operators at once, queue it once: only a row still `abandoned` moves.
A delivered or pending webhook is refused and left as it is. The row is signed when it is
sent, with that moment's timestamp (outbox.py), never with one from before the redelivery."""

from __future__ import annotations

from tollway._core.basics.events import EventBus
from tollway._core.basics.ids import now_ms
from tollway._core.basics.json_values import JSONObject
from tollway._core.webhooks.outbox import publish_due
from tollway._core.webhooks.tables import Webhook

REFUSALS = {
    "pending": "It is already queued (pending): the sender will attempt it; nothing was changed.",
    "delivered": "It was delivered (its receiver answered 2xx): there is nothing to redeliver.",
}


async def redeliver(webhook_id: str, events: EventBus) -> JSONObject | None:
    """Queue an abandoned webhook again: `{queued: True}`, or `{queued: False, state, reason}`
    when it is not abandoned (nothing changes); None when there is no such webhook. Wakes the
    senders after the change commits."""
    now = now_ms()
    moved = (
        await Webhook.update(
            {
                Webhook.state: "pending",
                Webhook.budget_from: Webhook.attempts,
                Webhook.next_attempt_ms: now,
                Webhook.lease_until_ms: 0,
                Webhook.redelivered_ms: now,
                Webhook.updated_ms: now,
            }
        )
        .where(Webhook.id == webhook_id, Webhook.state == "abandoned")
        .returning(Webhook.id)
    )
    if moved:
        await publish_due(events, webhook_id)
        return {"queued": True, "state": "pending", "reason": None}
    row = await Webhook.select(Webhook.state).where(Webhook.id == webhook_id).first()
    if row is None:
        return None
    reason = REFUSALS.get(row["state"], f"It is {row['state']}: only a given-up webhook is redelivered.")
    return {"queued": False, "state": row["state"], "reason": reason}
