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

from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tollway._core.credits.tables import LedgerEntry
from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._core.plugin_api.tool import Example, Tool, ToolContext, ToolError
from tollway._core.receipts.tables import Receipt
from tollway._mcp_server import BearerIdentity, McpSettings, build_server
from tollway._mcp_server.shaping import cap_output
from tollway._runtime.worker import Worker
from tollway.testing import count_quotes, credits_session, http_client

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
    name="many_items",
    path="/v1/tools/test/many",
    title="Many items",
    description="Returns `count` items (MCP tests).",
    category="data",
    input_type=ManyInput,
    output_type=ManyOutput,
    run=run_many,
    price="0.001",
    family="mcptest",
    examples=(Example("three", {"count": 3}),),
)


class PagedInput(msgspec.Struct, forbid_unknown_fields=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=5000)] = 1000
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0


class PagedOutput(msgspec.Struct):
    items: list[dict]
    count: int
    has_more: bool


async def run_paged(value: PagedInput, ctx: ToolContext) -> PagedOutput:
    items = [{"n": i, "text": "z" * 60} for i in range(value.offset, value.offset + value.limit)]
    return PagedOutput(items=items, count=len(items), has_more=False)


async def run_fails(value: ManyInput, ctx: ToolContext) -> ManyOutput:
    raise ToolError("provider_unavailable", "the upstream is down", status=503)


PAGED = Tool(
    name="paged_items",
    path="/v1/tools/test/paged",
    title="Paged items",
    description="Returns `limit` items from `offset` (MCP tests).",
    category="data",
    input_type=PagedInput,
    output_type=PagedOutput,
    run=run_paged,
    price="0.001",
    family="mcptest",
)
FAILS_KEYED = Tool(
    name="fails_keyed",
    path="/v1/tools/test/fails-keyed",
    title="Fails",
    description="Always fails; takes an idempotency key (MCP tests).",
    category="data",
    input_type=ManyInput,
    output_type=ManyOutput,
    run=run_fails,
    price="0.001",
    family="mcptest",
    idempotency="optional",
)
GATED = Tool(
    name="gated_inline",
    path="/v1/tools/test/gated",
    title="Gated",
    description="Waits for the test to release it (MCP tests).",
    category="data",
    input_type=ManyInput,
    output_type=ManyOutput,
    run=run_gated,
    price="0.004",
    family="mcptest",
    rate_limit="paid",
)


class McpTestPlugin:
    @hookimpl
    def register_tools(self, register):
        register(MANY)
        register(GATED)
        register(PAGED)
        register(FAILS_KEYED)


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
    return agent_id, build_server(
        kernel, identity=BearerIdentity(token), settings=McpSettings(**settings) if settings else None
    )


