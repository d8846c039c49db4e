"""Fault test on PostgreSQL: a delivery process is SIGKILLed right after a watch change's
charge committed and before its webhook was sent. The change stays delivered and charged
once; the webhook, already in the outbox with the charge, is still sent (once, signed);
delivering again charges nothing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.support.feed_plugin import FEED, FeedPlugin
from tests.support.watch_rows import new_watch
from tests.support.webhook_receiver import receiving
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.storage import sql
from tollway._core.webhooks import outbox
from tollway._core.webhooks.signing import verify
from tollway.testing import credits_session, http_client

REPO = Path(__file__).resolve().parents[2]
SECRET = "whsec_test-secret"


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_a_process_killed_between_charge_and_webhook_charges_once_and_the_webhook_still_goes(
    kernel_factory,
) -> None:
    kernel = await kernel_factory(plugins=[("feed", FeedPlugin())], env={"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"})
    FEED.clear()
    FEED["ITEM-1"] = {"n": 0}
    await kernel.watch_polling.poll("test_feed")
    async with http_client(kernel) as client:
        agent, _ = await credits_session(client)
    async with receiving([200]) as receiver:
        wid = await new_watch(agent, "ITEM-1", webhook_url=receiver.url, webhook_secret=SECRET)
        FEED["ITEM-1"] = {"n": 1}
        await kernel.watch_polling.poll("test_feed")
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "TEST_KILL_AFTER_CHARGE": "1",
            **{k: v for k, v in kernel.config.plugin_env.items()},
            "TOLLWAY_DATABASE_URL": kernel.db.url,
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.delivery_process",
            env=env,
            cwd=str(REPO),
            stdout=asyncio.subprocess.PIPE,
        )
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"ready"
        assert await asyncio.wait_for(proc.wait(), 60) == -signal.SIGKILL
        [delivery] = await sql.fetch("SELECT id, state, receipt_id FROM tw_watch_deliveries WHERE watch_id = {}", wid)
        assert delivery["state"] == "delivered"
        assert (await outbox.get(delivery["id"]))["state"] == "pending" and receiver.requests == []
        # another worker: delivering again charges nothing; the outbox sends the webhook once
        assert await kernel.watch_deliveries.run_pending() == 0
        assert await kernel.webhooks.run_due() == 1
        assert await kernel.webhooks.run_due() == 0
    [request] = receiver.requests
    body = json.loads(request.body)
    assert verify(SECRET, request.body, request.headers["x-service-signature"])
    assert request.headers["webhook-id"] == delivery["id"] == body["delivery_id"]
    assert (body["type"], body["watch_id"], body["receipt_id"], body["charged"]) == (
        "watch.change",
        wid,
        delivery["receipt_id"],
        0.02,
    )
    assert body["change"]["field"] == "n" and (body["change"]["before"], body["change"]["after"]) == (0, 1)
    spends = await sql.fetch("SELECT delta FROM tw_ledger WHERE reference = {}", delivery["id"])
    assert [int(s["delta"]) for s in spends] == [-20000]
    assert (
        len(await sql.fetch("SELECT id FROM tw_notifications WHERE type = 'watch_change' AND agent_id = {}", agent))
        == 1
    )
    assert await check_ledger() == []
