"""Money movements: agent credits and the local test network's USDC balances.

Every change of a balance is a conditional UPDATE (never below zero) plus a
ledger row, inside one transaction. Callers open the transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tollway._core.basics.ids import new_id, now_ms
from tollway._core.storage import sql

# A "credits changed" listener: (agent_id, delta, balance_after), awaited in the transaction
# of the movement; what reacts to credits (paused watches) subscribes, the ledger knows none.
CreditsListener = Callable[[str, int, int], Awaitable[Any]]
_credits_listeners: dict[str, CreditsListener] = {}


def on_credits_changed(name: str, listener: CreditsListener) -> None:
    """Subscribe `listener` to every movement of an agent's credits (once per `name`)."""
    _credits_listeners[name] = listener


async def _credits_changed(agent_id: str, delta: int, balance: int) -> None:
    for listener in tuple(_credits_listeners.values()):
        await listener(agent_id, delta, balance)


def credits_account(agent_id: str) -> str:
    return f"credits:{agent_id}"


def chain_account(chain_id: int, address: str) -> str:
    return f"chain:{chain_id}:{address.lower()}"


LEDGER_COLUMNS = "(id, account, delta, balance_after, kind, reference, memo, created_ms)"


async def _move(
    update_sql: str, update_args: tuple, account: str, delta: int, kind: str, reference: str | None, memo: str | None
) -> tuple[int, str] | None:
    """Run a balance UPDATE … RETURNING balance and write its ledger row.

    On PostgreSQL both are one statement (a data-modifying CTE: one round trip
    instead of two); SQLite runs them one after the other, in process.
    Returns (balance_after, ledger row id), or None when the UPDATE matched nothing.
    """
    row_id = new_id("txn")
    if sql.on_postgres():
        row = await sql.fetch_one(
            f"WITH moved AS ({update_sql}) INSERT INTO tw_ledger {LEDGER_COLUMNS} "
            "SELECT {}, {}, {}, balance, {}, {}, {}, {} FROM moved RETURNING balance_after",
            *update_args,
            row_id,
            account,
            delta,
            kind,
            reference,
            memo,
            now_ms(),
        )
        return None if row is None else (int(row["balance_after"]), row_id)
    row = await sql.fetch_one(update_sql, *update_args)
    if row is None:
        return None
    after = int(row["balance"])
    await sql.fetch(
        f"INSERT INTO tw_ledger {LEDGER_COLUMNS} VALUES ({{}}, {{}}, {{}}, {{}}, {{}}, {{}}, {{}}, {{}})",
        row_id,
        account,
        delta,
        after,
        kind,
        reference,
        memo,
        now_ms(),
    )
    return after, row_id


async def debit_credits(
    agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None
) -> tuple[int, str] | None:
    """Take `amount` from the agent's credits if they cover it.

    Returns (balance_after, ledger_row_id), or None when the credits fall short.
    """
    moved = await _move(
        "UPDATE tw_agents SET credits = credits - {} WHERE id = {} AND credits >= {} RETURNING credits AS balance",
        (amount, agent_id, amount),
        credits_account(agent_id),
        -amount,
        kind,
        reference,
        memo,
    )
    if moved is not None:
        await _credits_changed(agent_id, -amount, moved[0])
    return moved


async def credit_credits(
    agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None
) -> tuple[int, str]:
    moved = await _move(
        "UPDATE tw_agents SET credits = credits + {} WHERE id = {} RETURNING credits AS balance",
        (amount, agent_id),
        credits_account(agent_id),
        amount,
        kind,
        reference,
        memo,
    )
    if moved is None:
        raise LookupError(f"no agent {agent_id}")
    await _credits_changed(agent_id, amount, moved[0])  # e.g. credits sufficient again: paused watches run
    return moved


def _chain_key(chain_id: int, address: str) -> str:
    return f"{chain_id}:{address.lower()}"


async def chain_balance(chain_id: int, address: str) -> int:
    row = await sql.fetch_one("SELECT balance FROM tw_chain_balances WHERE address = {}", _chain_key(chain_id, address))
    return int(row["balance"]) if row else 0


async def chain_credit(chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None) -> int:
    moved = await _move(
        "INSERT INTO tw_chain_balances (address, balance) VALUES ({}, {}) "
        "ON CONFLICT (address) DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance",
        (_chain_key(chain_id, address), amount),
        chain_account(chain_id, address),
        amount,
        kind,
        reference,
        None,
    )
    assert moved is not None
    return moved[0]


async def chain_debit(
    chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None
) -> int | None:
    moved = await _move(
        "UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} RETURNING balance",
        (amount, _chain_key(chain_id, address), amount),
        chain_account(chain_id, address),
        -amount,
        kind,
        reference,
        None,
    )
    return None if moved is None else moved[0]


_TRANSFER_OUT_DONE = "NOT EXISTS (SELECT 1 FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out')"

# PostgreSQL: the whole transfer (debit, credit, both ledger rows) as one statement.
_PG_TRANSFER = (
    "WITH debit AS (UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} AND "
    + _TRANSFER_OUT_DONE
    + " RETURNING balance), "
    "credit AS (INSERT INTO tw_chain_balances (address, balance) SELECT {}, {} FROM debit "
    "ON CONFLICT (address) DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance), "
    f"out_row AS (INSERT INTO tw_ledger {LEDGER_COLUMNS} SELECT {{}}, {{}}, {{}}, balance, 'transfer_out', {{}}, NULL, {{}} FROM debit), "
    f"in_row AS (INSERT INTO tw_ledger {LEDGER_COLUMNS} SELECT {{}}, {{}}, {{}}, balance, 'transfer_in', {{}}, NULL, {{}} FROM credit) "
    "SELECT balance FROM debit"
)


async def chain_transfer(chain_id: int, sender: str, recipient: str, amount: int, *, reference: str) -> int | None:
    """Move `amount` from `sender` to `recipient` (ledger kinds transfer_out / transfer_in)
    unless a transfer with this reference was made already; returns the sender's
    balance after, or None when nothing moved (the balance falls short, or the
    transfer was made before: `transfer_done` tells which)."""
    if sql.on_postgres() and sender.lower() != recipient.lower():  # one row may not change twice in one statement
        now = now_ms()
        row = await sql.fetch_one(
            _PG_TRANSFER,
            amount,
            _chain_key(chain_id, sender),
            amount,
            reference,
            _chain_key(chain_id, recipient),
            amount,
            new_id("txn"),
            chain_account(chain_id, sender),
            -amount,
            reference,
            now,
            new_id("txn"),
            chain_account(chain_id, recipient),
            amount,
            reference,
            now,
        )
        return None if row is None else int(row["balance"])
    moved = await _move(
        "UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} AND "
        + _TRANSFER_OUT_DONE
        + " RETURNING balance",
        (amount, _chain_key(chain_id, sender), amount, reference),
        chain_account(chain_id, sender),
        -amount,
        "transfer_out",
        reference,
        None,
    )
    if moved is None:
        return None
    await chain_credit(chain_id, recipient, amount, kind="transfer_in", reference=reference)
    return moved[0]


async def transfer_done(reference: str) -> bool:
    return (
        await sql.fetch_one("SELECT id FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out'", reference)
        is not None
    )
