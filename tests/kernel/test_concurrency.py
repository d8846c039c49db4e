"""Money under concurrency (run on SQLite and on the machine's PostgreSQL):
one authorization replayed 50 times at once pays once; 100 simultaneous credit
spends against credits for 60 succeed exactly 60 times and never go negative."""

from __future__ import annotations

import asyncio

from eth_account import Account

from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tollway._core.auth.tables import Agent
from tollway._core.basics.money import to_micro
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.receipts.tables import Receipt
from tollway.testing import http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}


async def test_fifty_concurrent_replays_of_one_authorization_pay_once(kernel_factory):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    payer = Account.create()
    async with http_client(kernel) as client:
        await client.post(
            "/v1/tools/internal/chain/fund", json={"address": payer.address, "amount": "1"}, headers=OPERATOR
        )
        first = await client.post("/v1/tools/test/echo", json={"text": "once"})
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        runs_before = len(echo_plugin.RUNS)
        answers = await asyncio.gather(
            *[
                client.post(
                    "/v1/tools/test/echo",
                    json={"text": "once"},
                    headers={"payment-signature": header, "X-Quote-ID": first.json()["quote_id"]},
                )
                for _ in range(50)
            ]
        )
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(200) == 1, statuses
    assert statuses.count(402) == 49
    assert all(a.json()["error"] == "payment_verification_failed" for a in answers if a.status_code == 402)
    assert len(echo_plugin.RUNS) - runs_before == 1
    assert await Receipt.count() == 1
    assert await PaymentAuthorization.count().where(PaymentAuthorization.status == "settled") == 1
    transfers = await LedgerEntry.select().where(LedgerEntry.kind == "transfer_out")
    assert len(transfers) == 1 and transfers[0]["delta"] == -1000
    assert balance["on_chain_balance"] == "0.999000"
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_hundred_concurrent_credit_spends_against_sixty(kernel_factory):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    async with http_client(kernel) as client:
        agent = (
            await client.post("/v1/tools/internal/agents/register", json={"name": "spender"}, headers=OPERATOR)
        ).json()
        # the flaky tool costs 0.010000 when it succeeds: credits for exactly 60 calls
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "0.6"}, headers=OPERATOR
        )
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        answers = await asyncio.gather(
            *[client.post("/v1/tools/test/flaky", json={"text": f"call {i}"}, headers=auth) for i in range(100)]
        )
        balance = (await client.get("/v1/balance", headers=auth)).json()
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == 60, statuses
    assert statuses.count(402) == 40
    assert balance["credits_balance"] == "0.000000"
    row = await Agent.select(Agent.credits).where(Agent.id == agent["agent_id"]).first()
    assert row["credits"] == 0
    entries = await LedgerEntry.select().where(LedgerEntry.account == f"credits:{agent['agent_id']}")
    assert sum(e["delta"] for e in entries) == 0
    assert sum(1 for e in entries if e["kind"] == "spend") == 60
    assert min(e["balance_after"] for e in entries) >= 0
    assert await Receipt.count().where(Receipt.status == "settled") == 60
    assert to_micro("0.6") == 60 * 10_000
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_concurrent_spends_with_failures_lose_no_credit(kernel_factory):
    """Half the calls fail and are refunded while others spend: the ledger balances."""
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    async with http_client(kernel) as client:
        agent = (await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)).json()
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": "1"}, headers=OPERATOR
        )
        token = (
            await client.post(
                "/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR
            )
        ).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        bodies = [{"text": "boom" if i % 2 else f"ok {i}"} for i in range(40)]
        answers = await asyncio.gather(*[client.post("/v1/tools/test/flaky", json=b, headers=auth) for b in bodies])
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert [a.status_code for a in answers].count(200) == 20
    assert [a.status_code for a in answers].count(503) == 20
    assert balance["credits_balance"] == "0.800000"
    entries = await LedgerEntry.select().where(LedgerEntry.account == f"credits:{agent['agent_id']}")
    assert sum(e["delta"] for e in entries) == to_micro("0.8")
    assert await Receipt.count().where(Receipt.status == "refunded") == 20
    assert await check_ledger(max_intermediate_age_s=0) == []
