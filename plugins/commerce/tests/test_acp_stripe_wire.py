"""What the Stripe provider sends, as Stripe's API documents it (docs/commerce.md, "What was
checked against Stripe"): the Shared Payment Token calls under a preview API version (refused
without one), the other calls under the library's own, an issued token that is not active
refused before any merchant sees it, what was refunded read from the PaymentIntent's Charge,
and a 3-D Secure result without an empty indicator."""

from __future__ import annotations

import time

import pytest
import stripe
from commerce_support import merchant, stripe_standin
from stripe_standin import SECRET_KEY

from tollway_commerce.psp import PspError
from tollway_commerce.stripe_psp import PREVIEW_VERSION, StripePsp


def _psp(url: str, **more: str) -> StripePsp:
    return StripePsp(SECRET_KEY, url, payment_method="pm_card_visa", **more)


async def _issue(psp: StripePsp, key: str) -> dict:
    return await psp.issue_token(
        amount=500,
        currency="usd",
        checkout_session_id="cs_1",
        merchant_id="shop",
        expires_at=int(time.time()) + 600,
        idempotency_key=key,
    )


async def test_the_token_calls_carry_a_preview_version_and_the_others_the_librarys(kernel_factory) -> None:
    async with stripe_standin() as standin, merchant(kernel_factory, standin) as (_k, _client, acp, _agent):
        session = await acp.create("credits_5usd")
        paid = await acp.complete(session["id"], standin.grant())
        assert paid.status_code == 200, paid.text
        psp = _psp(standin.url)
        token = await _issue(psp, "k1")
        assert token["status"] == "active"
        refunded = await psp.refund(payment=standin.succeeded()[0]["id"], key="r1")
        assert refunded.refunded == refunded.amount == 500  # read from the expanded Charge
    versions = dict(standin.versions)
    assert versions["/v1/payment_intents"] == PREVIEW_VERSION.default
    assert versions["/v1/shared_payment/issued_tokens"] == PREVIEW_VERSION.default
    assert versions["/v1/refunds"] == stripe.api_version  # not a preview call


async def test_without_a_preview_version_stripe_refuses_the_token_calls() -> None:
    async with stripe_standin() as standin:
        psp = _psp(standin.url, preview_version=stripe.api_version)
        with pytest.raises(PspError, match="unknown parameter"):
            await psp.charge(amount=500, currency="usd", token=standin.grant(), key="k", metadata={})
        with pytest.raises(PspError, match="Unrecognized request URL"):
            await _issue(psp, "k2")
        assert standin.intents == {}


async def test_an_issued_token_that_needs_an_action_is_refused() -> None:
    async with stripe_standin() as standin:
        standin.issue_status = "requires_action"
        with pytest.raises(PspError, match="requires_action"):
            await _issue(_psp(standin.url), "k3")


async def test_a_3ds_result_sends_what_stripe_requires_and_no_empty_indicator() -> None:
    async with stripe_standin() as standin:
        psp = _psp(standin.url)
        asked = await psp.charge(
            amount=500, currency="usd", token=standin.grant("pm_card_authenticationRequired"), key="c", metadata={}
        )
        assert asked.status == "requires_action"
        result = {
            "outcome": "authenticated",
            "outcome_details": {"three_ds_cryptogram": "AbC=", "transaction_id": "ds_1", "version": "2.2.0"},
        }
        paid = await psp.authenticate(payment=asked.id, authentication=result, key="a")
        assert paid.status == "succeeded"
    form = next(f for _m, path, f in standin.requests if path.endswith("/confirm"))
    prefix = "payment_method_options[card][three_d_secure]"
    assert {k.removeprefix(prefix) for k in form} == {
        "[cryptogram]",
        "[transaction_id]",
        "[version]",
        "[ares_trans_status]",
    }
    assert form[f"{prefix}[ares_trans_status]"] == "Y"
