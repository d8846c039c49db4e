"""Payouts against a real facilitator over real HTTP (tests/support/facilitator_server.py), on
SQLite and PostgreSQL: an agent's earnings leave as an EIP-3009 payment signed with the
service's payout key and settled by the facilitator. Only earnings from sales leave — credits
granted by the operator never do, whatever runs at once. A refused settlement keeps the
credits held while the signed authorization could still be settled late: a late settlement
pays once, and an authorization that expires unused gives the credits back. A settlement whose
answer never came stays `sending` and the reconciler, reading the chain, finds it paid. The
money moves once and the ledger check holds throughout. Without a payout key, nothing moves."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from eth_account import Account

from tests.support.echo_plugin import EchoPlugin
from tests.support.facilitator_server import running_facilitator
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.ids import now_ms
from tollway._core.credits import ledger
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.payments import x402
from tollway._core.storage import sql
from tollway.testing import credits_session, http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}
SERVICE = Account.create()
SHARE = 5_000  # each sale below: an echo call of 0.005 USDC, all of it the seller's share


@pytest.fixture
async def facilitator():
    async with running_facilitator("base-sepolia") as fac:
        fac.fund(SERVICE.address, 10_000_000)
        yield fac


async def _kernel(kernel_factory, facilitator, **env):
    return await kernel_factory(
        plugins=[("echo", EchoPlugin())],
        env={
            "TOLLWAY_NETWORK": "base-sepolia",
            "TOLLWAY_FACILITATOR_URL": facilitator.url,
            "TOLLWAY_FACILITATOR_TIMEOUT_S": "1",
            "TOLLWAY_PAY_TO": SERVICE.address,
            "TOLLWAY_PAYOUT_KEY": SERVICE.key.hex(),
            "TOLLWAY_CHAIN_RPC_URL": facilitator.url + "/rpc",
            **env,
        },
    )


async def _seller(kernel, *, sales: int, granted: str = "0") -> str:
    """An agent that earned `sales` shares of SHARE from real sales (a buyer's settled charge,
    its share credited through core/credits/sales.py), and was granted `granted` USDC of credits besides."""
    async with http_client(kernel) as client:
        seller = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()["agent_id"]
        if granted != "0":
            assert (
                await client.post(
                    "/v1/tools/internal/credits/grant", json={"agent_id": seller, "amount": granted}, headers=OPERATOR
                )
            ).status_code == 200
        _buyer, paying = await credits_session(client, "1")
        for i in range(sales):
            sold = await client.post("/v1/tools/test/echo", json={"text": f"sale {i}", "repeat": 5}, headers=paying)
            assert sold.status_code == 200, sold.text
            await kernel.platform.pay_share(sold.json()["data"]["receipt_id"], seller_agent_id=seller, share=SHARE)
    return seller


async def _credits(kernel, agent: str) -> int:
    row = await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", agent)
    return int(row["credits"])


async def test_a_payout_is_settled_by_the_facilitator(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    agent, to = await _seller(kernel, sales=3), Account.create().address
    payout = await kernel.platform.pay_out(agent, 12_000, to)
    assert (
        payout["status"] == "paid" and payout["amount_usdc"] == "0.012000" and payout["settlement_tx"].startswith("0x")
    )
    (tx,) = facilitator.transactions
    assert (tx["from"].lower(), tx["to"].lower(), tx["value"]) == (SERVICE.address.lower(), to.lower(), 12_000)
    assert facilitator.balance(to) == 12_000
    with pytest.raises(ServiceError) as short:
        await kernel.platform.pay_out(agent, 4_000, to)
    assert short.value.code == "insufficient_credits"
    assert [p["payout_id"] for p in await kernel.platform.payouts_of(agent)] == [payout["payout_id"]]
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_granted_credits_never_leave_as_usdc(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    granted_only = await _seller(kernel, sales=0, granted="15")
    with pytest.raises(ServiceError) as refused:
        await kernel.platform.pay_out(granted_only, 15_000_000, Account.create().address)
    assert (refused.value.status, refused.value.code) == (409, "exceeds_earnings")
    assert refused.value.extra["withdrawable_usdc"] == "0.000000"
    seller = await _seller(kernel, sales=2, granted="15")  # earned 0.010, holds 15.010
    with pytest.raises(ServiceError) as beyond:
        await kernel.platform.pay_out(seller, 10_001, Account.create().address)
    assert beyond.value.code == "exceeds_earnings" and beyond.value.extra["withdrawable_usdc"] == "0.010000"
    assert (await kernel.platform.pay_out(seller, 10_000, Account.create().address))["status"] == "paid"
    with pytest.raises(ServiceError):
        await kernel.platform.pay_out(seller, 1, Account.create().address)  # already withdrawn
    assert await _credits(kernel, granted_only) == 15_000_000 and await _credits(kernel, seller) == 15_000_000
    assert len(facilitator.transactions) == 1 and await check_ledger(max_intermediate_age_s=0) == []


async def test_concurrent_payouts_take_no_more_than_the_earnings(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    seller = await _seller(kernel, sales=2, granted="5")  # earned 0.010

    async def withdraw() -> str:
        try:
            return (await kernel.platform.pay_out(seller, 4_000, Account.create().address))["status"]
        except ServiceError as exc:
            return exc.code

    outcomes = await asyncio.gather(*(withdraw() for _ in range(8)))
    assert sorted(outcomes) == ["exceeds_earnings"] * 6 + ["paid"] * 2
    assert sum(t["value"] for t in facilitator.transactions) == 8_000
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_the_ledger_check_sees_credits_paid_out_beyond_earnings(kernel_factory, facilitator) -> None:
    """What the old payout did to granted credits, written straight to the books: the check names it."""
    kernel = await _kernel(kernel_factory, facilitator)
    agent = await _seller(kernel, sales=0, granted="1")
    async with kernel.db.transaction():
        await ledger.debit_credits(agent, 1_000_000, kind="payout", reference="po_old")
        await sql.fetch(
            "INSERT INTO tw_payouts (id, agent_id, to_address, amount, status, payment, created_ms, updated_ms) VALUES ({}, {}, {}, {}, 'paid', {}, {}, {})",
            "po_old",
            agent,
            Account.create().address,
            1_000_000,
            "{}",
            now_ms(),
            now_ms(),
        )
    assert await check_ledger() == [f"credits:{agent} paid out 1000000 more than its sales earned"]


async def test_a_refused_settlement_keeps_the_credits_held_and_a_late_settlement_pays_once(
    kernel_factory, facilitator
) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    agent, to = await _seller(kernel, sales=2), Account.create().address
    facilitator.settle_mode = "fail"
    payout = await kernel.platform.pay_out(agent, 10_000, to)
    assert payout["status"] == "sending" and "held" in payout["reason"]
    assert await _credits(kernel, agent) == 0  # held: the signed authorization could still be settled
    assert await kernel.payouts.resolve_stale(0) == 1  # refused again, still valid: still held
    assert (await kernel.platform.payouts_of(agent))[0]["status"] == "sending"
    # The facilitator settles the authorization after all (its own retry): the transfer lands.
    facilitator.settle_mode = "ok"
    row = await sql.fetch_one("SELECT payment FROM tw_payouts WHERE id = {}", payout["payout_id"])
    payment = json.loads(row["payment"])
    late = await kernel.backend.settle(x402.decode_payment(payment), payment["accepted"], SERVICE.address)
    assert late.status == "settled"
    assert await kernel.payouts.resolve_stale(0) == 1
    (paid,) = await kernel.platform.payouts_of(agent)
    assert paid["status"] == "paid" and paid["settlement_tx"] == facilitator.transactions[0]["transaction"]
    assert (
        await _credits(kernel, agent) == 0 and facilitator.balance(to) == 10_000 and len(facilitator.transactions) == 1
    )
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_refused_authorization_that_expires_unused_gives_the_credits_back(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    kernel.payouts.authorization_valid_s = 2  # the window an authorization may still be settled in
    agent = await _seller(kernel, sales=2)
    facilitator.settle_mode = "fail"
    payout = await kernel.platform.pay_out(agent, 10_000, Account.create().address)
    assert payout["status"] == "sending" and await _credits(kernel, agent) == 0
    await kernel.payouts.resolve_stale(0)
    assert (await kernel.platform.payouts_of(agent))[0]["status"] == "sending"
    deadline = time.time() + 10
    while time.time() < deadline and (await kernel.platform.payouts_of(agent))[0]["status"] == "sending":
        await asyncio.sleep(0.5)
        await kernel.payouts.resolve_stale(0)  # the chain shows it unused, past its validBefore: it can never pay
    (failed,) = await kernel.platform.payouts_of(agent)
    assert failed["status"] == "failed" and failed["reason"] == "authorization_expired_unused"
    assert await _credits(kernel, agent) == 10_000 and facilitator.transactions == []
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_lost_settlement_answer_is_resolved_by_the_reconciler(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    agent, to = await _seller(kernel, sales=2), Account.create().address
    facilitator.settle_mode = "hang"
    payout = await kernel.platform.pay_out(agent, 7_000, to)
    assert payout["status"] == "sending"  # the facilitator did not answer in time
    assert any("still sending" in p for p in await check_ledger(max_intermediate_age_s=0))
    facilitator.settle_finished.clear()
    facilitator.release()
    await facilitator.settle_finished.wait()  # the transfer landed after the service gave up
    facilitator.settle_mode = "ok"
    assert await kernel.payouts.resolve_stale(0) == 1
    (row,) = await kernel.platform.payouts_of(agent)
    assert row["status"] == "paid" and row["settlement_tx"] == facilitator.transactions[0]["transaction"]
    assert len(facilitator.transactions) == 1 and facilitator.balance(to) == 7_000
    assert await kernel.payouts.resolve_stale(0) == 0
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_without_a_payout_key_nothing_moves(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator, TOLLWAY_PAYOUT_KEY="")
    agent = await _seller(kernel, sales=1)
    with pytest.raises(ServiceError) as refused:
        await kernel.platform.pay_out(agent, 500_000, Account.create().address)
    assert refused.value.status == 503 and refused.value.code == "payouts_unavailable"
    assert await kernel.platform.payouts_of(agent) == [] and facilitator.transactions == []
