"""The x402 paid resend's fewer statements keep its guarantees, on SQLite and
PostgreSQL: a quote a refused payment carried stays usable, a reservation the
reconciler voided while the tool ran never settles, a wallet gets one agent
however many first payments race, and a local transfer moves money once."""

from __future__ import annotations

import asyncio
import time

import pytest
from eth_account import Account

from tests.support.echo_plugin import EchoPlugin
from tests.support.wallets import fund
from tollway._core.auth.agents import AgentDirectory
from tollway._core.auth.tables import Agent
from tollway._core.basics.ids import now_ms
from tollway._core.credits import ledger
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.payments import x402
from tollway._core.payments.eip3009 import make_payment, sign_authorization
from tollway._core.payments.settlement import local_transaction_hash
from tollway._core.payments.tables import PaymentAuthorization, Quote
from tollway._core.receipts.tables import Receipt
from tollway.testing import http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}
ECHO = "/v1/tools/test/echo"


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def balance(client, address: str) -> str:
    return (await client.get("/v1/balance", headers={"X-Agent-ID": address})).json()["on_chain_balance"]


async def resend(client, text: str, quote, header: str):
    """The paid resend of `{"text": text}` with payment `header` and the quote of the 402 `quote`."""
    return await client.post(
        ECHO, json={"text": text}, headers={"payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}
    )


async def test_a_quote_claimed_by_a_refused_payment_stays_usable(kernel):
    payer, stranger = Account.create(), Account.create()
    async with http_client(kernel) as client:
        quote = await client.post(ECHO, json={"text": "later"})
        headers = {
            "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
            "X-Quote-ID": quote.json()["quote_id"],
        }
        unfunded = await client.post(ECHO, json={"text": "later"}, headers=headers)
        assert unfunded.status_code == 402
        assert unfunded.json()["details"]["reason"] == x402.ERR_INSUFFICIENT_BALANCE
        # signed by someone else than authorization.from: refused after the quote was claimed
        forged = pay_402(stranger, quote.headers["PAYMENT-REQUIRED"])
        other = await client.post(ECHO, json={"text": "later"}, headers={**headers, "payment-signature": forged})
        assert other.status_code == 402
        assert await Quote.count() == 0  # no refused payment recorded the quote used
        await fund(client, payer.address, "1")
        paid = await client.post(ECHO, json={"text": "later"}, headers=headers)
        assert paid.status_code == 200, paid.text
        again = await client.post(ECHO, json={"text": "later"}, headers=headers)
        assert again.status_code == 402
        assert again.json()["details"]["reason"] in ("quote_already_used", x402.ERR_NONCE_ALREADY_USED)
        assert await balance(client, payer.address) == "0.999000"
    (used,) = await Quote.select(Quote.id, Quote.used_ms)
    assert used["id"] == quote.json()["quote_id"] and used["used_ms"] is not None
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_an_authorization_refused_for_a_used_quote_pays_another(kernel):
    """A quote used already refuses a new authorization without keeping it: the same
    authorization then pays a fresh quote (on PostgreSQL its row, made by the reservation's
    one statement, was taken back)."""
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post(ECHO, json={"text": "twice"})
        paid = await resend(client, "twice", first, pay_402(payer, first.headers["PAYMENT-REQUIRED"]))
        assert paid.status_code == 200, paid.text
        second = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        refused = await resend(client, "twice", first, second)
        assert refused.status_code == 402 and refused.json()["details"]["reason"] == "quote_already_used"
        assert await PaymentAuthorization.count() == 1
        again = await resend(client, "twice", await client.post(ECHO, json={"text": "twice"}), second)
        assert again.status_code == 200, again.text
        assert await balance(client, payer.address) == "0.998000"
    assert await PaymentAuthorization.count() == 2 and await Quote.count() == 2
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_replayed_authorization_gives_its_fresh_quote_back(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        first = await client.post(ECHO, json={"text": "once"})
        header = pay_402(payer, first.headers["PAYMENT-REQUIRED"])
        assert (
            await client.post(
                ECHO,
                json={"text": "once"},
                headers={"payment-signature": header, "X-Quote-ID": first.json()["quote_id"]},
            )
        ).status_code == 200
        fresh = await client.post(ECHO, json={"text": "once"})
        replay = await client.post(
            ECHO, json={"text": "once"}, headers={"payment-signature": header, "X-Quote-ID": fresh.json()["quote_id"]}
        )
        assert replay.status_code == 402
        assert replay.json()["details"]["reason"] == x402.ERR_NONCE_ALREADY_USED
        # the replay's transaction rolled back: its quote was not recorded used ...
        assert await Quote.count().where(Quote.id == fresh.json()["quote_id"]) == 0
        assert await balance(client, payer.address) == "0.999000"
        # ... and pays with a new authorization
        paid = await resend(client, "once", fresh, pay_402(payer, fresh.headers["PAYMENT-REQUIRED"]))
        assert paid.status_code == 200, paid.text
        assert await balance(client, payer.address) == "0.998000"
    assert await PaymentAuthorization.count() == 2


async def test_a_quote_refusal_says_why(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        quote = await client.post(ECHO, json={"text": "a"})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])

        async def reason(quote_id, text="a"):
            resp = await client.post(
                ECHO, json={"text": text}, headers={"payment-signature": header, "X-Quote-ID": quote_id}
            )
            assert resp.status_code == 402
            return resp.json()["details"]["reason"]

        assert await reason("q_nothing") == "quote_not_found"
        assert await reason(quote.json()["quote_id"], text="b") == "quote_mismatch"
        # a quote of this tool and input minted an hour ago, its five minutes long gone
        call = kernel.paid_calls.prepare(kernel.tools["echo_words"], b'{"text": "a"}')
        old = kernel.gateway.quotes.mint(
            tool="echo_words", input_hash=call.input_hash, amount=call.price, now=now_ms() - 3_600_000
        )
        assert await reason(old["id"]) == "quote_expired"
        assert await PaymentAuthorization.count() == 0
        # a quote paid once
        paid = await client.post(
            ECHO, json={"text": "a"}, headers={"payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert paid.status_code == 200, paid.text
        again = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])  # another authorization, the same quote
        resp = await client.post(
            ECHO, json={"text": "a"}, headers={"payment-signature": again, "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert resp.status_code == 402 and resp.json()["details"]["reason"] == "quote_already_used"
        assert await balance(client, payer.address) == "0.999000"
    assert await PaymentAuthorization.count() == 1


async def test_a_reservation_voided_while_the_tool_ran_is_never_settled(kernel):
    payer = Account.create()
    original = kernel.paid_calls.run_paid

    async def run_then_void(call, agent_id, request_id):
        output = await original(call, agent_id, request_id)
        # this process looked dead to the reconciler: it voided the reservation
        assert (await kernel.reconciler.run_once(grace_s=0))["payments_voided"] == 1
        return output

    kernel.paid_calls.run_paid = run_then_void
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        quote = await client.post(ECHO, json={"text": "late"})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        paid = await client.post(
            ECHO, json={"text": "late"}, headers={"payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert paid.status_code == 402, paid.text
        assert paid.json()["details"]["reason"] == "authorization_voided"
        assert await balance(client, payer.address) == "1.000000"
    (receipt,) = await Receipt.select(Receipt.status)
    assert receipt["status"] == "not_charged"
    assert (await PaymentAuthorization.select(PaymentAuthorization.status).first())["status"] == "failed"
    assert await LedgerEntry.count().where(LedgerEntry.kind.is_in(["transfer_out", "transfer_in"])) == 0
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_first_payments_racing_make_one_agent(kernel):
    wallet = Account.create().address
    directories = [AgentDirectory() for _ in range(6)]  # as many processes: no shared cache
    ids = await asyncio.gather(*[d.for_wallet(wallet if i % 2 else wallet.lower()) for i, d in enumerate(directories)])
    assert len(set(ids)) == 1
    assert await Agent.count().where(Agent.wallet_address == wallet.lower()) == 1
    assert await AgentDirectory().for_wallet(wallet) == ids[0]
    assert await AgentDirectory().find_wallet(wallet.upper().replace("0X", "0x")) == ids[0]
    assert await AgentDirectory().find_wallet(Account.create().address) is None


async def test_paying_first_payments_of_one_wallet_at_once_make_one_agent(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        quotes = [await client.post(ECHO, json={"text": f"t{i}"}) for i in range(4)]
        paid = await asyncio.gather(
            *[
                client.post(
                    ECHO,
                    json={"text": f"t{i}"},
                    headers={
                        "payment-signature": pay_402(payer, q.headers["PAYMENT-REQUIRED"]),
                        "X-Quote-ID": q.json()["quote_id"],
                    },
                )
                for i, q in enumerate(quotes)
            ]
        )
        assert [p.status_code for p in paid] == [200] * 4
        assert await balance(client, payer.address) == "0.996000"
    assert await Agent.count().where(Agent.wallet_address == payer.address.lower()) == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


def _payment(kernel, payer, to: str, value: int) -> x402.PaymentPayload:
    now = int(time.time())
    auth, sig = sign_authorization(
        payer, kernel.network, to=to, value=value, valid_after=now - 5, valid_before=now + 60
    )
    return x402.decode_payment(make_payment(kernel.network, kernel.gateway.requirements(value, "q_x"), auth, sig))


@pytest.mark.parametrize("to_self", [False, True], ids=["to_another", "to_self"])
async def test_a_local_transfer_moves_money_once(kernel, to_self):
    payer = Account.create()
    to = payer.address if to_self else kernel.config.pay_to
    backend = kernel.backend
    async with kernel.db.transaction():
        await ledger.chain_credit(kernel.network.chain_id, payer.address, 10_000, kind="fund")
    before_to = await backend.on_chain_balance(to)
    payment = _payment(kernel, payer, to, 4_000)
    first = await backend.settle(payment, {}, payer.address)
    second = await backend.settle(payment, {}, payer.address)  # settling twice: the same hash, moved once
    assert first.status == second.status == "settled"
    assert first.transaction == second.transaction == local_transaction_hash(kernel.network, payment)
    if to_self:
        assert await backend.on_chain_balance(payer.address) == 10_000
    else:
        assert await backend.on_chain_balance(payer.address) == 6_000
        assert await backend.on_chain_balance(to) == before_to + 4_000
    rows = await LedgerEntry.select(LedgerEntry.kind, LedgerEntry.delta, LedgerEntry.balance_after).where(
        LedgerEntry.reference == first.transaction
    )
    assert sorted((r["kind"], r["delta"]) for r in rows) == [("transfer_in", 4_000), ("transfer_out", -4_000)]
    after = {r["kind"]: r["balance_after"] for r in rows}  # each row's balance once its own move was made
    assert after == {"transfer_out": 6_000, "transfer_in": 10_000 if to_self else before_to + 4_000}
    short = await backend.settle(_payment(kernel, payer, to, 20_000), {}, payer.address)
    assert short.status == "failed" and short.reason == x402.ERR_INSUFFICIENT_BALANCE
    assert await check_ledger() == []
