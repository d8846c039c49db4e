"""What the watches and webhooks tests share: a watch source whose values the test sets, and
a service seeded through its own routes and loops with watches in each state and one
watch's webhook given up after its receiver answered 500 to every attempt."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

from eth_account import Account

import tollway
from tollway.testing import OPERATOR, credits_session, proof_headers

ATTRIBUTE = "console_feed"
FEED: dict[str, Any] = {}  # item key -> its value now; the tests edit it
HOOK_PATH = "/hooks/receiver-token-5b1e"  # a receiver's token in its path: no page may show it
# Quick retries and a plain-HTTP receiver on 127.0.0.1: six attempts take about a second.
ENV = {"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1", "TOLLWAY_WEBHOOK_RETRY_BASE_S": "0.02"}


async def _poll(services: Any, watched_keys: Any) -> tollway.Snapshot:
    return tollway.Snapshot(values={k: tollway.Observed(v, as_of="2026-11-01") for k, v in FEED.items()}, complete=True)


class FeedPlugin:
    @tollway.hookimpl
    def register_watch_sources(self, register: Any) -> None:
        register(
            tollway.WatchSource(
                attribute=ATTRIBUTE,
                entity_types=("item",),
                source="console feed",
                poll=_poll,
                check_key=lambda key: None if key.startswith("ITEM-") else "must look like ITEM-<n>",
                description="The console tests' feed of items.",
            )
        )


@dataclasses.dataclass
class Seeded:
    webhook_id: str  # the given-up webhook (its delivery id)
    secret: str  # its watch's webhook signing secret


async def poll(client) -> None:
    answer = await client.post(f"/v1/tools/internal/watch-sources/{ATTRIBUTE}/poll", headers=OPERATOR)
    assert answer.status_code == 200, answer.text


class Owner:
    """An agent with a wallet, which changes its watches with a write proof per request (an
    access token the operator issued may not)."""

    def __init__(self, client, chain_id: int) -> None:
        self.client, self.chain_id, self.wallet = client, chain_id, Account.create()

    async def register(self, credits: str) -> None:
        await credits_session(self.client, credits, wallet=self.wallet.address)

    async def send(self, method: str, path: str, payload: dict | None = None):
        body = json.dumps(payload).encode() if payload is not None else b""
        headers = proof_headers(self.wallet, scope="write", method=method, path=path, body=body, chain_id=self.chain_id)
        return await self.client.request(
            method, path, content=body or None, headers={**headers, "content-type": "application/json"}
        )

    async def watch(self, key: str, max_spend: float, webhook_url: str | None = None) -> dict:
        body = {"entity_type": "item", "attribute": ATTRIBUTE, "key": key, "max_spend": max_spend}
        if webhook_url:
            body["webhook_url"] = webhook_url
        made = await self.send("POST", "/v1/tools/watch", body)
        assert made.status_code == 201, made.text
        return made.json()["data"]


async def send_until(kernel, webhook_id: str, state: str, timeout_s: float = 30.0) -> dict:
    """Run the webhook sender (as the workers' loop does) until the webhook is in `state`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        await kernel.webhooks.run_due()
        entry = await kernel.platform.webhook_entry(webhook_id)
        if entry["state"] == state:
            return entry
        await asyncio.sleep(0.01)
    raise AssertionError(f"webhook {webhook_id} never {state}")


async def seed(kernel, client, receiver) -> Seeded:
    """Three watches through the watch routes: one on ITEM-1 with the receiver's URL, one on
    ITEM-2 whose cap pays one change, one on ITEM-3 deleted. ITEM-1 changes once and ITEM-2
    twice; the delivery loop delivers and charges what it can (ITEM-2 pauses on its cap) and the
    sender tries the one webhook until it gives up, the receiver answering 500."""
    FEED.clear()
    FEED.update({"ITEM-1": {"n": 0}, "ITEM-2": {"n": 0}, "ITEM-3": {"n": 0}})
    await poll(client)  # the baseline
    owner = Owner(client, kernel.network.chain_id)
    await owner.register("5")
    hooked = await owner.watch("ITEM-1", 1, receiver.url)
    await owner.watch("ITEM-2", 0.02)
    gone = await owner.watch("ITEM-3", 1)
    assert (await owner.send("DELETE", f"/v1/tools/watch/{gone['id']}")).status_code == 200
    FEED.update({"ITEM-1": {"n": 1}, "ITEM-2": {"n": 1}})
    await poll(client)
    FEED["ITEM-2"] = {"n": 2}
    await poll(client)
    assert await kernel.watch_deliveries.run_pending() == 2  # ITEM-1's change, ITEM-2's first
    [row] = (await kernel.platform.webhooks_page(state=None, before=None, limit=10))["webhooks"]
    receiver.status = 500
    await send_until(kernel, row["webhook_id"], "abandoned")
    return Seeded(row["webhook_id"], hooked["webhook_secret"])
