"""Quotes that are not stored (core/payments/quotes.py), on SQLite and PostgreSQL: issuing
one writes nothing; an id altered anywhere, or minted under another key, is refused
before any write; one quote paid by concurrent resends charges once; a quote minted by
one process of a deployment pays at another."""

from __future__ import annotations

import asyncio
import base64
import binascii

import pytest
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import echo_plugin
from tests.support.echo_plugin import EchoPlugin
from tests.support.wallets import fund
from tollway._core.basics.ids import now_ms
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.credits.tables import LedgerEntry
from tollway._core.payments import quotes
from tollway._core.payments.quotes import QuoteBook, QuoteProblem
from tollway._core.payments.tables import PaymentAuthorization, Quote
from tollway._core.receipts.tables import Receipt
from tollway.testing import count_quotes, http_client, pay_402

ECHO = "/v1/tools/test/echo"
SEED = b"\x07" * 32  # the test settings' TOLLWAY_RECEIPT_KEY


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def balance(client, address: str) -> str:
    return (await client.get("/v1/balance", headers={"X-Agent-ID": address})).json()["on_chain_balance"]


def _altered(quote_id: str, at: int) -> str:
    """`quote_id` with one bit of its byte `at` flipped, encoded as the kernel encodes ids."""
    raw = bytearray(base64.urlsafe_b64decode(quote_id[2:] + "=" * (-len(quote_id[2:]) % 4)))
    raw[at] ^= 0x01
    return "q_" + base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


async def nothing_written() -> bool:
    return (
        await Quote.count() == 0
        and await PaymentAuthorization.count() == 0
        and await Receipt.count() == 0
        and await LedgerEntry.count().where(LedgerEntry.kind == "transfer_out") == 0
    )


async def test_issuing_a_quote_writes_nothing(kernel):
    async with http_client(kernel) as client:
        quotes = [await client.post(ECHO, json={"text": f"t{i}"}) for i in range(3)]
    assert [q.status_code for q in quotes] == [402] * 3
    assert len({q.json()["quote_id"] for q in quotes}) == 3
    assert all(len(q.json()["quote_id"]) <= 40 for q in quotes)  # what the quote id columns hold
    assert await count_quotes(kernel) == 3
    assert await nothing_written()


async def test_an_altered_or_foreign_quote_id_is_refused_before_any_write(kernel):
    """Each byte of the id (expiry, amount, nonce, both tags) altered: `quote_not_found`, or
    `quote_mismatch` for the tag binding the tool and input; and the same for ids that are
    not ids, not canonically encoded, or minted under another key or for another pay_to."""
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        quote = await client.post(ECHO, json={"text": "a"})
        quote_id = quote.json()["quote_id"]
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])

        async def reason(qid: str) -> str:
            resp = await client.post(ECHO, json={"text": "a"}, headers={"payment-signature": header, "X-Quote-ID": qid})
            assert resp.status_code == 402, resp.text
            return resp.json()["details"]["reason"]

        reasons = [await reason(_altered(quote_id, at)) for at in range(27)]
        # bytes 0-19: expiry, amount, nonce and the deployment's tag; 20-26: the input's tag
        assert reasons == ["quote_not_found"] * 20 + ["quote_mismatch"] * 7
        call = kernel.paid_calls.prepare(kernel.tools["echo_words"], b'{"text": "a"}')
        other_key = QuoteBook(b"\x08" * 32, pay_to=kernel.config.pay_to, network=kernel.network.caip2, ttl_s=300)
        other_pay_to = QuoteBook(SEED, pay_to=Account.create().address, network=kernel.network.caip2, ttl_s=300)
        for book in (other_key, other_pay_to):
            minted = book.mint(tool="echo_words", input_hash=call.input_hash, amount=call.price)
            assert await reason(minted["id"]) == "quote_not_found"
        last = quote_id[-1]
        sloppy = [
            quote_id[:-1],  # short
            quote_id + "A",  # long
            quote_id + "=",  # padded
            "Q_" + quote_id[2:],  # another prefix
            quote_id[:-1] + ("+" if last == "-" else "/" if last == "_" else "!"),  # outside the alphabet
            "q_" + "A" * 36,
        ]
        assert [await reason(s) for s in sloppy] == ["quote_not_found"] * len(sloppy)
        assert await nothing_written()
        assert await balance(client, payer.address) == "1.000000"
        # the genuine id still pays: none of the above recorded it
        paid = await client.post(
            ECHO, json={"text": "a"}, headers={"payment-signature": header, "X-Quote-ID": quote_id}
        )
        assert paid.status_code == 200, paid.text
    assert await Quote.count() == 1 and await kernel.backend.on_chain_balance(payer.address) == 999_000


