"""Prepaid credits: the ledger of every movement, top-ups, holds and top-up attempts.

Piccolo tables of this area (money in integer micro-USDC, times in unix milliseconds);
its app is `migrations.APP`."""

from __future__ import annotations

from piccolo.columns import BigInt, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class LedgerEntry(Table, tablename="tw_ledger", db=PLACEHOLDER_ENGINE):
    """One row per movement of money, written in the same transaction as the balance."""

    id = Varchar(length=40, primary_key=True)
    account = Varchar(length=80)  # "credits:<agent_id>" or "chain:<chain_id>:<address>"; tw_ledger_account_newest
    delta = BigInt()
    balance_after = BigInt()
    kind = Varchar(length=24)  # grant, top_up, spend, refund, fund, transfer_in, transfer_out
    reference = Varchar(length=120, null=True, default=None, index=True)
    memo = Text(null=True, default=None)
    created_ms = BigInt()


class CreditTopUp(Table, tablename="tw_credit_top_ups", db=PLACEHOLDER_ENGINE):
    """Credits bought by x402; the settlement transaction is the idempotency key."""

    settlement_tx = Varchar(length=66, primary_key=True)
    transaction_id = Varchar(length=40)  # the ledger row id
    agent_id = Varchar(length=36, index=True)
    amount = BigInt()
    credits_balance = BigInt()
    memo = Text(null=True, default=None)
    created_ms = BigInt()


class CreditHold(Table, tablename="tw_credit_holds", db=PLACEHOLDER_ENGINE):
    """Credits taken for an inline call that is still running: written in the same
    transaction as the debit, ended (charged or refunded, with a receipt) in the
    same transaction as the outcome. A hold still `held` after the reconciler's
    grace period belongs to a process that died; the reconciler refunds it."""

    id = Varchar(length=40, primary_key=True)  # the request_id
    agent_id = Varchar(length=36)
    amount = BigInt()
    tool = Varchar(length=64)
    receipt_id = Varchar(length=40)  # the id the receipt will carry, chosen up front
    memo = Text(null=True, default=None)
    decision_context = Text(null=True, default=None)  # JSON
    state = Varchar(length=12)  # held, charged, refunded; partial index tw_credit_holds_held
    created_ms = BigInt()
    resolved_ms = BigInt(null=True, default=None)


class TopUpAttempt(Table, tablename="tw_top_up_attempts", db=PLACEHOLDER_ENGINE):
    """A credit top-up whose payment was accepted: what to credit once it settles.

    Keyed by the payment authorization (tw_payment_authorizations.id), so a retry
    of the same payment finds it whatever state the settlement is in."""

    id = Varchar(length=64, primary_key=True)  # the authorization key
    payer = Varchar(length=42, index=True)
    amount = BigInt()
    memo = Text(null=True, default=None)
    status = Varchar(length=12, index=True)  # pending, credited, failed
    settlement_tx = Varchar(length=66, null=True, default=None)
    reason = Text(null=True, default=None)  # why pending or failed
    created_ms = BigInt()
    updated_ms = BigInt()


TABLES: tuple[type[Table], ...] = (
    LedgerEntry,
    CreditTopUp,
    CreditHold,
    TopUpAttempt,
)
