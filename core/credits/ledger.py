"""Money movements: agent credits and the local test network's USDC balances.

Every change of a balance is a conditional UPDATE (never below zero) plus a
ledger row, inside one transaction. Callers open the transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from tollway._core.basics.ids import now_ms, sorted_id
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


# Each movement of a balance is one guarded statement (never below zero) plus its ledger row.
# Named statements, fixed at import (the paid path: bench/paid_calls.py). A movement is a pair:
# the balance statement alone (`... RETURNING balance`: SQLite runs it, then `_LEDGER_ROW`, in
# process) and the same with its ledger row as one data-modifying CTE (PostgreSQL: one round
# trip; its extra placeholders are the row's id, account, delta, kind, reference, memo, time).


class _Move(NamedTuple):
    alone: str
    with_row: str


_LEDGER_ROW = (
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "VALUES ({}, {}, {}, {}, {}, {}, {}, {})"
)
_DEBIT_CREDITS = _Move(
    "UPDATE tw_agents SET credits = credits - {} WHERE id = {} AND credits >= {} RETURNING credits AS balance",
    "WITH moved AS (UPDATE tw_agents SET credits = credits - {} WHERE id = {} AND credits >= {} RETURNING credits AS balance) "
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, {}, {}, {}, {} FROM moved RETURNING balance_after",
)
_CREDIT_CREDITS = _Move(
    "UPDATE tw_agents SET credits = credits + {} WHERE id = {} RETURNING credits AS balance",
    "WITH moved AS (UPDATE tw_agents SET credits = credits + {} WHERE id = {} RETURNING credits AS balance) "
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, {}, {}, {}, {} FROM moved RETURNING balance_after",
)
_CHAIN_CREDIT = _Move(
    "INSERT INTO tw_chain_balances (address, balance) VALUES ({}, {}) "
    "ON CONFLICT (address) DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance",
    "WITH moved AS (INSERT INTO tw_chain_balances (address, balance) VALUES ({}, {}) "
    "ON CONFLICT (address) DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance) "
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, {}, {}, {}, {} FROM moved RETURNING balance_after",
)
_CHAIN_DEBIT = _Move(
    "UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} RETURNING balance",
    "WITH moved AS (UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} RETURNING balance) "
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, {}, {}, {}, {} FROM moved RETURNING balance_after",
)
# A transfer's debit, unless a transfer with its reference was made already.
_TRANSFER_OUT = _Move(
    "UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} AND "
    "NOT EXISTS (SELECT 1 FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out') RETURNING balance",
    "WITH moved AS (UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} AND "
    "NOT EXISTS (SELECT 1 FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out') RETURNING balance) "
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, {}, {}, {}, {} FROM moved RETURNING balance_after",
)


async def _move(
    move: _Move, update_args: tuple, account: str, delta: int, kind: str, reference: str | None, memo: str | None
) -> tuple[int, str] | None:
    """Run a balance movement and write its ledger row (one statement on PostgreSQL, two on
    SQLite). Returns (balance_after, ledger row id), or None when the balance statement
    matched nothing."""
    row_id = sorted_id("txn")
    if sql.on_postgres():
        row = await sql.fetch_one(move.with_row, *update_args, row_id, account, delta, kind, reference, memo, now_ms())
        return None if row is None else (int(row["balance_after"]), row_id)
    row = await sql.fetch_one(move.alone, *update_args)
    if row is None:
        return None
    after = int(row["balance"])
    await sql.fetch(_LEDGER_ROW, row_id, account, delta, after, kind, reference, memo, now_ms())
    return after, row_id


_CREDITS = sql.Statement("SELECT credits FROM tw_agents WHERE id = {}")


async def credits_of(agent_id: str) -> int:
    """The agent's credits now (0 for an unknown agent): a read, no lock."""
    row = await _CREDITS.row(agent_id)
    return 0 if row is None else int(row["credits"])


async def debit_credits(
    agent_id: str, amount: int, *, kind: str, reference: str | None = None, memo: str | None = None
) -> tuple[int, str] | None:
    """Take `amount` from the agent's credits if they cover it.

    Returns (balance_after, ledger_row_id), or None when the credits fall short.
    """
    moved = await _move(
        _DEBIT_CREDITS,
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
        _CREDIT_CREDITS,
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


def chain_key(chain_id: int, address: str) -> str:
    """The key of an address's row in `tw_chain_balances`."""
    return f"{chain_id}:{address.lower()}"


async def chain_balance(chain_id: int, address: str) -> int:
    row = await sql.fetch_one(_CHAIN_BALANCE, chain_key(chain_id, address))
    return int(row["balance"]) if row else 0


async def chain_credit(chain_id: int, address: str, amount: int, *, kind: str, reference: str | None = None) -> int:
    moved = await _move(
        _CHAIN_CREDIT,
        (chain_key(chain_id, address), amount),
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
        _CHAIN_DEBIT,
        (amount, chain_key(chain_id, address), amount),
        chain_account(chain_id, address),
        -amount,
        kind,
        reference,
        None,
    )
    return None if moved is None else moved[0]


# PostgreSQL: the whole transfer (debit, credit, both ledger rows) as one statement
# (`transfer_values`; core/payments/paid_settlement.py's statement holds the same transfer).
_PG_TRANSFER = (
    "WITH debit AS (UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} AND "
    "NOT EXISTS (SELECT 1 FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out') RETURNING balance), "
    "credit AS (INSERT INTO tw_chain_balances (address, balance) SELECT {}, {} FROM debit "
    "ON CONFLICT (address) DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance), "
    "out_row AS (INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, 'transfer_out', {}, NULL, {} FROM debit), "
    "in_row AS (INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, 'transfer_in', {}, NULL, {} FROM credit) "
    "SELECT balance FROM debit"
)


def transfer_values(chain_id: int, sender: str, recipient: str, amount: int, reference: str) -> tuple[Any, ...]:
    """The values of a transfer in one statement (`_PG_TRANSFER`'s): the debit, the credit, the
    two ledger rows."""
    now = now_ms()
    sent, received = chain_account(chain_id, sender), chain_account(chain_id, recipient)
    moved = (amount, chain_key(chain_id, sender), amount, reference, chain_key(chain_id, recipient), amount)
    return moved + (sorted_id("txn"), sent, -amount, reference, now, sorted_id("txn"), received, amount, reference, now)


def transfers_in_one_statement(sender: str, recipient: str) -> bool:
    """Whether one statement can move this transfer: on PostgreSQL, between two accounts
    (one row may not change twice in one statement)."""
    return sql.on_postgres() and sender.lower() != recipient.lower()


_CHAIN_BALANCE = "SELECT balance FROM tw_chain_balances WHERE address = {}"
_TRANSFER_DONE = "SELECT id FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out'"


async def chain_transfer(chain_id: int, sender: str, recipient: str, amount: int, *, reference: str) -> int | None:
    """Move `amount` from `sender` to `recipient` (ledger kinds transfer_out / transfer_in)
    unless a transfer with this reference was made already; returns the sender's
    balance after, or None when nothing moved (the balance falls short, or the
    transfer was made before: `transfer_done` tells which)."""
    if transfers_in_one_statement(sender, recipient):
        row = await sql.fetch_one(_PG_TRANSFER, *transfer_values(chain_id, sender, recipient, amount, reference))
        return None if row is None else int(row["balance"])
    moved = await _move(
        _TRANSFER_OUT,
        (amount, chain_key(chain_id, sender), amount, reference),
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
    return await sql.fetch_one(_TRANSFER_DONE, reference) is not None
