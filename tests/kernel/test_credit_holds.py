"""Taking credits for an inline call: the debit, its ledger row and the hold are written
together or not at all, and concurrent takes never overdraw."""

from __future__ import annotations

import asyncio

from tollway._core.credits import holds
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.storage import sql
from tollway.testing import credits_session, http_client


async def take(kernel, agent_id: str, request_id: str, amount: int) -> bool:
    return await holds.take(
        kernel.db,
        request_id=request_id,
        agent_id=agent_id,
        amount=amount,
        tool="lookup_word",
        receipt_id=f"rcpt_{request_id}",
        memo="m",
        decision_context={"why": "test"},
    )


async def test_a_take_writes_the_debit_its_ledger_row_and_the_hold(kernel_factory) -> None:
    kernel = await kernel_factory()
    async with http_client(kernel) as client:
        agent_id, _ = await credits_session(client, "0.010000")
    assert await take(kernel, agent_id, "req_1", 4_000)
    assert (await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", agent_id))["credits"] == 6_000
    spent = await sql.fetch(
        "SELECT delta, balance_after, kind, reference, memo FROM tw_ledger WHERE reference = {}", "req_1"
    )
    assert [dict(r) for r in spent] == [
        {"delta": -4_000, "balance_after": 6_000, "kind": "spend", "reference": "req_1", "memo": "lookup_word"}
    ]
    hold = await sql.fetch_one(
        "SELECT agent_id, amount, tool, receipt_id, memo, decision_context, state FROM tw_credit_holds WHERE id = {}",
        "req_1",
    )
    assert dict(hold) == {
        "agent_id": agent_id,
        "amount": 4_000,
        "tool": "lookup_word",
        "receipt_id": "rcpt_req_1",
        "memo": "m",
        "decision_context": '{"why":"test"}',
        "state": "held",
    }


async def test_a_take_the_credits_do_not_cover_writes_nothing(kernel_factory) -> None:
    kernel = await kernel_factory()
    async with http_client(kernel) as client:
        agent_id, _ = await credits_session(client, "0.003000")
    assert not await take(kernel, agent_id, "req_short", 4_000)
    assert (await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", agent_id))["credits"] == 3_000
    assert await sql.fetch("SELECT id FROM tw_ledger WHERE reference = {}", "req_short") == []
    assert await sql.fetch("SELECT id FROM tw_credit_holds WHERE id = {}", "req_short") == []


async def test_concurrent_takes_never_overdraw(kernel_factory) -> None:
    kernel = await kernel_factory()
    async with http_client(kernel) as client:
        agent_id, _ = await credits_session(client, "0.050000")
    taken = await asyncio.gather(*[take(kernel, agent_id, f"req_{i}", 3_000) for i in range(30)])
    assert sum(taken) == 16  # 16 x 3000 <= 50000 < 17 x 3000
    assert (await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", agent_id))[
        "credits"
    ] == 50_000 - 16 * 3_000
    assert len(await sql.fetch("SELECT id FROM tw_credit_holds WHERE state = 'held'")) == 16
    problems = await check_ledger(max_intermediate_age_s=10_000)  # the holds are young: not yet a problem
    assert problems == []
