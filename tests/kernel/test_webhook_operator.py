"""The operator's reads of the webhook outbox and its redelivery, on SQLite and PostgreSQL,
sending to a real local receiver: the listing newest first by keyset (every webhook once,
ties on the millisecond included) and by state, a target shown without its path, query or
user part, and a redelivery that two operators ask for at once queued once, refused for a
pending or delivered webhook, that gives a fresh budget of six attempts whose retries wait
from the base again, and whose attempt carries a signature made when it is sent."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.webhook_receiver import receiving
from tollway._core.basics.ids import new_id, now_ms
from tollway._core.webhooks import operator_reads, outbox, redelivery, signing
from tollway._core.webhooks.outbox import enqueue

SECRET = "whsec_operator-test-secret"
FAST = {"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1", "TOLLWAY_WEBHOOK_RETRY_BASE_S": "0.02"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(env=FAST)


async def put(kernel, url: str, *, at: int | None = None) -> str:
    webhook_id = new_id("dlv")
    async with kernel.db.transaction():
        assert await enqueue(
            webhook_id=webhook_id,
            kind="watch.change",
            subject="w_1",
            url=url,
            secret=SECRET,
            body={"type": "watch.change", "delivery_id": webhook_id},
            now_ms=at,
        )
    return webhook_id


async def until(kernel, webhook_id: str, state: str) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        await kernel.webhooks.run_due()
        row = await outbox.get(webhook_id)
        if row["state"] == state:
            return row
        await asyncio.sleep(0.005)
    raise AssertionError(f"{webhook_id} never {state}")


def test_a_target_is_its_scheme_and_host_only() -> None:
    assert operator_reads.target_of("https://user:pw@hooks.example.com:8443/T0/B1/tok?key=abc") == (
        "https://hooks.example.com:8443"
    )
    assert operator_reads.target_of("https://[2001:db8::1]/hook") == "https://[2001:db8::1]"
    assert operator_reads.target_of("https://example.com") == "https://example.com"


async def test_the_outbox_is_listed_newest_first_by_keyset_and_by_state(kernel) -> None:
    base = now_ms() - 60_000
    made = [await put(kernel, "https://hooks.example.com/a", at=base + i // 2) for i in range(7)]  # pairs share a ms
    newest_first = sorted(made, key=lambda w: (base + made.index(w) // 2, w), reverse=True)
    seen, before = [], None
    for _ in range(10):
        page = await operator_reads.webhooks_page(state=None, before=before, limit=2)
        seen += [w["webhook_id"] for w in page["webhooks"]]
        before = page["next"]
        if before is None:
            break
    assert seen == newest_first
    assert all(w["target"] == "https://hooks.example.com" for w in page["webhooks"])
    assert (await operator_reads.webhooks_page(state="abandoned", before=None, limit=50))["webhooks"] == []
    pending = await operator_reads.webhooks_page(state="pending", before=None, limit=50)
    assert [w["webhook_id"] for w in pending["webhooks"]] == newest_first and pending["next"] is None
    assert await operator_reads.webhook_counts() == [{"state": "pending", "count": 7}]


async def test_a_redelivery_gets_a_fresh_budget_once_and_is_signed_when_sent(kernel) -> None:
    async with receiving([500]) as receiver:
        webhook_id = await put(kernel, receiver.url)
        assert (await redelivery.redeliver(webhook_id, kernel.events))["state"] == "pending"  # refused: pending
        given_up = await until(kernel, webhook_id, "abandoned")
        assert given_up["attempts"] == 6 and len(receiver.requests) == 6

        asked = now_ms()
        both = await asyncio.gather(*(redelivery.redeliver(webhook_id, kernel.events) for _ in range(2)))
        assert sorted(b["queued"] for b in both) == [False, True]  # two clicks at once: queued once
        row = await outbox.get(webhook_id)
        assert (row["state"], row["attempts"], row["budget_from"], row["lease_until_ms"]) == ("pending", 6, 6, 0)
        assert asked <= row["next_attempt_ms"] <= now_ms() and row["redelivered_ms"] == row["next_attempt_ms"]

        await kernel.webhooks.run_due()  # attempt 7 fails: the next waits the base again, not 2**6 times it
        row = await outbox.get(webhook_id)
        assert row["attempts"] == 7 and row["state"] == "pending"
        assert row["next_attempt_ms"] - row["updated_ms"] == outbox.retry_delay_ms(0.02, 1)
        again = await until(kernel, webhook_id, "abandoned")
        assert again["attempts"] == 12 and len(receiver.requests) == 12  # six more, then given up
        attempts = await outbox.attempts_of(webhook_id)
        assert [a["attempt"] for a in attempts] == list(range(1, 13))

        receiver.statuses = [200]
        assert (await redelivery.redeliver(webhook_id, kernel.events))["queued"]
        await asyncio.sleep(1.1)  # a second passes between the redelivery and the send: the signature is the send's
        sent_at = int(time.time())
        assert (await until(kernel, webhook_id, "delivered"))["attempts"] == 13
        last = receiver.requests[-1]
        header = last.headers["x-service-signature"]
        assert int(header.split(",")[0].removeprefix("t=")) >= sent_at
        assert signing.verify(SECRET, last.body, header)
        refused = await redelivery.redeliver(webhook_id, kernel.events)
        assert refused == {"queued": False, "state": "delivered", "reason": redelivery.REFUSALS["delivered"]}
    assert await redelivery.redeliver("dlv_nosuchhook", kernel.events) is None


async def test_a_plugin_reads_a_webhooks_state_never_its_url_secret_or_body(kernel_factory):
    """`Platform.webhook` gives plugins the delivery state only: the URL (it may carry the
    receiver's token), the signing secret and the body are not theirs to read back."""
    kernel = await kernel_factory()
    platform = kernel.platform
    secret = platform.new_webhook_secret()
    await platform.enqueue_webhook(
        webhook_id="wh_state_only",
        kind="case.result",
        subject="goal_x",
        url="https://hooks.example.com/in?token=receiver-own-token",
        secret=secret,
        body={"result": "the agent's own data"},
    )
    seen = await platform.webhook("wh_state_only")
    assert seen is not None and seen["state"] == "pending" and seen["attempts"] == 0
    text = repr(seen)
    assert secret not in text and "receiver-own-token" not in text and "the agent's own data" not in text
    assert await platform.webhook("wh_missing") is None
