"""Money movements: agent credits and the local test network's USDC balances.

Every change of a balance is a conditional UPDATE (never below zero) plus a
ledger row, inside one transaction. Callers open the transaction.
"""
from __future__ import annotations

from .ids import new_id, now_ms
from .tables import Agent, ChainBalance, LedgerEntry


def credits_account(agent_id: str) -> str:
    return f"credits:{agent_id}"


def chain_account(chain_id: int, address: str) -> str:
    return f"chain:{chain_id}:{address.lower()}"


async def _ledger_row(account: str, delta: int, balance_after: int, kind: str, reference: str | None, memo: str | None) -> str:
    row_id = new_id("txn")
    await LedgerEntry.insert(
        LedgerEntry(
            id=row_id,
            account=account,
            delta=delta,
            balance_after=balance_after,
            kind=kind,
            reference=reference,
            memo=memo,
            created_ms=now_ms(),
        )
    )
    return row_id


async def debit_credits(agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None) -> tuple[int, str] | None:
    """Take `amount` from the agent's credits if they cover it.

    Returns (balance_after, ledger_row_id), or None when the credits fall short.
    """
    rows = (
        await Agent.update({Agent.credits: Agent.credits - amount})
        .where((Agent.id == agent_id) & (Agent.credits >= amount))
        .returning(Agent.credits)
    )
    if not rows:
        return None
    after = int(rows[0]["credits"])
    return after, await _ledger_row(credits_account(agent_id), -amount, after, kind, reference, memo)


async def credit_credits(agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None) -> tuple[int, str]:
    rows = (
        await Agent.update({Agent.credits: Agent.credits + amount})
        .where(Agent.id == agent_id)
        .returning(Agent.credits)
    )
    if not rows:
        raise LookupError(f"no agent {agent_id}")
    after = int(rows[0]["credits"])
    return after, await _ledger_row(credits_account(agent_id), amount, after, kind, reference, memo)


def _chain_key(chain_id: int, address: str) -> str:
    return f"{chain_id}:{address.lower()}"


async def chain_balance(chain_id: int, address: str) -> int:
    row = await ChainBalance.select(ChainBalance.balance).where(ChainBalance.address == _chain_key(chain_id, address)).first()
    return int(row["balance"]) if row else 0


async def chain_credit(chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None) -> int:
    key = _chain_key(chain_id, address)
    await ChainBalance.insert(ChainBalance(address=key, balance=0)).on_conflict(action="DO NOTHING")
    rows = (
        await ChainBalance.update({ChainBalance.balance: ChainBalance.balance + amount})
        .where(ChainBalance.address == key)
        .returning(ChainBalance.balance)
    )
    after = int(rows[0]["balance"])
    await _ledger_row(chain_account(chain_id, address), amount, after, kind, reference, None)
    return after


async def chain_debit(chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None) -> int | None:
    key = _chain_key(chain_id, address)
    rows = (
        await ChainBalance.update({ChainBalance.balance: ChainBalance.balance - amount})
        .where((ChainBalance.address == key) & (ChainBalance.balance >= amount))
        .returning(ChainBalance.balance)
    )
    if not rows:
        return None
    after = int(rows[0]["balance"])
    await _ledger_row(chain_account(chain_id, address), -amount, after, kind, reference, None)
    return after