# -- tools/list -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_has_every_tool_with_schemas_price_and_hints(kernel, mode):
    mcp = build_server(kernel)
    async with Client(mcp.server, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(kernel.tools) <= set(listed)
    assert {"job_status", "balance", "receipts", "spend_breakdown", "notifications", "describe_tool"} <= set(listed)
    echo = listed["echo_words"]
    assert echo.title == "Echo"
    assert echo.description == "Echoes text (kernel tests). Price: depends on the input."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["properties"]["text"] == {"type": "string", "minLength": 1, "maxLength": 200}
    assert echo.input_schema["required"] == ["text"]
    assert {"memo", "decisionContext"} <= set(echo.input_schema["properties"])
    assert echo.output_schema is None  # on demand: describe_tool
    assert echo.annotations.read_only_hint is True and echo.annotations.destructive_hint is False
    assert echo.meta["tollway/price"] == {"amount_usdc": None, "depends_on_input": True}
    flaky = listed["flaky"]
    assert flaky.description.endswith("Price: 0.010000 USDC per call.")
    assert flaky.meta["tollway/price"] == {"amount_usdc": "0.010000"}
    job = listed["add_numbers"]
    assert "wait_seconds" in job.input_schema["properties"] and job.description.endswith("Runs as a job.")
    assert job.meta["tollway/mode"] == "job"
    assert listed["cpu_sum"].annotations.open_world_hint is False
    keyed = listed["add_keyed"]
    assert "idempotency_key" in keyed.input_schema["properties"] and "idempotency_key" not in keyed.input_schema.get(
        "required", []
    )
    assert keyed.input_schema["properties"]["idempotency_key"]["description"] == "Generated when omitted."
    assert keyed.annotations.idempotent_hint is True
    assert listed["balance"].annotations.read_only_hint is True
    # what the front writes (the test tools' own descriptions are test data)
    words = " ".join(
        [json.dumps(t.input_schema) for t in listed.values()]
        + [t.description for t in listed.values() if t.name not in kernel.tools]
    )
    for http_word in ("X-Agent-ID", "Idempotency-Key", "/v1/requests", "202", "header"):
        assert http_word not in words, http_word


async def test_describe_tool_gives_the_full_description_examples_and_output_schema(kernel):
    async with Client(build_server(kernel).server) as client:
        keyed = await client.call_tool("describe_tool", {"name": "add_keyed"})
        free = await client.call_tool("describe_tool", {"name": "balance"})
        unknown = await client.call_tool("describe_tool", {"name": "no_such_tool"})
    body = keyed.structured_content
    assert keyed.is_error is False
    assert body["name"] == "add_keyed" and body["description"] == "add_keyed (job tests)" and body["mode"] == "job"
    assert body["examples"] == [{"title": "two and two", "arguments": {"a": 2, "b": 2}}]
    assert body["price"] == {"amount_usdc": "0.002000"} and body["rate_limit"] == "60 calls per 60 s"
    assert (
        "idempotency_key" in body["how_to_call"]
        and "job_status" in body["how_to_call"]
        and "refunded" in body["how_to_call"]
    )
    assert {"request_id", "status", "receipt_id", "job", "omitted", "hint"} <= set(body["output_schema"]["properties"])
    assert body["input_schema"]["properties"]["a"] == {"type": "integer"}
    assert free.structured_content["description"].endswith("Free.") and free.structured_content["examples"] == []
    assert unknown.is_error and unknown.structured_content["details"] == [{"field": "name", "message": "unknown tool"}]
    assert "add_keyed" in unknown.structured_content["message"]


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
    assert (
        receipt["payment_method"] == "credits"
        and receipt["amount_usdc"] == "0.002000"
        and receipt["memo"] == "mcp test"
    )
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
    assert await count_quotes(kernel) == 0 and await Receipt.count() == 0


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
    assert (
        accept["amount"] == "10000"
        and accept["network"] == "eip155:84532"
        and accept["extra"]["quoteId"].startswith("q_")
    )
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
            result = await client.call_tool(
                "add_numbers", {"a": 20, "b": 22, "wait_seconds": 30}, progress_callback=on_progress
            )
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


@pytest.mark.parametrize("mode", MODES)
async def test_a_capped_list_counts_what_is_returned_and_says_how_to_get_the_rest(kernel, mode):
    _, mcp = await paid_server(kernel, output_cap=4_000)
    async with Client(mcp.server, mode=mode) as client:
        page = await client.call_tool("paged_items", {"limit": 300, "offset": 20})
    body = page.structured_content
    kept = len(body["items"])
    assert 0 < kept < 300 and len(page.content[0].text.encode()) <= 4_000
    assert body["count"] == kept and body["has_more"] is True  # counts what is returned, not the 300 made
    assert body["truncated"] is True and body["omitted"] == {"items": 300 - kept}
    assert body["items"][0]["n"] == 20 and body["items"][-1]["n"] == 20 + kept - 1
    assert f"{300 - kept} item(s) were left out to fit the 4 KB output cap" in body["hint"]
    assert f"limit={kept} and offset={20 + kept}" in body["hint"] and "new paid call" in body["hint"]
    assert page.meta["tollway/truncated"] == {"dropped_items": 300 - kept, "omitted": {"items": 300 - kept}}


async def test_a_capped_list_without_paging_says_so(kernel):
    _, mcp = await paid_server(kernel, output_cap=4_000)
    async with Client(mcp.server) as client:
        big = await client.call_tool("many_items", {"count": 500})
    assert big.structured_content["omitted"] == {"items": 500 - len(big.structured_content["items"])}
    assert "no limit argument" in big.structured_content["hint"]


def test_cap_output_counts_nested_lists_once():
    value = {"routes": [{"stops": [{"s": "x" * 50}] * 40, "count": 40} for _ in range(10)], "count": 10}
    capped, dropped = cap_output(value, 3_000)
    assert len(json.dumps(capped, separators=(",", ":")).encode()) <= 3_000
    assert capped["count"] == len(capped["routes"])
    for route in capped["routes"]:
        assert route["count"] == len(route["stops"])
    # lists inside dropped items are not counted again
    assert all(p == "routes" or int(p.split("[")[1].split("]")[0]) < len(capped["routes"]) for p in capped["omitted"])
    assert dropped == sum(capped["omitted"].values())


# -- MCP words ------------------------------------------------------------------------------------
async def test_errors_speak_mcp_not_http(kernel):
    _, mcp = await paid_server(kernel, "0.05")
    async with Client(build_server(kernel).server) as anonymous:
        who = await anonymous.call_tool("balance", {})
    async with Client(mcp.server) as client:
        first = await client.call_tool("echo_keyed", {"text": "one", "idempotency_key": "k-words"})
        reused = await client.call_tool("echo_keyed", {"text": "two", "idempotency_key": "k-words"})
        bad_key = await client.call_tool("echo_keyed", {"text": "one", "idempotency_key": "ключ"})
    assert first.is_error is False
    assert (
        who.structured_content["error"] == "unauthorized" and "TOLLWAY_AGENT_KEY" in who.structured_content["message"]
    )
    assert reused.structured_content["error"] == "idempotency_key_reused"
    assert bad_key.structured_content["details"][0]["field"] == "idempotency_key"
    for result in (who, reused, bad_key):
        text = json.dumps(result.structured_content)
        assert "X-Agent-ID" not in text and "Idempotency-Key" not in text and "header" not in text, text
    assert (
        "idempotency_key" in reused.structured_content["message"]
        and "idempotency_key" in bad_key.structured_content["message"]
    )


async def test_a_required_idempotency_key_is_generated_and_given_back(kernel):
    _, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server) as client:
        first = await client.call_tool("add_keyed", {"a": 1})
        key = first.meta["tollway/idempotency_key"]
        again = await client.call_tool("add_keyed", {"a": 1, "idempotency_key": key})
        other = await client.call_tool("add_keyed", {"a": 1})
        balance = await client.call_tool("balance", {})
    assert first.is_error is False and key and first.structured_content["idempotency_key"] == key
    assert again.structured_content["request_id"] == first.structured_content["request_id"]  # answered once
    assert other.structured_content["request_id"] != first.structured_content["request_id"]
    assert other.meta["tollway/idempotency_key"] != key
    assert balance.structured_content["credits_balance"] == "0.046000"  # two charges of 0.002


