"""An x402 lookup's settlement in one statement (PostgreSQL, core/payments/paid_settlement.py)
writes what the settlement's transaction writes, and leaves the call to that transaction
whenever it cannot: a fact new or changed, funds gone while the tool ran. On SQLite the
transaction always settles, and the same outcomes hold. The funds check the reservation's
statement makes on PostgreSQL refuses as `verify` does, writing nothing."""

from __future__ import annotations

import msgspec
import pytest
from eth_account import Account

from tests.support.facts_plugin import CATALOGUE, FactsPlugin
from tests.support.wallets import fund
from tollway._core.credits import ledger
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.history.tables import FactRecord
from tollway._core.payments import paid_settlement, x402
from tollway._core.payments.tables import PaymentAuthorization
from tollway._core.receipts.receipt_signing import verify_receipt
from tollway._core.receipts.tables import Receipt
from tollway._core.storage import sql
from tollway.testing import http_client, pay_402

ITEM = "/v1/tools/test/item-facts"


@pytest.fixture
async def kernel(kernel_factory):
    CATALOGUE.clear()
    return await kernel_factory(plugins=[("facts", FactsPlugin())])


@pytest.fixture
def one_statement(monkeypatch) -> list[str | None]:
    """What each try of the one statement gave: the receipt id, or None when it wrote nothing."""
    outcomes: list[str | None] = []
    original = paid_settlement.settle_lookup

    async def recorded(*args, **kwargs):
        outcome = await original(*args, **kwargs)
        outcomes.append(outcome)
        return outcome

    monkeypatch.setattr(paid_settlement, "settle_lookup", recorded)
    return outcomes


async def payment_headers(client, payer, key: str) -> dict[str, str]:
    """The headers of `payer`'s payment of a fresh quote for item `key`."""
    quote = await client.post(ITEM, json={"key": key})
    assert quote.status_code == 402
    return {
        "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
        "X-Quote-ID": quote.json()["quote_id"],
    }


async def pay(client, payer, key: str):
    return await client.post(ITEM, json={"key": key}, headers=await payment_headers(client, payer, key))


async def test_a_repeated_lookup_settles_in_one_statement_with_what_the_transaction_writes(kernel, one_statement):
    payer = Account.create()
    CATALOGUE["Z1"] = {"score": 3, "kind": "bolt"}
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await pay(client, payer, "z1")  # the series is new: the transaction records it
        second = await pay(client, payer, "z1")  # the same value: nothing to record
        CATALOGUE["Z1"] = {"score": 4, "kind": "bolt"}
        third = await pay(client, payer, "z1")  # changed: the transaction records it
    answers = [first, second, third]
    assert [a.status_code for a in answers] == [200, 200, 200]
    receipt_ids = [a.json()["data"]["receipt_id"] for a in answers]
    if sql.on_postgres():
        assert one_statement == [None, receipt_ids[1], None]
    else:
        assert one_statement == []
    keys = {kernel.receipts.signer.key_id: kernel.receipts.signer.public_key}
    for receipt_id in receipt_ids:
        row = await Receipt.select().where(Receipt.receipt_id == receipt_id).first()
        assert row["status"] == "settled" and row["payment_method"] == "x402" and row["amount"] == 5_000
        assert row["execution_status"] == "completed" and row["revision"] == 1 and row["job_id"]
        auth = await PaymentAuthorization.select().where(PaymentAuthorization.receipt_id == receipt_id).first()
        assert auth["status"] == "settled" and auth["payer"] == payer.address.lower()
        signed = msgspec.json.decode(row["body"])
        assert verify_receipt(signed, keys) == (True, "valid")
        assert signed["status"] == "settled" and signed["settlement_tx"] == auth["settlement_tx"]
        assert signed["settled_at"] is not None and signed["receipt_id"] == receipt_id
        moved = await LedgerEntry.select(LedgerEntry.kind, LedgerEntry.delta).where(
            LedgerEntry.reference == auth["settlement_tx"]
        )
        assert sorted((m["kind"], m["delta"]) for m in moved) == [("transfer_in", 5_000), ("transfer_out", -5_000)]
    settlement = x402.decode_header(answers[1].headers["PAYMENT-RESPONSE"])
    assert settlement["success"] is True and settlement["payer"].lower() == payer.address.lower()
    assert await ledger.chain_balance(kernel.network.chain_id, payer.address) == 1_000_000 - 3 * 5_000
    values = (
        await FactRecord.select(FactRecord.value).where(FactRecord.attribute == "item_facts").order_by(FactRecord.id)
    )
    assert [msgspec.json.decode(v["value"])["score"] for v in values] == [3, 4]
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_funds_gone_while_the_tool_ran_leave_the_call_to_the_transaction(kernel, one_statement):
    payer = Account.create()
    CATALOGUE["Z2"] = {"score": 1}
    original = kernel.paid_calls.run_paid

    async def run_then_spend(call, agent_id, request_id):
        output = await original(call, agent_id, request_id)
        async with kernel.db.transaction():  # the payer spends its funds elsewhere meanwhile
            left = await ledger.chain_debit(kernel.network.chain_id, payer.address, 991_000, kind="spent")
        assert left == 4_000  # short of the price
        return output

    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        assert (await pay(client, payer, "z2")).status_code == 200  # the series is recorded
        kernel.paid_calls.run_paid = run_then_spend
        refused = await pay(client, payer, "z2")
    assert refused.status_code == 402
    assert refused.json()["details"]["reason"] == x402.ERR_INSUFFICIENT_BALANCE
    if sql.on_postgres():
        assert one_statement[-1] is None
    assert await ledger.chain_balance(kernel.network.chain_id, payer.address) == 4_000
    statuses = await PaymentAuthorization.select(PaymentAuthorization.status).order_by(PaymentAuthorization.created_ms)
    assert sorted(s["status"] for s in statuses) == ["failed", "settled"]
    receipts = await Receipt.select(Receipt.status)
    assert sorted(r["status"] for r in receipts) == ["not_charged", "settled"]
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_funds_short_of_the_price_reserve_nothing_and_the_payment_pays_once_funded(kernel):
    payer = Account.create()
    CATALOGUE["Z3"] = {"score": 2}
    async with http_client(kernel) as client:
        await fund(client, payer.address, "0.004999")  # a micro-USDC short of the price
        headers = await payment_headers(client, payer, "z3")
        short = await client.post(ITEM, json={"key": "z3"}, headers=headers)
        assert short.status_code == 402
        assert short.json()["details"]["reason"] == x402.ERR_INSUFFICIENT_BALANCE
        assert await PaymentAuthorization.count() == 0  # neither the authorization nor the quote is used
        await fund(client, payer.address, "0.000001")
        paid = await client.post(ITEM, json={"key": "z3"}, headers=headers)
    assert paid.status_code == 200, paid.text
    assert await ledger.chain_balance(kernel.network.chain_id, payer.address) == 0
    assert await check_ledger(max_intermediate_age_s=0) == []
