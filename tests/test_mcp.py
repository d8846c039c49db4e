"""The MCP front in memory, through the SDK's own `Client`, in both protocol modes
(the per-request era the SDK picks by default, and the legacy initialize
handshake): tools/list, credits, refusals, free reads, jobs with progress, the
output cap and cancellation."""
from __future__ import annotations

import asyncio
import json
from typing import Annotated

import msgspec
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from core.hookspecs import hookimpl
from core.tables import LedgerEntry, Quote, Receipt
from core.testing import http_client
from core.tool import Example, Tool, ToolContext
from mcp_server import BearerIdentity, McpSettings, build_server
from mcp_server.shaping import cap_output
from runtime.worker import Worker
from tests.support.accounts import credits_session
from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin

MODES = ["auto", "legacy"]


# -- a plugin for the cap and cancellation tests -------------------------------------------
class ManyInput(msgspec.Struct, forbid_unknown_fields=True):
    count: Annotated[int, msgspec.Meta(ge=0, le=5000)]


class ManyOutput(msgspec.Struct):
    items: list[dict]
    note: str


GATE: dict[str, asyncio.Event] = {}


async def run_many(value: ManyInput, ctx: ToolContext) -> ManyOutput:
    return ManyOutput(items=[{"n": i, "text": f"item {i} " + "x" * 40} for i in range(value.count)], note="y" * 300)


async def run_gated(value: ManyInput, ctx: ToolContext) -> ManyOutput:
    GATE["started"].set()
    await GATE["release"].wait()
    return ManyOutput(items=[], note="released")


MANY = Tool(
    name="many_items", path="/v1/tools/test/many", title="Many items", description="Returns `count` items (MCP tests).",
    category="data", input_type=ManyInput, output_type=ManyOutput, run=run_many, price="0.001", family="mcptest",
    examples=(Example("three", {"count": 3}),),
)
GATED = Tool(
    name="gated_inline", path="/v1/tools/test/gated", title="Gated", description="Waits for the test to release it (MCP tests).",
    category="data", input_type=ManyInput, output_type=ManyOutput, run=run_gated, price="0.004", family="mcptest", rate_limit="paid",
)


class McpTestPlugin:
    @hookimpl
    def register_tools(self, register):
        register(MANY)
        register(GATED)


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin()), ("jobs", JobsPlugin()), ("mcptest", McpTestPlugin())])


async def session(kernel, amount: str = "1") -> tuple[str, str]:
    """(agent_id, access token) of an agent with `amount` USDC of credits, made through the operator routes."""
    async with http_client(kernel) as client:
        agent_id, headers = await credits_session(client, amount)
    return agent_id, headers["Authorization"][len("Bearer ") :]


async def paid_server(kernel, amount: str = "1", **settings):
    agent_id, token = await session(kernel, amount)
    return agent_id, build_server(kernel, identity=BearerIdentity(token), settings=McpSettings(**settings) if settings else None)


# -- tools/list -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_has_every_tool_with_schemas_price_and_hints(kernel, mode):
    mcp = build_server(kernel)
    async with Client(mcp.server, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(kernel.tools) <= set(listed)
    assert {"job_status", "balance", "receipts", "spend_breakdown", "notifications"} <= set(listed)
    echo = listed["echo_words"]
    assert echo.title == "Echo"
    assert "Price: depends on the input" in echo.description
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["properties"]["text"] == {"type": "string", "minLength": 1, "maxLength": 200}
    assert echo.input_schema["required"] == ["text"]
    assert {"memo", "decisionContext"} <= set(echo.input_schema["properties"])
    assert {"request_id", "receipt_id", "status", "tool", "result", "evidence"} <= set(echo.output_schema["properties"])
    assert echo.annotations.read_only_hint is True and echo.annotations.open_world_hint is True
    assert echo.meta["tollway/price"] == {"currency": "USDC", "network": "eip155:84532", "per": "call", "amount_usdc": None, "depends_on_input": True}
    flaky = listed["flaky"]
    assert "Price: 0.010000 USDC per call" in flaky.description
    assert flaky.meta["tollway/price"]["amount_usdc"] == "0.010000" and flaky.meta["tollway/price"]["amount_atomic"] == "10000"
    job = listed["add_numbers"]
    assert "wait_seconds" in job.input_schema["properties"]
    assert job.meta["tollway/mode"] == "job"
    assert listed["cpu_sum"].annotations.open_world_hint is False
    keyed = listed["add_keyed"]
    assert "idempotency_key" in keyed.input_schema["required"] and keyed.annotations.idempotent_hint is True
    assert listed["balance"].annotations.read_only_hint is True
    assert listed["balance"].meta["tollway/price"]["amount_usdc"] == "0.000000"


# -- paid calls --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_credits_pay_and_the_receipt_id_is_in_meta(kernel, mode):
    agent_id, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server, mode=mode) as client:
        result = await client.call_tool("echo_words", {"text": "hello there", "repeat": 2, "memo": "mcp test"})
        balance = await client.call_tool("balance", {})
    assert result.is_error is False
    data = result.structured_content
    assert data["status"] == "completed" and data["tool"] == "echo_words"
    assert data["result"] == {"text": "hello therehello there", "words": 2}
    assert json.loads(result.content[0].text) == data
    assert result.meta["tollway/receipt_id"] == data["receipt_id"]
    assert "x402/payment-response" not in result.meta
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["payment_method"] == "credits" and receipt["amount_usdc"] == "0.002000" and receipt["memo"] == "mcp test"
    assert receipt["agent_id"] == agent_id
    assert balance.structured_content["credits_balance"] == "0.048000"


