"""Tests of `{{family}}_text_stats`: the computation, its checks, its run, and one
paid call through the kernel with this family's setting overridden."""
from __future__ import annotations

import httpx
import msgspec
import pytest
from eth_account import Account

from tollway.testing import http_client, pay_402
from tollway import FieldError, ToolContext
from tollway_{{family}}.tool import (
    STOP_WORDS_SETTING,
    TEXT_STATS,
    {{Family}}TextStatsInput,
    check,
    run,
    stop_words_from,
    text_stats,
)

EXAMPLE = TEXT_STATS.examples[0].input


def no_network() -> httpx.AsyncClient:
    """The tool must not reach the network: any request fails the test."""

    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"unexpected request to {request.url}")

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def value(**fields: object) -> {{Family}}TextStatsInput:
    return msgspec.convert({**EXAMPLE, **fields}, {{Family}}TextStatsInput, strict=True)


def test_text_stats_counts_words_sentences_and_reading_time() -> None:
    stats = text_stats("The quick brown fox jumps over the lazy dog. The dog sleeps.", 3)
    assert stats.characters == 60
    assert stats.words == 12
    assert stats.unique_words == 9
    assert stats.sentences == 2
    assert stats.reading_time_s == 4  # 12 words at 230 a minute: 3.13 s, rounded up
    assert [(w.word, w.count) for w in stats.top_words] == [("the", 3), ("dog", 2), ("brown", 1)]


def test_stop_words_are_left_out_of_top_words_only() -> None:
    stats = text_stats("The dog and the cat. The end!", 2, stop_words_from("the, AND"))
    assert stats.words == 7
    assert [(w.word, w.count) for w in stats.top_words] == [("cat", 1), ("dog", 1)]


def test_words_keep_apostrophes_and_hyphens_and_ignore_case() -> None:
    stats = text_stats("Don't stop: well-known WELL-KNOWN facts?", 5)
    assert [(w.word, w.count) for w in stats.top_words][:1] == [("well-known", 2)]
    assert stats.words == 5 and stats.sentences == 1


async def test_run_uses_the_default_stop_words_without_network() -> None:
    async with no_network() as http:
        answer = await run(value(), ToolContext(request_id="req_test", agent_id=None, http=http, settings={}))
    assert [(w.word, w.count) for w in answer.result.top_words] == [("dog", 2), ("brown", 1), ("fox", 1)]
    assert answer.evidence.source_kind == "computed"
    msgspec.json.encode(answer)  # the answer serialises as the declared output type


async def test_run_reads_stop_words_from_its_setting() -> None:
    settings = {STOP_WORDS_SETTING.name: "dog"}
    async with no_network() as http:
        answer = await run(value(top=1), ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings))
    assert [(w.word, w.count) for w in answer.result.top_words] == [("the", 3)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"text": ""}, "text"), ({"top": 0}, "top"), ({"top": 21}, "top"), ({"text": "x" * 20_001}, "text")],
)
def test_constraints_refuse_out_of_range_input(fields: dict, field: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=field):
        value(**fields)


def test_check_refuses_text_without_words() -> None:
    with pytest.raises(FieldError) as err:
        check(value(text="... !!! ---"))
    assert err.value.field == "text" and err.value.code == "invalid_input"


def test_price_is_fixed() -> None:
    assert TEXT_STATS.fixed_price == 1_000  # micro-USDC: 0.001 USDC
    assert TEXT_STATS.quote(value()) == TEXT_STATS.quote(value(text="other words")) == 1_000


async def test_paid_call_through_the_kernel(kernel_factory) -> None:
    """402 quote, x402 payment on the embedded test network, answer and receipt."""
    kernel = await kernel_factory(installed={"tollway_{{family}}"}, env={STOP_WORDS_SETTING.env_var: "the,dog"})
    payer = Account.create()
    async with http_client(kernel) as client:
        funded = await client.post(
            "/v1/tools/internal/chain/fund",
            json={"address": payer.address, "amount": "1"},
            headers={"Authorization": "Bearer test-operator-token"},
        )
        assert funded.status_code == 200, funded.text
        quote = await client.post(TEXT_STATS.path, json=EXAMPLE)
        assert quote.status_code == 402 and quote.json()["amount_usdc"] == "0.001000"
        paid = await client.post(
            TEXT_STATS.path,
            json=EXAMPLE,
            headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]), "X-Quote-ID": quote.json()["quote_id"]},
        )
    assert paid.status_code == 200, paid.text
    data = paid.json()["data"]
    assert data["tool"] == "{{family}}_text_stats" and data["status"] == "completed"
    # TOLLWAY_{{FAMILY}}_STOP_WORDS reached the tool: "the" and "dog" are left out
    assert data["result"]["top_words"] == [{"word": "brown", "count": 1}, {"word": "fox", "count": 1}, {"word": "jumps", "count": 1}]
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "settled" and receipt["amount_usdc"] == "0.001000"
