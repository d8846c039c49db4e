"""What the seller tests share: a service with the commerce plugin and a local Stripe, an ACP
platform with its token, and an ACP client that validates every request and answer against
the 2026-01-30 JSON Schemas (`acp_schemas`)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from acp_schemas import validate_exchange
from stripe_standin import SECRET_KEY, StripeStandin

from tollway.testing import http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}
VERSION = "2026-01-30"
PLUGIN = "tollway_commerce"
NO_CAPABILITIES: dict[str, Any] = {}


def env_for(stripe: StripeStandin | None, **more: str) -> dict[str, str]:
    env = {"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1", "TOLLWAY_COMMERCE_PUBLIC_URL": "https://shop.example.com", **more}
    if stripe is not None:
        env["TOLLWAY_PSP_STRIPE_SECRET_KEY"] = SECRET_KEY
        env["TOLLWAY_PSP_STRIPE_API_BASE"] = stripe.url
    return env


@contextlib.asynccontextmanager
async def stripe_standin() -> AsyncIterator[StripeStandin]:
    stripe = StripeStandin()
    await stripe.start()
    try:
        yield stripe
    finally:
        await stripe.stop()


class AcpClient:
    """An agent platform calling the ACP routes with its token; every exchange is validated."""

    def __init__(self, client: httpx.AsyncClient, token: str, *, signing_key: str | None = None) -> None:
        self.client = client
        self.token = token
        self.signing_key = signing_key

    def headers(self, body: bytes = b"", *, key: str | None = None, post: bool = True) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "API-Version": VERSION, "Content-Type": "application/json"}
        if post:
            headers["Idempotency-Key"] = key or str(uuid.uuid4())
        if self.signing_key:
            from tollway_commerce.acp import signing

            sent = signing.timestamp()
            headers["Timestamp"] = sent
            headers["Signature"] = signing.request_signature(self.signing_key, sent, body)
        return headers

    async def post(
        self, path: str, body: Any, *, key: str | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        raw = json.dumps(body).encode()
        answer = await self.client.post(path, content=raw, headers={**self.headers(raw, key=key), **(headers or {})})
        validate_exchange("POST", path, body, answer.status_code, answer.json())
        return answer

    async def get(self, path: str) -> httpx.Response:
        answer = await self.client.get(path, headers=self.headers(post=False))
        validate_exchange("GET", path, None, answer.status_code, answer.json())
        return answer

    async def create(self, *items: str, **more: Any) -> dict[str, Any]:
        body = {"line_items": [{"id": i} for i in items], "currency": "usd", "capabilities": NO_CAPABILITIES, **more}
        answer = await self.post("/v1/checkout_sessions", body)
        assert answer.status_code == 201, answer.text
        return answer.json()

    async def complete(self, session_id: str, token: str, *, key: str | None = None, **more: Any) -> httpx.Response:
        body = {
            "payment_data": {
                "handler_id": "stripe_spt",
                "instrument": {"type": "card", "credential": {"type": "spt", "token": token}},
            },
            **more,
        }
        return await self.post(f"/v1/checkout_sessions/{session_id}/complete", body, key=key)


async def register_agent(client: httpx.AsyncClient) -> str:
    answer = await client.post("/v1/tools/internal/agents/register", json={}, headers=OPERATOR)
    return answer.json()["agent_id"]


async def issue_token(client: httpx.AsyncClient, agent_id: str, **more: Any) -> dict[str, Any]:
    answer = await client.post(
        "/v1/tools/internal/acp-tokens",
        json={"platform": "test-platform", "agent_id": agent_id, **more},
        headers=OPERATOR,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


@contextlib.asynccontextmanager
async def merchant(
    kernel_factory: Any, stripe: StripeStandin | None, **more: Any
) -> AsyncIterator[tuple[Any, httpx.AsyncClient, AcpClient, str]]:
    """A service selling over ACP: (kernel, HTTP client, the platform's ACP client, its agent id)."""
    installed = {PLUGIN, *more.pop("installed", ())}
    kernel = await kernel_factory(installed=installed, env=env_for(stripe, **more.pop("env", {})))
    async with http_client(kernel) as client:
        agent = await register_agent(client)
        token = await issue_token(client, agent, **more)
        yield kernel, client, AcpClient(client, token["token"], signing_key=more.get("signing_key")), agent


def credits_of(balance: dict[str, Any]) -> str:
    return balance["credits_balance"] if "credits_balance" in balance else balance["credits"]
