"""The loop calls the service's own tools, paid from the goal's budget (both databases):
each call's receipt carries the goal_id and says it was covered by the goal's budget, the
goal spends exactly the tool's price, the agent's credits move only for the goal itself,
and a refused or failed call is not charged."""

from __future__ import annotations

from typing import Any

import msgspec
from chat_standin import call, chat_standin, turn
from goal_support import event, new_goal

import tollway
from tollway.testing import http_client, ledger_problems
from tollway_goals.runner import SessionRunner

STEP = 2_000


class Quote(msgspec.Struct, forbid_unknown_fields=True):
    sku: str
    quantity: int = 1


class Priced(msgspec.Struct):
    sku: str
    total_usdc: str


async def run_quote(value: Quote, ctx: tollway.ToolContext) -> Priced:
    if value.sku == "broken":
        raise tollway.ToolError("provider_unavailable", "The price list is down.", status=503)
    return Priced(sku=value.sku, total_usdc=f"{value.quantity * 3}.00")


QUOTE = tollway.Tool(
    name="parts_quote",
    path="/v1/tools/test/parts-quote",
    title="Parts quote",
    description="Quotes a part.",
    category="commerce",
    input_type=Quote,
    output_type=Priced,
    run=run_quote,
    price="0.25",
    family="partsquote",
)


class Parts:
    @tollway.hookimpl
    def register_tools(self, register):
        register(QUOTE)


def buyer(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    if "You run the goal's root" in messages[0]["content"]:
        return turn("Noted.")
    if messages[-1]["role"] == "tool":
        return turn("Quoted.")
    return turn(
        None,
        call("parts_quote", "q1", sku="valve", quantity=4),
        call("parts_quote", "q2", sku="broken"),
        call("parts_quote", "q3", sku=7),
        call("compute", "q4", goal="recursion"),
    )


async def test_the_loop_pays_the_services_tools_from_the_goals_budget(kernel_factory) -> None:
    with chat_standin(buyer) as chat:
        kernel = await kernel_factory(
            plugins=[("parts", Parts())],
            installed={"tollway_goals", "tollway_web"},
            env={**chat.env, "TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"},
        )
        runner = SessionRunner(kernel.platform)
        async with http_client(kernel) as client:
            _agent, headers, goal = await new_goal(client, credits="10")
            gid = goal["goal_id"]
            await event(client, gid, headers, event_id="1", case_key="order", task="Price the valves")
            await runner.run_until_idle()
            state = (await client.get(f"/v1/compute/{gid}", headers=headers)).json()["data"]
            balance = (await client.get("/v1/balance", headers=headers)).json()
            receipts = (await client.get("/v1/analytics/receipts", headers=headers)).json()
            breakdown = (await client.get("/v1/analytics/spend/breakdown", headers=headers)).json()
            problems = await ledger_problems()
    assert {t["function"]["name"] for t in chat.requests[-1]["tools"]} >= {
        "parts_quote",
        "web_read",
    } and "compute" not in {t["function"]["name"] for t in chat.requests[-1]["tools"]}
    results = {
        m["tool_call_id"]: msgspec.json.decode(m["content"])
        for m in chat.requests[-1]["messages"]
        if m["role"] == "tool"
    }
    assert (
        results["q1"]["ok"]
        and results["q1"]["result"] == {"sku": "valve", "total_usdc": "12.00"}
        and results["q1"]["price_usdc"] == "0.250000"
    )
    assert (
        results["q2"]["error"] == "provider_unavailable"
        and results["q3"]["error"] == "invalid_request"
        and "error" in results["q4"]
    )
    # root 1 step, case 2 steps, one quote paid; the refused and failed calls cost nothing
    assert state["spent_usdc"] == f"{(3 * STEP + 250_000) / 1e6:.6f}" and state["held_usdc"] == "0.000000"
    assert balance["credits_balance"] == "5.000000"  # only the goal's 5.00 budget left the credits
    body = receipts.get("data", receipts)
    items = body["receipts"] if isinstance(body, dict) else body
    quotes = [r for r in items if r["tool"] == "parts_quote"]
    assert (
        len(quotes) == 1
        and quotes[0]["goal_id"] == gid
        and quotes[0]["status"] == "covered"
        and quotes[0]["payment_method"] == "goal_budget"
    )
    spend = breakdown.get("data", breakdown)
    assert spend["total"] == "5.000000"  # counted once: the goal's own receipt
    assert problems == []
