"""Agents with credits for tests, made through the operator routes as an operator would."""
from __future__ import annotations

from typing import Any

OPERATOR = {"Authorization": "Bearer test-operator-token"}


async def credits_session(client: Any, amount: str = "1", *, wallet: str | None = None) -> tuple[str, dict[str, str]]:
    """Register an agent, grant it `amount` USDC of credits, issue an access token.

    Returns (agent_id, headers that authenticate as it).
    """
    body = {"wallet_address": wallet} if wallet else {}
    agent = (await client.post("/v1/tools/internal/agents/register", json=body, headers=OPERATOR)).json()
    grant = await client.post("/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": amount}, headers=OPERATOR)
    assert grant.status_code == 200, grant.text
    token = (await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR)).json()["token"]
    return agent["agent_id"], {"Authorization": f"Bearer {token}"}
