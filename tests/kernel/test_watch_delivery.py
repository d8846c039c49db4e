"""Watch delivery on SQLite and PostgreSQL: a source poll records changes and queues
them for the watches on the entity; each change is delivered once, charged once from
credits with a signed receipt and one `watch_change` notification; the cap and the
credits pause a watch (the owner told once) and the held changes are delivered in
order when it runs again; concurrent deliverers never charge twice or pass a cap."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from tests.support.feed_plugin import COMPLETE, FEED, POLLED, FeedPlugin
from tests.support.watch_rows import PRICE, new_watch
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt
from tollway._core.storage import sql
from tollway.testing import OPERATOR, credits_session, http_client


@pytest.fixture(autouse=True)
def feed():
    FEED.clear()
    POLLED.clear()
    COMPLETE[0] = True
    yield FEED
    FEED.clear()
    COMPLETE[0] = True


async def watch(wid: str) -> dict:
    return dict(await sql.fetch_one("SELECT * FROM tw_watches WHERE id = {}", wid))


async def deliveries(wid: str) -> list[dict]:
    rows = await sql.fetch("SELECT * FROM tw_watch_deliveries WHERE watch_id = {} ORDER BY seq", wid)
    return [{**dict(r), "change": msgspec.json.decode(r["change"])} for r in rows]


async def notes(agent_id: str, type_: str) -> list[dict]:
    rows = await sql.fetch(
        "SELECT metadata FROM tw_notifications WHERE agent_id = {} AND type = {} ORDER BY seq", agent_id, type_
    )
    return [msgspec.json.decode(r["metadata"]) for r in rows]


async def kernel_with_agent(kernel_factory, credits: str = "1"):
    kernel = await kernel_factory(plugins=[("feed", FeedPlugin())])
    async with http_client(kernel) as client:
        agent, _ = await credits_session(client, credits)
    return kernel, agent


async def test_a_change_is_delivered_once_charged_once_receipted_and_notified(kernel_factory) -> None:
    kernel, agent = await kernel_with_agent(kernel_factory)
    FEED.update({"ITEM-1": {"price": 10, "tags": ["x"]}, "ITEM-2": {"price": 1}})
    first = await kernel.watch_polling.poll("test_feed")
    assert first.changes_detected == 0  # the first poll is the baseline
    wid = await new_watch(agent, "ITEM-1")
    other = await new_watch(agent, "ITEM-2")
    FEED["ITEM-1"] = {"price": 12, "tags": ["x"]}
    report = await kernel.watch_polling.poll("test_feed")
    assert report.changes_detected == 1 and POLLED[-1] == ["ITEM-1", "ITEM-2"]
    assert await kernel.watch_deliveries.run_pending() == 1
    assert await kernel.watch_deliveries.run_pending() == 0  # nothing twice
    [d] = await deliveries(wid)
    assert d["state"] == "delivered" and d["charged"] == PRICE
    assert d["change"] == {
        "changed_on": d["change"]["changed_on"],
        "field": "price",
        "before": 10,
        "after": 12,
        "source": "test feed",
        "as_of": "2026-11-01",
    }
    receipt = await kernel.receipts.get(d["receipt_id"])
    assert (receipt["category"], receipt["subcategory"], receipt["job_id"], receipt["amount_usdc"]) == (
        "data",
        "watch",
        d["id"],
        "0.020000",
    )
    signer = ReceiptSigner(kernel.config.receipt_seed)
    assert verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")
    [note] = await notes(agent, "watch_change")
    assert (note["deliveryId"], note["receiptId"], note["change"]["field"]) == (d["id"], d["receipt_id"], "price")
    w = await watch(wid)
    assert (w["spent"], w["changes_delivered"], w["status"]) == (PRICE, 1, "running") and w["last_delivery_ms"]
    assert await deliveries(other) == []
    assert await check_ledger() == []


async def test_entities_removed_and_listed_again_are_entity_changes(kernel_factory) -> None:
    kernel, agent = await kernel_with_agent(kernel_factory)
    FEED.update({"ITEM-1": {"v": 1}, "ITEM-2": {"v": 2}})
    await kernel.watch_polling.poll("test_feed")
    wid = await new_watch(agent, "ITEM-2")
    del FEED["ITEM-2"]
    await kernel.watch_polling.poll("test_feed")
    FEED["ITEM-2"] = {"v": 2}
    await kernel.watch_polling.poll("test_feed")
    await kernel.watch_deliveries.run_pending()
    assert [(d["change"]["field"], d["change"]["before"], d["change"]["after"]) for d in await deliveries(wid)] == [
        ("$entity", "listed", "not_listed"),
        ("$entity", "not_listed", "listed"),
    ]


async def test_an_entity_first_seen_in_a_partial_snapshot_is_no_change(kernel_factory) -> None:
    """A source listing only some entities (the watched ones) says nothing of the others:
    one seen for the first time did not "appear", and its watch is not charged for it."""
    kernel, agent = await kernel_with_agent(kernel_factory)
    COMPLETE[0] = False
    FEED["ITEM-1"] = {"v": 1}
    await kernel.watch_polling.poll("test_feed")
    wid = await new_watch(agent, "ITEM-2")
    FEED["ITEM-2"] = {"v": 1}
    assert (await kernel.watch_polling.poll("test_feed")).changes_detected == 0
    del FEED["ITEM-1"]  # missing from a partial snapshot: not "no longer listed"
    FEED["ITEM-2"] = {"v": 2}
    assert (await kernel.watch_polling.poll("test_feed")).changes_detected == 1
    await kernel.watch_deliveries.run_pending()
    assert [(d["change"]["field"], d["change"]["before"], d["change"]["after"]) for d in await deliveries(wid)] == [
        ("v", 1, 2)
    ]


async def test_the_cap_pauses_once_and_raising_it_delivers_the_held_changes_in_order(kernel_factory) -> None:
    kernel, agent = await kernel_with_agent(kernel_factory)
    FEED["ITEM-1"] = {"n": 0}
    await kernel.watch_polling.poll("test_feed")
    wid = await new_watch(agent, "ITEM-1", max_spend=2 * PRICE)
    for n in range(1, 6):
        FEED["ITEM-1"] = {"n": n}
        await kernel.watch_polling.poll("test_feed")
        await kernel.watch_deliveries.run_pending()
    w = await watch(wid)
    assert (w["status"], w["pause_reason"], w["changes_delivered"], w["spent"]) == ("paused", "cap", 2, 2 * PRICE)
    assert len(await notes(agent, "watch_paused")) == 1  # told once, though three changes met the cap
    assert len(await notes(agent, "watch_change")) == 2
    await sql.fetch(
        "UPDATE tw_watches SET max_spend = {}, status = 'running', pause_reason = NULL WHERE id = {}", 10 * PRICE, wid
    )
    assert await kernel.watch_deliveries.run_pending() == 3
    delivered = [d["change"]["after"] for d in await deliveries(wid) if d["state"] == "delivered"]
    assert delivered == [1, 2, 3, 4, 5]
    assert [n["change"]["after"] for n in await notes(agent, "watch_change")] == [1, 2, 3, 4, 5]
    assert await check_ledger() == []


async def test_credits_running_out_pause_and_a_grant_resumes_automatically(kernel_factory) -> None:
    kernel, agent = await kernel_with_agent(kernel_factory, credits="0.04")  # two changes
    FEED["ITEM-1"] = {"n": 0}
    await kernel.watch_polling.poll("test_feed")
    wid = await new_watch(agent, "ITEM-1")
    for n in range(1, 5):
        FEED["ITEM-1"] = {"n": n}
        await kernel.watch_polling.poll("test_feed")
    await kernel.watch_deliveries.run_pending()
    w = await watch(wid)
    assert (w["status"], w["pause_reason"], w["changes_delivered"]) == ("paused", "credits", 2)
    assert await kernel.watch_deliveries.run_pending() == 0
    assert len(await notes(agent, "watch_paused")) == 1
    async with http_client(kernel) as client:
        granted = await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent, "amount": "1"}, headers=OPERATOR
        )
        assert granted.status_code == 200, granted.text
    assert (await watch(wid))["status"] == "running"  # resumed by the grant itself
    assert await kernel.watch_deliveries.run_pending() == 2
    assert [d["change"]["after"] for d in await deliveries(wid)] == [1, 2, 3, 4]
    assert await check_ledger() == []


async def test_one_change_delivered_by_two_concurrent_deliverers_is_charged_once(kernel_factory) -> None:
    kernel, agent = await kernel_with_agent(kernel_factory)
    FEED["ITEM-1"] = {"n": 0}
    await kernel.watch_polling.poll("test_feed")
    wid = await new_watch(agent, "ITEM-1")
    FEED["ITEM-1"] = {"n": 1}
    await kernel.watch_polling.poll("test_feed")
    outcomes = await asyncio.gather(*(kernel.watch_deliveries.step(wid) for _ in range(2)))
    assert sorted(o.kind for o in outcomes) == ["delivered", "idle"]
    assert len(await notes(agent, "watch_change")) == 1
    assert (
        await sql.fetch_one("SELECT COUNT(*) AS n FROM tw_receipts WHERE job_id = {}", (await deliveries(wid))[0]["id"])
    )["n"] == 1
    assert await check_ledger() == []


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
async def test_a_hundred_changes_near_the_cap_never_pass_it(kernel_factory) -> None:
    kernel, agent = await kernel_with_agent(kernel_factory, credits="10")
    FEED["ITEM-1"] = {"n": 0}
    await kernel.watch_polling.poll("test_feed")
    wid = await new_watch(agent, "ITEM-1", max_spend=37 * PRICE)
    for n in range(1, 101):
        FEED["ITEM-1"] = {"n": n}
        await kernel.watch_polling.poll("test_feed")
    assert len(await deliveries(wid)) == 100
    delivered = await asyncio.gather(*(kernel.watch_deliveries.deliver_watch(wid) for _ in range(8)))
    assert sum(delivered) == 37
    w = await watch(wid)
    assert (w["spent"], w["changes_delivered"], w["status"], w["pause_reason"]) == (37 * PRICE, 37, "paused", "cap")
    got = [d["change"]["after"] for d in await deliveries(wid) if d["state"] == "delivered"]
    assert got == list(range(1, 38))
    balance = await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", agent)
    assert int(balance["credits"]) == 10_000_000 - 37 * PRICE
    assert await check_ledger() == []
