"""Money movements: agent credits and the local test network's USDC balances.

Every change of a balance is a conditional UPDATE (never below zero) plus a
ledger row, inside one transaction. Callers open the transaction.
"""
from __future__ import annotations

from . import sql
from .ids import new_id, now_ms


def credits_account(agent_id: str) -> str:
    return f"credits:{agent_id}"


def chain_account(chain_id: int, address: str) -> str:
    return f"chain:{chain_id}:{address.lower()}"


async def _ledger_row(account: str, delta: int, balance_after: int, kind: str, reference: str | None, memo: str | None) -> str:
    row_id = new_id("txn")
    await sql.fetch(
        "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) VALUES ({}, {}, {}, {}, {}, {}, {}, {})",
        row_id, account, delta, balance_after, kind, reference, memo, now_ms(),
    )
    return row_id


async def debit_credits(agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None) -> tuple[int, str] | None:
    """Take `amount` from the agent's credits if they cover it.

    Returns (balance_after, ledger_row_id), or None when the credits fall short.
    """
    row = await sql.fetch_one(
        "UPDATE tw_agents SET credits = credits - {} WHERE id = {} AND credits >= {} RETURNING credits", amount, agent_id, amount
    )
    if row is None:
        return None
    after = int(row["credits"])
    return after, await _ledger_row(credits_account(agent_id), -amount, after, kind, reference, memo)


async def credit_credits(agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None) -> tuple[int, str]:
    row = await sql.fetch_one("UPDATE tw_agents SET credits = credits + {} WHERE id = {} RETURNING credits", amount, agent_id)
    if row is None:
        raise LookupError(f"no agent {agent_id}")
    after = int(row["credits"])
    return after, await _ledger_row(credits_account(agent_id), amount, after, kind, reference, memo)


def _chain_key(chain_id: int, address: str) -> str:
    return f"{chain_id}:{address.lower()}"


async def chain_balance(chain_id: int, address: str) -> int:
    row = await sql.fetch_one("SELECT balance FROM tw_chain_balances WHERE address = {}", _chain_key(chain_id, address))
    return int(row["balance"]) if row else 0


async def chain_credit(chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None) -> int:
    row = await sql.fetch_one(
        "INSERT INTO tw_chain_balances (address, balance) VALUES ({}, {}) "
        "ON CONFLICT (address) DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance",
        _chain_key(chain_id, address), amount,
    )
    after = int(row["balance"])
    await _ledger_row(chain_account(chain_id, address), amount, after, kind, reference, None)
    return after


async def chain_debit(chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None) -> int | None:
    row = await sql.fetch_one(
        "UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} RETURNING balance",
        amount, _chain_key(chain_id, address), amount,
    )
    if row is None:
        return None
    after = int(row["balance"])
    await _ledger_row(chain_account(chain_id, address), -amount, after, kind, reference, None)
    return after


async def transfer_done(reference: str) -> bool:
    return await sql.fetch_one("SELECT id FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out'", reference) is not None