@pytest.mark.parametrize("mode", MODES)
async def test_bad_arguments_are_the_spec_error_before_any_payment(kernel, mode):
    _, mcp = await paid_server(kernel)
    async with Client(mcp.server, mode=mode) as client:
        wrong = await client.call_tool("echo_words", {"text": "x", "repeat": 9})
        missing = await client.call_tool("echo_words", {})
        unknown = await client.call_tool("echo_words", {"text": "x", "colour": "red"})
        wait = await client.call_tool("add_numbers", {"a": 1, "wait_seconds": "soon"})
    assert wrong.is_error and wrong.structured_content["error"] == "invalid_request"
    assert wrong.structured_content["details"] == [{"field": "repeat", "message": "repeat must be from 1 to 5"}]
    assert json.loads(wrong.content[0].text) == wrong.structured_content
    assert missing.structured_content["details"][0]["field"] == "text"
    assert unknown.structured_content["error"] == "invalid_request"
    assert wait.structured_content["details"][0]["field"] == "wait_seconds"
    assert await Quote.count() == 0 and await Receipt.count() == 0


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_is_a_json_rpc_error(kernel, mode):
    async with Client(build_server(kernel).server, mode=mode) as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("no_such_tool", {})
    assert "no_such_tool" in str(err.value)


@pytest.mark.parametrize("mode", MODES)
async def test_without_credits_the_result_is_the_x402_payment_required(kernel, mode):
    _, mcp = await paid_server(kernel, "0.001")  # flaky costs 0.01
    async with Client(mcp.server, mode=mode) as client:
        result = await client.call_tool("flaky", {"text": "fine"})
    assert result.is_error is True
    required = result.structured_content
    assert required["x402Version"] == 2 and required["error"] == "payment_required"
    assert required["resource"]["url"] == "mcp://tollway/v1/tools/test/flaky"
    (accept,) = required["accepts"]
    assert accept["amount"] == "10000" and accept["network"] == "eip155:84532" and accept["extra"]["quoteId"].startswith("q_")
    assert json.loads(result.content[0].text) == required
    assert result.meta["tollway/error"]["error"] == "payment_required"


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_tool_is_refunded_and_reported(kernel, mode):
    _, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server, mode=mode) as client:
        failed = await client.call_tool("flaky", {"text": "boom"})
        balance = await client.call_tool("balance", {})
    assert failed.is_error and failed.structured_content["error"] == "provider_unavailable"
    receipt = await kernel.receipts.get(failed.structured_content["receipt_id"])
    assert receipt["status"] == "refunded"
    assert balance.structured_content["credits_balance"] == "0.050000"


async def test_idempotency_key_argument_answers_a_retry_once(kernel):
    _, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server) as client:
        first = await client.call_tool("echo_keyed", {"text": "once", "idempotency_key": "k-1"})
        again = await client.call_tool("echo_keyed", {"text": "once", "idempotency_key": "k-1"})
        balance = await client.call_tool("balance", {})
    assert first.structured_content == again.structured_content
    assert balance.structured_content["credits_balance"] == "0.047000"


# -- free reads -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_free_kernel_reads_are_tools(kernel, mode):
    _, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server, mode=mode) as client:
        paid = await client.call_tool("echo_words", {"text": "one two"})
        receipts = await client.call_tool("receipts", {"limit": 10})
        breakdown = await client.call_tool("spend_breakdown", {"period": 7})
        notes = await client.call_tool("notifications", {"unread": True})
        bad = await client.call_tool("receipts", {"limit": "ten"})
        missing_job = await client.call_tool("job_status", {"request_id": "req_nope"})
    assert [r["receipt_id"] for r in receipts.structured_content["receipts"]] == [paid.structured_content["receipt_id"]]
    assert breakdown.is_error is False and isinstance(breakdown.structured_content, dict)
    assert [n["type"] for n in notes.structured_content["notifications"]] == ["credit_issued"]  # the grant
    assert bad.is_error and bad.structured_content["details"] == [{"field": "limit", "message": "expected integer"}]
    assert missing_job.is_error and missing_job.structured_content["error"] == "not_found"


