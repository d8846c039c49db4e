"""An x402 lookup's settlement on the local network, on PostgreSQL, in one statement: the transfer
with its two ledger rows, the receipt, and the authorization's `settled` state with its
transaction and receipt.

One statement is one round trip and its own commit, where the paid call's transaction took six
(BEGIN, the transfer, the receipt, the authorization's state, the read of the lookup's fact
heads, COMMIT). It is all or nothing: the authorization's row is locked first (`FOR UPDATE`,
which reads it again if another transaction changed it meanwhile) and only while it is still
`reserved`; the transfer moves only from that row, and the receipt and the authorization's new
state are written only if the transfer was. The lookup's facts are recorded in the receipt's
transaction everywhere else, so the statement runs only when recording them would write nothing:
every series head the lookup observes (`history.store.observed_heads`) already holds its value.
When the statement writes nothing (the reconciler voided the authorization, the payer's funds
are gone, the transfer was made before, or a fact is new or changed), the caller settles and
records as before, in a transaction that reads everything afresh (core/calls/pipeline.py), so
this path never decides an outcome the other would not.
"""

from __future__ import annotations

from typing import Any

from tollway._core.basics.ids import now_ms
from tollway._core.credits import ledger
from tollway._core.payments.gateway import Accepted, X402Gateway
from tollway._core.payments.settlement import LocalSettlement, local_transaction_hash
from tollway._core.receipts.receipts import ReceiptBook, ReceiptDraft
from tollway._core.storage import sql

# Values: the observed heads as five arrays (attributes, entity keys, sources, owners, value
# hashes); the authorization's key; the heads' number; the transfer (`ledger.transfer_values`);
# the receipt (`ReceiptBook.sign`'s values); the authorization's transaction, receipt id and time.
SETTLE_LOOKUP = sql.Statement(
    "WITH h AS (SELECT count(*) AS same FROM unnest({}::text[], {}::text[], {}::text[], {}::text[], {}::text[]) "
    "AS f(attribute, entity_key, source, owner, value_hash) "
    "JOIN tw_fact_heads USING (attribute, entity_key, source, owner, value_hash) WHERE tw_fact_heads.listed), "
    "r AS (SELECT id FROM tw_payment_authorizations WHERE id = {} AND status = 'reserved' "
    "AND (SELECT same FROM h) = {} FOR UPDATE), "
    "debit AS (UPDATE tw_chain_balances SET balance = balance - {} WHERE address = {} AND balance >= {} "
    "AND NOT EXISTS (SELECT 1 FROM tw_ledger WHERE reference = {} AND kind = 'transfer_out') "
    "AND EXISTS (SELECT 1 FROM r) RETURNING balance), "
    "credit AS (INSERT INTO tw_chain_balances (address, balance) SELECT {}, {} FROM debit ON CONFLICT (address) "
    "DO UPDATE SET balance = tw_chain_balances.balance + excluded.balance RETURNING balance), "
    "sent AS (INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, 'transfer_out', {}, NULL, {} FROM debit), "
    "received AS (INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "SELECT {}, {}, {}, balance, 'transfer_in', {}, NULL, {} FROM credit), "
    "receipt AS (INSERT INTO tw_receipts (receipt_id, agent_id, category, tool, amount, status, revision, job_id, "
    "body, provider_cost, created_ms, payment_method, execution_status, duration_ms) "
    "SELECT {}, {}, {}, {}, {}, {}, 1, {}, {}, {}, {}, {}, {}, {} FROM debit), "
    "a AS (UPDATE tw_payment_authorizations SET status = 'settled', settlement_tx = {}, receipt_id = {}, "
    "updated_ms = {} WHERE id = (SELECT id FROM r) AND EXISTS (SELECT 1 FROM debit) RETURNING id) "
    "SELECT id FROM a"
)


def applies(gateway: X402Gateway, accepted: Accepted) -> bool:
    """Whether `settle_lookup` can settle this payment: the kernel's local network (its
    transfer is rows of our database) on PostgreSQL, between two accounts."""
    return type(gateway.backend) is LocalSettlement and ledger.transfers_in_one_statement(
        accepted.payer, accepted.payment.authorization.to
    )


def transaction_of(gateway: X402Gateway, accepted: Accepted) -> str:
    """The hash the local network's settlement of `accepted` gives (`LocalSettlement.settle`)."""
    return local_transaction_hash(gateway.network, accepted.payment)


async def settle_lookup(
    gateway: X402Gateway,
    receipts: ReceiptBook,
    accepted: Accepted,
    draft: ReceiptDraft,
    heads: list[tuple[str, str, str, str, str]],
) -> str | None:
    """Settle `accepted` (`applies` must hold) with the receipt `draft` says (settled, with
    `transaction_of`'s hash), if every one of `heads` holds its value already; the receipt's id,
    or None when nothing was written (the caller's transaction then settles and records)."""
    assert draft.settlement_tx is not None
    signed, receipt_row = receipts.sign(draft)
    series: list[list[Any]] = [list(column) for column in zip(*heads, strict=True)] if heads else [[]] * 5
    auth = accepted.payment.authorization
    transfer = ledger.transfer_values(
        gateway.network.chain_id, accepted.payer, auth.to, auth.value, draft.settlement_tx
    )
    receipt_id = signed["receipt_id"]
    done = await SETTLE_LOOKUP.row(
        *series,
        accepted.key,
        len(heads),
        *transfer,
        *receipt_row,
        draft.settlement_tx,
        receipt_id,
        now_ms(),
    )
    return None if done is None else receipt_id
