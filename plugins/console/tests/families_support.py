"""What the console's tests of the goals and souls pages share: those plugins installed beside
the console, and their data seeded through the service over HTTP (a goal paid from credits
with two cases; a soul with a sale paid by x402, fulfilled and paid out on-chain, and an order
left open), with the secrets no page may show."""

from __future__ import annotations

from typing import Any

import msgspec
from eth_account import Account

from tollway.testing import OPERATOR, credits_session, paid_with_x402, proof_headers

INSTALLED = {"tollway_goals", "tollway_web", "tollway_souls"}
ENV = {  # a model configured (a goal is refused without one); never called: no session runs here
    "TOLLWAY_LLM_BASE_URL": "http://127.0.0.1:9/v1",
    "TOLLWAY_LLM_MODEL": "none",
    "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1",
}
SCRIBE = {
    "slug": "scribe",
    "name": "Scribe",
    "display_name": "Scribe, the summariser",
    "category": "writing",
    "services": [
        {"slug": "summary", "title": "A summary", "price_usdc": "1.50", "category": "writing"},
        {"slug": "title", "title": "A title", "price_usdc": "0.30", "category": "writing"},
    ],
}
PRIVATE = "private-words-of-an-agent"  # in the goal, its cases' tasks and the orders: on no page


async def seed_goal(client: Any) -> dict[str, Any]:
    """A goal of 20 USDC with cases inv-1 (slice 3) and inv-2 (slice 2.5); its id, agent, auth
    headers and result-webhook secret."""
    agent, auth = await credits_session(client, "50")
    body = {"goal": PRIVATE, "params": {"budget_usdc": "20"}}
    accepted = await client.post("/v1/compute", json=body, headers=auth)
    assert accepted.status_code == 202, accepted.text
    gid = accepted.json()["goal_id"]
    for key, budget in (("inv-1", "3"), ("inv-2", "2.5")):
        event = {"event_id": key, "case_key": key, "task": PRIVATE, "budget_usdc": budget}
        assert (await client.post(f"/v1/compute/{gid}/events", json=event, headers=auth)).status_code == 202
    secret = (await client.get(f"/v1/compute/{gid}/result-webhook", headers=auth)).json()["data"]["secret"]
    return {"goal_id": gid, "agent_id": agent, "auth": auth, "secret": secret}


async def seed_market(client: Any) -> dict[str, Any]:
    """Scribe listed; its summary bought with x402, fulfilled, 1 USDC paid out to the seller's
    wallet; its title bought with credits and left open. The soul key, orders and seller."""
    seller, buyer = Account.create(), Account.create()
    raw = msgspec.json.encode(SCRIBE)
    proof = proof_headers(seller, scope="write", method="POST", path="/v1/soul/register", body=raw)
    registered = await client.post(
        "/v1/soul/register", content=raw, headers={**proof, "content-type": "application/json"}
    )
    assert registered.status_code == 201, registered.text
    key = {"Authorization": f"Bearer {registered.json()['soul_key']}"}
    await client.post("/v1/tools/internal/chain/fund", json={"address": buyer.address, "amount": "5"}, headers=OPERATOR)
    buy = {"soul": "scribe", "service": "summary", "price_usdc": "1.50", "request": {"text": PRIVATE}}
    sold = (await paid_with_x402(client, buyer, "/v1/tools/souls/buy", buy)).json()["request_id"]
    done = await client.post(f"/v1/soul/orders/{sold}/fulfil", json={"result": {"text": PRIVATE}}, headers=key)
    assert done.status_code == 200, done.text
    payout = await client.post("/v1/soul/payouts", json={"amount_usdc": "1"}, headers=key)
    assert payout.status_code == 201 and payout.json()["status"] == "paid", payout.text
    _buyer, auth = await credits_session(client, "1")
    title = {**buy, "service": "title", "price_usdc": "0.30"}
    left_open = (await client.post("/v1/tools/souls/buy", json=title, headers=auth)).json()["request_id"]
    return {
        "soul_key": key["Authorization"].removeprefix("Bearer "),
        "sold": sold,
        "open": left_open,
        "seller": seller.address,
    }
