"""What the console's tests of the goals and souls pages share: those plugins installed beside
the console, and their data seeded through the service (a goal paid from credits with two
cases, one of whose sessions, run by the goals plugin's own periodic task against a scripted
model, opens a sub-case and asks a person by email; a soul with a sale paid by x402,
fulfilled and paid out on-chain, and an order left open), with the secrets no page may show."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import msgspec
from eth_account import Account

from tollway.testing import (
    OPERATOR,
    credits_session,
    paid_with_x402,
    proof_headers,
    scripted_model,
    smtp_server,
    tool_call,
)

INSTALLED = {"tollway_goals", "tollway_web", "tollway_email", "tollway_souls"}
SPLIT = "(split it)"  # in a case's task: its session opens a sub-case and asks Lee
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


def _model(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: a case told to split opens sub-case inv-1-a (slice 1) and asks Lee
    by email; every other turn just waits."""
    last = request["messages"][-1]
    if last["role"] == "user" and last["content"].startswith("[event]") and SPLIT in last["content"]:
        sub = tool_call("open_case", {"case_key": "inv-1-a", "task": PRIVATE, "budget_usdc": "1"}, "c1")
        ask = tool_call(
            "ask_person",
            {"person_name": "Lee", "person_address": "lee@example.com", "kind": "answer", "question": PRIVATE},
            "a1",
        )
        return {**sub, "tool_calls": sub["tool_calls"] + ask["tool_calls"]}
    return {"role": "assistant", "content": "Waiting."}


@contextlib.contextmanager
def services() -> Iterator[dict[str, str]]:
    """The scripted model and an SMTP server running; the service's settings naming them."""
    with scripted_model(_model) as model, smtp_server() as (_mail, mail_env):
        yield {
            "TOLLWAY_LLM_BASE_URL": model.base_url,
            "TOLLWAY_LLM_MODEL": "scripted",
            "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1",
            **mail_env,
        }


async def seed_goal(client: Any, kernel: Any) -> dict[str, Any]:
    """A goal of 20 USDC with cases inv-1 (slice 3, told to split) and inv-2 (slice 2.5), its
    sessions run until inv-1 has opened inv-1-a and its ask to Lee is sent. The goal's id,
    agent, auth headers, result-webhook secret and record (`GET /v1/compute/{id}`)."""
    agent, auth = await credits_session(client, "50")
    body = {"goal": PRIVATE, "params": {"budget_usdc": "20"}}
    accepted = await client.post("/v1/compute", json=body, headers=auth)
    assert accepted.status_code == 202, accepted.text
    gid = accepted.json()["goal_id"]
    for key, budget, task in (("inv-1", "3", f"{PRIVATE} {SPLIT}"), ("inv-2", "2.5", PRIVATE)):
        event = {"event_id": key, "case_key": key, "task": task, "budget_usdc": budget}
        assert (await client.post(f"/v1/compute/{gid}/events", json=event, headers=auth)).status_code == 202
    sessions = next(t for t in kernel.periodic_tasks if t.name == "goal_sessions")
    last: Any = None
    for _ in range(300):  # as a worker's scheduler runs it, until every session waits and nothing moves
        await sessions.run(kernel.context)
        cases = (await client.get(f"/v1/compute/{gid}/cases", headers=auth)).json()["data"]
        asks = (await client.get(f"/v1/compute/{gid}/cases/inv-1", headers=auth)).json()["data"]["asks"]
        spent = (await client.get(f"/v1/compute/{gid}", headers=auth)).json()["data"]["spent_usdc"]
        now = ([c["status"] for c in cases], [a["status"] for a in asks], spent)
        if now[:2] == (["waiting"] * 3, ["sent"]) and now == last:
            break
        last = now
        await asyncio.sleep(0.2)
    else:
        raise AssertionError(f"the goal's sessions did not settle: {last}")
    secret = (await client.get(f"/v1/compute/{gid}/result-webhook", headers=auth)).json()["data"]["secret"]
    record = (await client.get(f"/v1/compute/{gid}", headers=auth)).json()["data"]
    return {"goal_id": gid, "agent_id": agent, "auth": auth, "secret": secret, "record": record}


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