def test_a_quote_book_reads_back_what_it_minted_and_nothing_else():
    book = QuoteBook(SEED, pay_to="0x" + "ab" * 20, network="eip155:84532", ttl_s=300)
    minted = book.mint(tool="echo_words", input_hash="f" * 64, amount=123_456)
    assert book.check(minted["id"], tool="echo_words", input_hash="f" * 64) == minted
    # pay_to compares without case (an address), the tool and input exactly
    same = QuoteBook(SEED, pay_to="0x" + "AB" * 20, network="eip155:84532", ttl_s=300)
    assert same.check(minted["id"], tool="echo_words", input_hash="f" * 64)["amount"] == 123_456
    for tool, input_hash in (("echo_word", "f" * 64), ("echo_words", "e" * 64)):
        with pytest.raises(QuoteProblem) as refused:
            book.check(minted["id"], tool=tool, input_hash=input_hash)
        assert refused.value.reason == "quote_mismatch"
    for network in ("eip155:8453",):
        with pytest.raises(QuoteProblem) as refused:
            QuoteBook(SEED, pay_to="0x" + "ab" * 20, network=network, ttl_s=300).check(
                minted["id"], tool="echo_words", input_hash="f" * 64
            )
        assert refused.value.reason == "quote_not_found"
    with pytest.raises(QuoteProblem) as refused:
        book.check(None, tool="echo_words", input_hash="f" * 64)
    assert refused.value.reason == "missing_quote_id"
    with pytest.raises(ValueError):
        book.mint(tool="echo_words", input_hash="f" * 64, amount=1 << 48)
    with pytest.raises(ValueError):
        QuoteBook(b"", pay_to="0x" + "ab" * 20, network="eip155:84532", ttl_s=300)
    assert book.issued == 1


