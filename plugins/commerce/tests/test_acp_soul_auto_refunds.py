"""A soul service sold over ACP whose souls order ends without delivery — the seller declines
it, or it expires past its deadline — is refunded in full by the commerce reconciler's sweep,
on SQLite and PostgreSQL, through the local Stripe: the card refunded once, the seller's share
taken back, the buyer's refund receipt, the signed order_update event; only what the operator
has not refunded already; never a fulfilled order; a PSP that is down leaves the refund
pending, finished once by a later sweep."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acp_schemas import validate
from commerce_support import merchant, stripe_standin
from test_acp_refunds import credits, hooked_platform, refund
from test_acp_soul_orders import register_soul

from tollway import now_ms, storage
from tollway.testing import ledger_problems, webhook_receiver
from tollway_commerce import reconciler
from tollway_commerce.acp import signing

SOULS = {"tollway_souls"}


async def sold(client: Any, acp: Any, stripe: Any) -> dict[str, Any]:
    """A soul registered and one unit of its 2.50 service bought over ACP: what the test needs."""
    key = await register_soul(client)
    seller = {"Authorization": f"Bearer {key}"}
    soul_id = (await client.get("/v1/soul/dashboard", headers=seller)).json()["id"]
    seller_agent = (await storage.row("SELECT agent_id FROM souls_agents WHERE id = {}", soul_id))["agent_id"]
    session = await acp.create("soul:quick/answer")
    done = await acp.complete(session["id"], stripe.grant())
    assert done.status_code == 200, done.text
    assert await credits(seller_agent) == 2_000_000  # the share, paid at completion
    return {"session": session["id"], "order": done.json()["order"]["id"], "seller": seller, "agent": seller_agent}


async def souls_state(client: Any, sale: dict[str, Any]) -> str:
    return (await client.get(f"/v1/soul/orders/{sale['session']}", headers=sale["seller"])).json()["state"]


async def decline(client: Any, sale: dict[str, Any]) -> None:
    declined = await client.post(
        f"/v1/soul/orders/{sale['session']}/decline", json={"reason": "out of answers"}, headers=sale["seller"]
    )
    assert declined.status_code == 200, declined.text


async def refund_rows(order_id: str) -> list[dict[str, Any]]:
    return await storage.rows(
        "SELECT amount, status, reason, share_taken FROM commerce_refunds WHERE order_id = {} ORDER BY created_ms",
        order_id,
    )


def order_updates(hooks: Any, secret: str) -> list[list[int]]:
    """The refunds of every signed order_update the platform received."""
    found = []
    for headers, raw in hooks.received:
        event = json.loads(raw)
        if event["type"] != "order_update":
            continue
        validate("webhook:WebhookEvent", event)
        assert signing.verify_webhook(secret, raw, headers["merchant-signature"])
        assert event["data"]["status"] == "confirmed"
        found.append([r["amount"] for r in event["data"]["refunds"]])
    return found


async def test_a_declined_soul_order_is_refunded_in_full_once_by_the_sweep(kernel_factory) -> None:
    with webhook_receiver() as hooks:
        async with (
            stripe_standin() as stripe,
            merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, _acp, agent),
        ):
            acp, secret = await hooked_platform(client, agent, hooks.url)
            sale = await sold(client, acp, stripe)
            assert await reconciler.sweep(kernel.context) == 0  # open: nothing to do
            await decline(client, sale)
            assert stripe.refunds == [] and await credits(sale["agent"]) == 2_000_000  # not by the decline itself

            assert await reconciler.sweep(kernel.context) == 1
            (pi,) = stripe.succeeded()
            assert [r["amount"] for r in stripe.refunds] == [250]
            assert stripe.charges[pi["latest_charge"]]["amount_refunded"] == 250
            assert await credits(sale["agent"]) == 0  # the seller's share taken back
            (row,) = await refund_rows(sale["order"])
            assert row["status"] == "succeeded" and int(row["amount"]) == 250 and int(row["share_taken"]) == 2_000_000
            assert "declined" in row["reason"] and "out of answers" in row["reason"]
            receipt = await storage.row("SELECT agent_id, amount, body FROM tw_receipts WHERE status = 'refund'")
            assert receipt["agent_id"] == agent and int(receipt["amount"]) == 2_500_000
            assert storage.loads(receipt["body"])["job_id"] == sale["session"]
            assert await souls_state(client, sale) == "declined"  # the souls order keeps how it ended

            assert await reconciler.sweep(kernel.context) == 0  # once
            assert len(stripe.refunds) == 1 and len(await refund_rows(sale["order"])) == 1
            nothing = await refund(client, sale["order"], "operator-late")
            assert nothing.status_code == 409 and nothing.json()["error"] == "exceeds_paid"
            await kernel.webhooks.run_due()
            assert await ledger_problems() == []
        assert order_updates(hooks, secret) == [[250]]


async def test_an_expired_soul_order_is_refunded_in_full_once_by_the_sweep(kernel_factory) -> None:
    from tollway_souls import orders

    with webhook_receiver() as hooks:
        async with (
            stripe_standin() as stripe,
            merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, _acp, agent),
        ):
            acp, secret = await hooked_platform(client, agent, hooks.url)
            sale = await sold(client, acp, stripe)
            assert await orders.expire_due(kernel.platform, now_ms() + 86_401_000) == 1  # its 24 h are over
            assert await souls_state(client, sale) == "expired"
            assert await reconciler.sweep(kernel.context) == 1
            assert await reconciler.sweep(kernel.context) == 0
            assert [r["amount"] for r in stripe.refunds] == [250]
            assert await credits(sale["agent"]) == 0
            (row,) = await refund_rows(sale["order"])
            assert row["status"] == "succeeded" and "deadline" in row["reason"]
            refunded = await storage.rows("SELECT amount FROM tw_receipts WHERE status = 'refund'")
            assert [int(r["amount"]) for r in refunded] == [2_500_000]
            await kernel.webhooks.run_due()
            assert await ledger_problems() == []
        assert order_updates(hooks, secret) == [[250]]


async def test_after_an_operators_partial_refund_only_the_rest_is_refunded(kernel_factory) -> None:
    with webhook_receiver() as hooks:
        async with (
            stripe_standin() as stripe,
            merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, _acp, agent),
        ):
            acp, secret = await hooked_platform(client, agent, hooks.url)
            sale = await sold(client, acp, stripe)
            part = await refund(client, sale["order"], "part", amount=100)
            assert part.status_code == 201 and part.json()["share_taken_back_usdc"] == "0.800000"
            await decline(client, sale)
            assert await reconciler.sweep(kernel.context) == 1
            assert await reconciler.sweep(kernel.context) == 0
            assert [r["amount"] for r in stripe.refunds] == [100, 150]
            assert [int(r["amount"]) for r in await refund_rows(sale["order"])] == [100, 150]
            assert await credits(sale["agent"]) == 0
            refunded = await storage.rows("SELECT amount FROM tw_receipts WHERE status = 'refund' ORDER BY amount")
            assert [int(r["amount"]) for r in refunded] == [1_000_000, 1_500_000]
            await kernel.webhooks.run_due()
            assert await ledger_problems() == []
        assert sorted(order_updates(hooks, secret)) == [[100], [100, 150]]


async def test_an_order_refunded_in_full_by_the_operator_then_declined_is_not_refunded_again(kernel_factory) -> None:
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, acp, _agent),
    ):
        sale = await sold(client, acp, stripe)
        assert (await refund(client, sale["order"], "all")).status_code == 201
        assert await souls_state(client, sale) == "refunded"  # ended by the operator's full refund
        assert await reconciler.sweep(kernel.context) == 0
        assert [r["amount"] for r in stripe.refunds] == [250]
        flag = await storage.row("SELECT soul_order_open FROM commerce_orders WHERE id = {}", sale["order"])
        assert not flag["soul_order_open"]  # no longer asked about
        assert await ledger_problems() == []


async def test_a_fulfilled_soul_order_is_never_refunded_and_no_longer_asked_about(kernel_factory) -> None:
    from tollway_souls import orders

    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, acp, _agent),
    ):
        sale = await sold(client, acp, stripe)
        pack = await acp.create("credits_5usd")
        assert (await acp.complete(pack["id"], stripe.grant())).status_code == 200
        watched = await storage.rows("SELECT session_id FROM commerce_orders WHERE soul_order_open = {}", True)
        assert [r["session_id"] for r in watched] == [sale["session"]]  # a credit pack is never watched
        fulfilled = await client.post(
            f"/v1/soul/orders/{sale['session']}/fulfil", json={"result": {"answer": "42"}}, headers=sale["seller"]
        )
        assert fulfilled.status_code == 200, fulfilled.text
        assert await reconciler.sweep(kernel.context) == 0
        assert await orders.expire_due(kernel.platform, now_ms() + 86_401_000) == 0  # ended: it cannot expire
        assert await reconciler.sweep(kernel.context) == 0
        assert stripe.refunds == [] and await refund_rows(sale["order"]) == []
        assert await credits(sale["agent"]) == 2_000_000  # the seller keeps its share
        assert await storage.rows("SELECT session_id FROM commerce_orders WHERE soul_order_open = {}", True) == []
        assert await ledger_problems() == []


async def test_a_psp_down_during_the_sweep_leaves_the_refund_pending_for_a_later_sweep(kernel_factory) -> None:
    env = {"TOLLWAY_COMMERCE_IN_FLIGHT_S": "1"}
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed=SOULS, env=env) as (kernel, client, acp, agent),
    ):
        sale = await sold(client, acp, stripe)
        await decline(client, sale)
        stripe.refund_failures = 100  # Stripe answers 500 to every try of the library
        assert await reconciler.sweep(kernel.context) == 0
        (row,) = await refund_rows(sale["order"])
        assert row["status"] == "pending" and int(row["amount"]) == 250
        assert stripe.refunds == [] and await credits(sale["agent"]) == 2_000_000
        assert await reconciler.sweep(kernel.context) == 0  # still in flight: nothing asked again, nothing new
        assert len(await refund_rows(sale["order"])) == 1
        stripe.refund_failures = 0
        await asyncio.sleep(1.1)  # past TOLLWAY_COMMERCE_IN_FLIGHT_S: the pending refund is the reconciler's
        assert await reconciler.sweep(kernel.context) == 1
        assert await reconciler.sweep(kernel.context) == 0
        assert [r["amount"] for r in stripe.refunds] == [250]
        (row,) = await refund_rows(sale["order"])
        assert row["status"] == "succeeded" and await credits(sale["agent"]) == 0
        refunded = await storage.rows("SELECT agent_id, amount FROM tw_receipts WHERE status = 'refund'")
        assert [(r["agent_id"], int(r["amount"])) for r in refunded] == [(agent, 2_500_000)]
        assert await ledger_problems() == []


async def test_concurrent_sweeps_refund_a_declined_order_once(kernel_factory) -> None:
    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, acp, _agent),
    ):
        sale = await sold(client, acp, stripe)
        await decline(client, sale)
        made = await asyncio.gather(*(reconciler.sweep(kernel.context) for _ in range(5)))
        assert sorted(made) == [0, 0, 0, 0, 1]
        assert [r["amount"] for r in stripe.refunds] == [250] and len(await refund_rows(sale["order"])) == 1
        assert await credits(sale["agent"]) == 0
        assert await ledger_problems() == []


async def test_soul_services_sold_before_the_column_are_watched_by_the_migration(kernel_factory) -> None:
    from tollway_commerce.migrations import commerce_2026_11_27t23_00_01_000000 as backfill
    from tollway_commerce.tables import Order

    async with (
        stripe_standin() as stripe,
        merchant(kernel_factory, stripe, installed=SOULS) as (kernel, client, acp, _agent),
    ):
        sale = await sold(client, acp, stripe)
        pack = await acp.create("credits_5usd")
        assert (await acp.complete(pack["id"], stripe.grant())).status_code == 200
        await storage.execute("UPDATE commerce_orders SET soul_order_open = {}", False)  # as before the column
        await backfill._mark(Order._meta.db)  # the engine the kernel's tables are bound to
        watched = await storage.rows("SELECT id FROM commerce_orders WHERE soul_order_open = {}", True)
        assert [r["id"] for r in watched] == [sale["order"]]
        await decline(client, sale)
        assert await reconciler.sweep(kernel.context) == 1
        assert [r["amount"] for r in stripe.refunds] == [250]
        assert await ledger_problems() == []