async def test_reads_without_identity_are_refused(kernel):
    async with Client(build_server(kernel).server) as client:
        result = await client.call_tool("balance", {})
    assert result.is_error and result.structured_content["error"] == "unauthorized"


# -- jobs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_job_tool_accepts_then_job_status_returns_the_job(kernel, mode):
    _, mcp = await paid_server(kernel)
    async with Client(mcp.server, mode=mode) as client:
        accepted = await client.call_tool("add_numbers", {"a": 2, "b": 3})
        status = await client.call_tool("job_status", {"request_id": accepted.structured_content["request_id"]})
    body = accepted.structured_content
    assert body["status"] == "pending" and body["tool"] == "add_numbers" and body["receipt_id"]
    assert "job_status" in body["message"]
    assert accepted.meta["tollway/receipt_id"] == body["receipt_id"]
    assert status.structured_content["request_id"] == body["request_id"]
    assert status.structured_content["status"] == "pending"


@pytest.mark.parametrize("mode", MODES)
async def test_wait_seconds_waits_for_the_job_with_progress(kernel, mode):
    _, mcp = await paid_server(kernel)
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    worker = Worker(kernel, poll_s=0.05)
    worker.start()
    try:
        async with Client(mcp.server, mode=mode) as client:
            result = await client.call_tool("add_numbers", {"a": 20, "b": 22, "wait_seconds": 30}, progress_callback=on_progress)
    finally:
        await worker.stop()
    body = result.structured_content
    assert body["status"] == "completed"
    assert body["job"]["status"] == "completed" and body["job"]["result"]["sum"] == 42
    assert progress and progress[-1][0] == 2 and progress[-1][1] == 2
    assert "completed" in progress[-1][2]


# -- output cap --------------------------------------------------------------------------------------
def test_cap_output_drops_list_items_never_cuts_strings():
    value = {"items": [{"s": "x" * 100, "n": i} for i in range(100)], "note": "keep me whole"}
    capped, dropped = cap_output(value, 2_000)
    text = json.dumps(capped, separators=(",", ":"))
    assert len(text.encode()) <= 2_000 and dropped > 0
    assert capped["truncated"] is True and capped["note"] == "keep me whole"
    assert all(item["s"] == "x" * 100 for item in capped["items"])
    assert len(capped["items"]) + dropped == 100
    assert cap_output({"a": [1, 2]}, 2_000) == ({"a": [1, 2]}, 0)


@pytest.mark.parametrize("mode", MODES)
async def test_large_results_are_capped_valid_and_marked(kernel, mode):
    _, mcp = await paid_server(kernel, output_cap=4_000)
    async with Client(mcp.server, mode=mode) as client:
        small = await client.call_tool("many_items", {"count": 3})
        big = await client.call_tool("many_items", {"count": 2000})
    assert "truncated" not in small.structured_content
    assert big.is_error is False
    text = big.content[0].text
    assert len(text.encode()) <= 4_000
    assert json.loads(text) == big.structured_content
    assert big.structured_content["truncated"] is True
    assert big.structured_content["note"] == "y" * 300
    kept = big.structured_content["items"]
    assert 0 < len(kept) < 2000 and kept[-1]["text"].endswith("x" * 40)
    assert big.meta["tollway/truncated"]["dropped_items"] == 2000 - len(kept)


# -- cancellation ----------------------------------------------------------------------------------
async def test_a_cancelled_call_still_finishes_its_bookkeeping(kernel):
    GATE["started"], GATE["release"] = asyncio.Event(), asyncio.Event()
    agent_id, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server, mode="legacy") as client:
        call = asyncio.create_task(client.call_tool("gated_inline", {"count": 1}))
        await GATE["started"].wait()  # charged, tool running
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert len(mcp._inflight) == 1  # the kernel call outlives the cancelled request
        GATE["release"].set()
        await asyncio.gather(*list(mcp._inflight))
        balance = await client.call_tool("balance", {})
    (receipt,) = [r for r in await Receipt.select(Receipt.body) if json.loads(r["body"])["tool"] == "gated_inline"]
    body = json.loads(receipt["body"])
    assert body["execution_status"] == "completed" and body["status"] == "settled"
    assert balance.structured_content["credits_balance"] == "0.046000"
    spends = await LedgerEntry.select(LedgerEntry.delta).where(LedgerEntry.account == f"credits:{agent_id}")
    assert sorted(r["delta"] for r in spends) == [-4000, 50000]
