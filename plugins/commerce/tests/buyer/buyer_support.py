"""Helpers of the buyer tests: the kernel with the commerce plugin and a stand-in `psp`
provider, the stand-in merchant configured and its feed read, and waiting for jobs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx
from acp_merchant_standin import TOKEN, Merchant

from tollway import Provider, Setting, hookimpl
from tollway.testing import OPERATOR

PLUGIN = {"tollway_commerce"}
ENV = {"TOLLWAY_COMMERCE_FX_RATES": "eur=1.10", "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"}
PSP_URL = Setting("psp", "standin_url", None, "Base URL of the stand-in PSP (tests only).")


class StandinIssuer:
    """A `psp` client minting Stripe-shaped shared payment tokens at the stand-in merchant's PSP."""

    name = "stripe"

    def __init__(self, base: str, http: httpx.AsyncClient) -> None:
        self.base, self.http = base.rstrip("/"), http

    async def issue_token(
        self,
        *,
        amount: int,
        currency: str,
        checkout_session_id: str,
        merchant_id: str,
        expires_at: int,
        idempotency_key: str,
    ) -> Mapping[str, Any]:
        reply = await self.http.post(
            f"{self.base}/v1/shared_payment/issued_tokens",
            data={
                "payment_method": "pm_card_visa",
                "usage_limits[currency]": currency,
                "usage_limits[max_amount]": str(amount),
                "usage_limits[expires_at]": str(expires_at),
                "seller_details[external_id]": merchant_id,
                "shared_metadata[checkout_session_id]": checkout_session_id,
            },
            headers={"Idempotency-Key": idempotency_key},
        )
        reply.raise_for_status()
        return reply.json()


class PspStandin:
    @hookimpl
    def register_providers(self, register: Callable[[Provider], None]) -> None:
        register(
            Provider(
                kind="psp",
                name="standin",
                build=lambda settings, http: StandinIssuer(settings["standin_url"], http),
                settings=(PSP_URL,),
                requires=(PSP_URL,),
                description="stand-in PSP of the buyer tests",
            )
        )


def env_for(merchant: Merchant, **more: str) -> dict[str, str]:
    return {**ENV, "TOLLWAY_PSP_STANDIN_URL": f"{merchant.url}/psp", **more}


async def commerce_kernel(kernel_factory: Any, merchant: Merchant, **more: str) -> Any:
    return await kernel_factory(
        installed=PLUGIN, plugins=[("psp_standin", PspStandin())], env=env_for(merchant, **more)
    )


def merchant_body(merchant: Merchant, merchant_id: str = "shop", **more: Any) -> dict[str, Any]:
    return {
        "id": merchant_id,
        "name": "Stand-in Shop",
        "base_url": merchant.url,
        "feed_url": f"{merchant.url}/feed",
        "acp_token": TOKEN,
        "api_version": "2026-01-30",
        **more,
    }


async def configure(client: Any, merchant: Merchant, merchant_id: str = "shop", **more: Any) -> dict[str, Any]:
    """The stand-in configured as a merchant of the service, and its feed read."""
    put = await client.post(
        "/v1/tools/internal/merchants", json=merchant_body(merchant, merchant_id, **more), headers=OPERATOR
    )
    assert put.status_code in (200, 201), put.text
    read = await client.post(f"/v1/tools/internal/merchants/{merchant_id}/feed/read", headers=OPERATOR)
    assert read.status_code == 200, read.text
    return read.json()


BUYER = {"name": "Ada Lovelace", "email": "ada@example.com"}
ADDRESS = {
    "name": "Ada Lovelace",
    "line_one": "1234 Chat Road",
    "city": "San Francisco",
    "state": "CA",
    "country": "US",
    "postal_code": "94131",
}


def buy_body(*items: tuple[str, int], max_total: str, merchant_id: str = "shop", **more: Any) -> dict[str, Any]:
    return {
        "items": [{"merchant": merchant_id, "product_id": p, "quantity": q} for p, q in items],
        "buyer": BUYER,
        "fulfillment_address": ADDRESS,
        "max_total_usdc": max_total,
        **more,
    }


async def balance(client: Any, auth: dict[str, str]) -> str:
    answer = await client.get("/v1/balance", headers=auth)
    assert answer.status_code == 200, answer.text
    return answer.json()["credits_balance"]


def validate_exchanges(merchant: Merchant) -> int:
    """Every checkout request the buyer sent and every answer the merchant gave, against the
    ACP 2026-01-30 JSON Schemas; how many."""
    from acp_schemas import validate_exchange

    for exchange in merchant.exchanges:
        validate_exchange(exchange.method, exchange.path, exchange.request, exchange.status, exchange.answer)
    return len(merchant.exchanges)
