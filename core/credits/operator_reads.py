"""The operator's reads of agents' accounts (the console's agents pages, through
`Platform.agents_by_credits` and `Platform.agent_account`): who holds the most credits, and
one agent's balance with its latest ledger rows; and every agent's payouts (the marketplace
page, `Platform.latest_payouts`, `Platform.payout_totals`). Never a secret: no token, key,
wallet private half or signed payment is in the columns read here."""

from __future__ import annotations

from piccolo.query.functions.aggregate import Count, Sum

from tollway._core.auth.agents import AgentDirectory
from tollway._core.auth.tables import Agent
from tollway._core.basics.ids import iso
from tollway._core.basics.json_values import JSONObject
from tollway._core.basics.money import usdc
from tollway._core.credits.ledger import credits_account
from tollway._core.credits.payouts import Payout
from tollway._core.credits.tables import LedgerEntry


def _agent(row: dict) -> JSONObject:
    return {
        "agent_id": row["id"],
        "name": row["name"],
        "wallet_address": row["wallet_address"],
        "credits_balance": usdc(int(row["credits"])),
        "created_at": iso(row["created_ms"]),
    }


async def agents_by_credits(limit: int) -> list[JSONObject]:
    """The `limit` agents holding the most credits, most first (ties by id)."""
    rows = await (
        Agent.select(Agent.id, Agent.name, Agent.wallet_address, Agent.credits, Agent.created_ms)
        .where(Agent.credits > 0)
        .order_by(Agent.credits, ascending=False)
        .order_by(Agent.id)
        .limit(limit)
    )
    return [_agent(r) for r in rows]


async def agent_account(agent_ref: str, ledger_limit: int) -> JSONObject | None:
    """An agent (by id or wallet address) with its credits and its latest ledger rows, newest
    first; None when there is no such agent."""
    found = await AgentDirectory().get(agent_ref)
    if found is None:
        return None
    rows = await (
        LedgerEntry.select(
            LedgerEntry.id,
            LedgerEntry.delta,
            LedgerEntry.balance_after,
            LedgerEntry.kind,
            LedgerEntry.reference,
            LedgerEntry.memo,
            LedgerEntry.created_ms,
        )
        .where(LedgerEntry.account == credits_account(found["id"]))
        .order_by(LedgerEntry.created_ms, ascending=False)
        .order_by(LedgerEntry.id, ascending=False)
        .limit(ledger_limit)
    )
    ledger: list[JSONObject] = [
        {
            "id": r["id"],
            "delta": usdc(int(r["delta"])),
            "balance_after": usdc(int(r["balance_after"])),
            "kind": r["kind"],
            "reference": r["reference"],
            "memo": r["memo"],
            "created_at": iso(r["created_ms"]),
        }
        for r in rows
    ]
    return {**_agent(found), "ledger": ledger}


async def latest_payouts(limit: int) -> list[JSONObject]:
    """Every agent's latest `limit` payouts, newest first (never the signed payment they carry)."""
    rows = await (
        Payout.select(
            Payout.id,
            Payout.agent_id,
            Payout.to_address,
            Payout.amount,
            Payout.status,
            Payout.settlement_tx,
            Payout.created_ms,
        )
        .order_by(Payout.created_ms, ascending=False)
        .order_by(Payout.id, ascending=False)
        .limit(limit)
    )
    return [
        {
            "payout_id": r["id"],
            "agent_id": r["agent_id"],
            "to_address": r["to_address"],
            "amount_usdc": usdc(int(r["amount"])),
            "status": r["status"],
            "settlement_tx": r["settlement_tx"],
            "created_at": iso(r["created_ms"]),
        }
        for r in rows
    ]


async def payout_totals() -> list[JSONObject]:
    """Payouts counted and added up by state (`GROUP BY status`): `[{status, count, amount_usdc}]`."""
    rows = await (
        Payout.select(Payout.status, Count(alias="count"), Sum(Payout.amount, alias="total"))
        .group_by(Payout.status)
        .order_by(Payout.status)
    )
    return [{"status": r["status"], "count": int(r["count"]), "amount_usdc": usdc(int(r["total"] or 0))} for r in rows]
