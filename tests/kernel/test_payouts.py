"""Payouts against a real facilitator over real HTTP (tests/support/facilitator_server.py), on
SQLite and PostgreSQL: an agent's credits leave as an EIP-3009 payment signed with the
service's payout key and settled by the facilitator; a failed settlement gives the credits
back; a settlement whose answer never came stays `sending` and the reconciler, reading the
chain, finds it paid — the money moves once and the ledger check holds throughout. Without
a payout key, payouts are refused and nothing moves."""
from __future__ import annotations

import pytest
from eth_account import Account

from core.errors import ServiceError
from core.ledger_check import check_ledger
from tests.support.facilitator_server import running_facilitator
from tollway.testing import http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}
SERVICE = Account.create()


@pytest.fixture
async def facilitator():
    async with running_facilitator("base-sepolia") as fac:
        fac.fund(SERVICE.address, 10_000_000)
        yield fac


async def _kernel(kernel_factory, facilitator, **env):
    return await kernel_factory(env={
        "TOLLWAY_NETWORK": "base-sepolia", "TOLLWAY_FACILITATOR_URL": facilitator.url, "TOLLWAY_FACILITATOR_TIMEOUT_S": "1",
        "TOLLWAY_PAY_TO": SERVICE.address, "TOLLWAY_PAYOUT_KEY": SERVICE.key.hex(), "TOLLWAY_CHAIN_RPC_URL": facilitator.url + "/rpc", **env,
    })


async def _agent_with_credits(kernel, amount: str) -> str:
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()["agent_id"]
        assert (await client.post("/v1/tools/internal/credits/grant", json={"agent_id": agent, "amount": amount}, headers=OPERATOR)).status_code == 200
    return agent


async def test_a_payout_is_settled_by_the_facilitator(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    agent, to = await _agent_with_credits(kernel, "2"), Account.create().address
    payout = await kernel.platform.pay_out(agent, 1_500_000, to)
    assert payout["status"] == "paid" and payout["amount_usdc"] == "1.500000" and payout["settlement_tx"].startswith("0x")
    (tx,) = facilitator.transactions
    assert (tx["from"].lower(), tx["to"].lower(), tx["value"]) == (SERVICE.address.lower(), to.lower(), 1_500_000)
    assert facilitator.balance(to) == 1_500_000
    with pytest.raises(ServiceError) as short:
        await kernel.platform.pay_out(agent, 600_000, to)
    assert short.value.code == "insufficient_credits"
    assert [p["payout_id"] for p in await kernel.platform.payouts_of(agent)] == [payout["payout_id"]]
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_failed_settlement_gives_the_credits_back(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    agent = await _agent_with_credits(kernel, "1")
    facilitator.settle_mode = "fail"
    payout = await kernel.platform.pay_out(agent, 1_000_000, Account.create().address)
    assert payout["status"] == "failed" and payout["reason"]
    async with http_client(kernel) as client:
        token = (await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent}, headers=OPERATOR)).json()["token"]
        balance = (await client.get("/v1/balance", headers={"Authorization": f"Bearer {token}"})).json()
    assert balance["credits_balance"] == "1.000000" and facilitator.transactions == []
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_lost_settlement_answer_is_resolved_by_the_reconciler(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator)
    agent, to = await _agent_with_credits(kernel, "1"), Account.create().address
    facilitator.settle_mode = "hang"
    payout = await kernel.platform.pay_out(agent, 700_000, to)
    assert payout["status"] == "sending"  # the facilitator did not answer in time
    assert any("still sending" in p for p in await check_ledger(max_intermediate_age_s=0))
    facilitator.settle_finished.clear()
    facilitator.release()
    await facilitator.settle_finished.wait()  # the transfer landed after the service gave up
    facilitator.settle_mode = "ok"
    assert await kernel.payouts.resolve_stale(0) == 1
    (row,) = await kernel.platform.payouts_of(agent)
    assert row["status"] == "paid" and row["settlement_tx"] == facilitator.transactions[0]["transaction"]
    assert len(facilitator.transactions) == 1 and facilitator.balance(to) == 700_000
    assert await kernel.payouts.resolve_stale(0) == 0
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_without_a_payout_key_nothing_moves(kernel_factory, facilitator) -> None:
    kernel = await _kernel(kernel_factory, facilitator, TOLLWAY_PAYOUT_KEY="")
    agent = await _agent_with_credits(kernel, "1")
    with pytest.raises(ServiceError) as refused:
        await kernel.platform.pay_out(agent, 500_000, Account.create().address)
    assert refused.value.status == 503 and refused.value.code == "payouts_unavailable"
    assert await kernel.platform.payouts_of(agent) == [] and facilitator.transactions == []