async def test_concurrent_resends_of_one_quote_charge_once(kernel):
    """Eight authorizations, each good on its own, sent at once with one quote: one pays."""
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        quote = await client.post(ECHO, json={"text": "race"})
        headers = [
            {
                "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
                "X-Quote-ID": quote.json()["quote_id"],
            }
            for _ in range(8)
        ]
        runs_before = len(echo_plugin.RUNS)
        answers = await asyncio.gather(*[client.post(ECHO, json={"text": "race"}, headers=h) for h in headers])
        left = await balance(client, payer.address)
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [402] * 7, [a.text for a in answers]
    assert {a.json()["details"]["reason"] for a in answers if a.status_code == 402} == {"quote_already_used"}
    assert len(echo_plugin.RUNS) - runs_before == 1
    assert left == "0.999000"
    assert await Quote.count() == 1 and await PaymentAuthorization.count() == 1 and await Receipt.count() == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_quote_minted_by_one_process_pays_at_another(kernel_factory):
    """Two kernels of one deployment (its settings, its database): the 402 of one is paid at
    the other; a kernel given another receipt key (another deployment) does not know it.
    (The kernels of one test process share the tables' engine binding, that of the kernel
    made last: whatever writes goes through that one; a 402 writes nothing.)"""
    first = await kernel_factory(plugins=[("echo", EchoPlugin())])
    second = await kernel_factory(plugins=[("echo", EchoPlugin())])
    payer = Account.create()
    async with http_client(first) as one, http_client(second) as other:
        await fund(other, payer.address, "1")
        quote = await one.post(ECHO, json={"text": "across"})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        paid = await other.post(
            ECHO, json={"text": "across"}, headers={"payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert paid.status_code == 200, paid.text
        again = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        reused = await other.post(
            ECHO, json={"text": "across"}, headers={"payment-signature": again, "X-Quote-ID": quote.json()["quote_id"]}
        )
        assert reused.status_code == 402 and reused.json()["details"]["reason"] == "quote_already_used"
        assert await balance(other, payer.address) == "0.999000"
    assert await count_quotes(first) == 1 and await count_quotes(second) == 1  # second's: the reuse's fresh quote
    stranger = await kernel_factory(
        plugins=[("echo", EchoPlugin())], env={"TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x09" * 32).decode()}
    )
    async with http_client(first) as one, http_client(stranger) as elsewhere:
        quote = await one.post(ECHO, json={"text": "away"})
        refused = await elsewhere.post(
            ECHO,
            json={"text": "away"},
            headers={
                "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
                "X-Quote-ID": quote.json()["quote_id"],
            },
        )
    assert refused.status_code == 402 and refused.json()["details"]["reason"] == "quote_not_found"
    assert await Quote.count() == 1 and await PaymentAuthorization.count() == 1
    assert await check_ledger(max_intermediate_age_s=0) == []


async def test_a_paid_quotes_record_is_purged_by_the_hourly_task_a_day_after_it_expired(kernel):
    payer = Account.create()
    async with http_client(kernel) as client:
        await fund(client, payer.address, "1")
        quote = await client.post(ECHO, json={"text": "kept"})
        header = pay_402(payer, quote.headers["PAYMENT-REQUIRED"])
        quote_id = quote.json()["quote_id"]
        paid = await client.post(
            ECHO, json={"text": "kept"}, headers={"payment-signature": header, "X-Quote-ID": quote_id}
        )
        assert paid.status_code == 200, paid.text
        expires_ms = (await Quote.select(Quote.expires_ms).where(Quote.id == quote_id).first())["expires_ms"]
        await quotes.purge_expired(now=expires_ms + quotes.PURGE_MARGIN_MS)  # not yet a day past its expiry
        assert await Quote.count().where(Quote.id == quote_id) == 1
        # one paid three days ago: the hourly task deletes it and keeps the one just paid
        old = kernel.gateway.quotes.mint(tool="echo", input_hash="h", amount=1000, now=now_ms() - 3 * 86_400_000)
        await quotes.record_used(old)
        assert await Quote.count() == 2
        tasks = {task.name: task for task in kernel.periodic_tasks}
        await tasks["paid_quote_purge"].run(None)
        assert [row["id"] for row in await Quote.select(Quote.id)] == [quote_id]
        await quotes.purge_expired(now=expires_ms + quotes.PURGE_MARGIN_MS + 1)
        assert await Quote.count().where(Quote.id == quote_id) == 0


def _spelled_once(text: str) -> bytes | None:
    """The first reading of an id's letters: base64url decoded leniently (letters outside
    the alphabet skipped), then kept only if its 27 bytes encode back to the same letters."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 27 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != text:
        return None
    return raw


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@settings(max_examples=500, deadline=None)
@given(
    letters=st.text(alphabet=_LETTERS, min_size=36, max_size=36),
    at=st.integers(0, 35),
    odd=st.sampled_from(["", "+", "/", "=", "!", " ", "\n", "é", "Ａ", "-", "A"]),
)
def test_an_id_is_read_as_the_one_spelling_of_its_bytes(letters, at, odd):
    """An id's 36 letters are read strictly (one spelling per 27 bytes): the same ids are
    read, to the same bytes, as when they were decoded leniently and encoded back."""
    text = (letters[:at] + odd + letters[at + 1 :])[:36] if odd else letters
    read = quotes._unb64(text) if len(text) == 36 else None
    taken = read if read is not None and len(read) == 27 else None  # `check` refuses other lengths
    assert taken == (_spelled_once(text) if len(text) == 36 else None)