async def test_a_replayed_failure_is_an_error_again(kernel):
    _, mcp = await paid_server(kernel, "0.05")
    async with Client(mcp.server) as client:
        first = await client.call_tool("fails_keyed", {"count": 1, "idempotency_key": "k-fail"})
        again = await client.call_tool("fails_keyed", {"count": 1, "idempotency_key": "k-fail"})
    assert first.is_error is True and again.is_error is True
    assert again.structured_content == first.structured_content
    assert again.structured_content["error"] == "provider_unavailable"


@pytest.mark.parametrize("mode", MODES)
async def test_job_messages_say_what_happened(kernel, mode):
    _, mcp = await paid_server(kernel, "0.05")
    worker = Worker(kernel, poll_s=0.05)
    worker.start()
    try:
        async with Client(mcp.server, mode=mode) as client:
            done = await client.call_tool("add_numbers", {"a": 1, "b": 2, "wait_seconds": 30})
            broken = await client.call_tool("broken_job", {"a": 1, "wait_seconds": 30})
            kept = await client.call_tool("broken_kept", {"a": 1, "wait_seconds": 30})
    finally:
        await worker.stop()
    async with Client(mcp.server, mode=mode) as client:  # no worker: the wait ends first
        waiting = await client.call_tool("add_numbers", {"a": 1, "wait_seconds": 1})
        accepted = await client.call_tool("add_numbers", {"a": 1})
    assert done.structured_content["status"] == "completed"
    assert done.structured_content["message"].endswith("completed; its result is in `job.result`.")
    assert "job_status" not in done.structured_content["message"]
    assert broken.structured_content["status"] == "failed" and "job_status" not in broken.structured_content["message"]
    assert "(provider_unavailable): the upstream is down" in broken.structured_content["message"]
    assert "refunded to your credits" in broken.structured_content["message"]
    assert "refunded" not in kept.structured_content["message"]
    assert waiting.structured_content["status"] == "pending"
    assert (
        "still pending after 1 s" in waiting.structured_content["message"]
        and "`job_status`" in waiting.structured_content["message"]
    )
    assert (
        "`job_status`" in accepted.structured_content["message"]
        and "wait_seconds" in accepted.structured_content["message"]
    )
    for result in (done, broken, waiting, accepted):
        assert "/v1/requests" not in result.structured_content["message"]


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
