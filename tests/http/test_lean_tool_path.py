"""The lean path of tool calls (http_server/front.py) answers byte for byte as the tools'
Litestar routes do. Each request below is sent through the Litestar app alone and then
through the front, and the ASGI messages each sends back are compared exactly (status,
every header in its order, the body), with the kernel request each path handed the kernel.
The kernel's call runs for real once (through Litestar) and the front's call gets the
same outcome again, so request ids, times and rate-limit counts agree; requests refused
before the kernel run for real on both paths. Each case also says which path served it:
the front itself, or Litestar behind it."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from eth_account import Account

from tests.kernel.test_route_hosts import Hosted
from tests.support.jobs_plugin import JobsPlugin
from tests.support.lookup_plugin import LookupPlugin, word_list_transport
from tollway import Tool, ToolContext, hookimpl
from tollway.testing import OPERATOR, credits_session, http_client, pay_402

LOOKUP = "/v1/tools/test/lookup"
OWN_HOST = "own.example.test"


class Poke(msgspec.Struct, forbid_unknown_fields=True):
    thing_id: str


async def poke(value: Poke, ctx: ToolContext) -> Poke:
    return value


class Things:
    """A tool with a path field: Litestar parses the path there."""

    @hookimpl
    def register_tools(self, register):
        register(
            Tool(
                name="thing_poke",
                path="/v1/tools/things/{thing_id}/poke",
                title="Poke",
                description="Pokes.",
                category="data",
                input_type=Poke,
                output_type=Poke,
                run=poke,
                price="0.001",
                family="things",
            )
        )


class Twin:
    """`kernel.paid_calls` for the comparison: the real call on the first path, its outcome
    (answer or exception) again on the second; `inject` is raised by both instead."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.seen: list[tuple[str, Any]] = []
        self.outcome: tuple[str, Any] | None = None
        self.replaying = False
        self.inject: Exception | None = None

    async def call(self, tool: str, req: Any) -> Any:
        self.seen.append((tool, req))
        if self.inject is not None:
            raise self.inject
        if self.replaying:
            assert self.outcome is not None
            kind, value = self.outcome
            if kind == "raise":
                raise value
            return value
        try:
            answer = await self.real.call(tool, req)
        except Exception as exc:
            self.outcome = ("raise", exc)
            raise
        self.outcome = ("answer", answer)
        return answer


async def asgi(
    app: Any,
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    chunks: list[bytes],
    query: bytes = b"",
    disconnect: bool = False,
) -> list[dict[str, Any]]:
    """The messages `app` sends for one request, as uvicorn would hand it over."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers
        if any(name == b"host" for name, _ in headers)
        else [(b"host", b"api.example.test"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    pending: list[dict[str, Any]] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1} for i, chunk in enumerate(chunks)
    ]
    if disconnect:
        pending[-1]["more_body"] = True
        pending.append({"type": "http.disconnect"})
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0)
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def status_of(messages: list[dict[str, Any]]) -> int:
    return messages[0]["status"]


def header(messages: list[dict[str, Any]], name: bytes) -> bytes | None:
    return dict(messages[0]["headers"]).get(name)


def body_of(messages: list[dict[str, Any]]) -> Any:
    return msgspec.json.decode(b"".join(m.get("body", b"") for m in messages[1:]))


@pytest.fixture
async def harness(kernel_factory, monkeypatch):
    from tollway._runtime.service import http_app

    kernel = await kernel_factory(
        plugins=[("jobs", JobsPlugin()), ("lookup", LookupPlugin()), ("things", Things()), ("hosted", Hosted())],
        transport=word_list_transport(),
        env={"TOLLWAY_HOSTED_OWN_URL": f"https://{OWN_HOST}"},
    )
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "5")
        payer = Account.create()
        funded = await client.post(
            "/v1/tools/internal/chain/fund", json={"address": payer.address, "amount": "5"}, headers=OPERATOR
        )
        assert funded.status_code == 200, funded.text
    front = http_app(kernel, manage_kernel=False)
    litestar = front.litestar
    fell: list[str] = []

    async def behind(scope: Any, receive: Any, send: Any) -> None:
        fell.append(scope["path"])
        await litestar(scope, receive, send)

    front.litestar = behind
    twin = Twin(kernel.paid_calls)
    monkeypatch.setattr(kernel, "paid_calls", twin)

    async def compare(
        method: str,
        path: str,
        headers: dict[str, str] | None = None,
        chunks: list[bytes] | None = None,
        *,
        lean: bool,
        **options: Any,
    ) -> list[dict[str, Any]]:
        raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        chunks = [b""] if chunks is None else chunks
        seen, fell_before = len(twin.seen), len(fell)
        twin.replaying = False
        alone = await asgi(litestar, method, path, raw, chunks, **options)
        asked = twin.seen[seen:]
        twin.replaying = True
        fronted = await asgi(front, method, path, raw, chunks, **options)
        assert fronted == alone
        assert twin.seen[seen + len(asked) :] == asked  # the same kernel request, or none on both paths
        assert (len(fell) == fell_before) is lean, "served by the front" if lean else "served by Litestar"
        return alone

    return compare, auth, payer, twin


JSON = {"content-type": "application/json"}


async def test_paid_calls_and_their_refusals_are_answered_identically(harness) -> None:
    compare, auth, payer, twin = harness
    ship = msgspec.json.encode({"word": "ship"})

    paid = await compare("POST", LOOKUP, {**JSON, **auth}, [ship], lean=True)
    assert status_of(paid) == 200 and body_of(paid)["data"]["receipt_id"]
    assert header(paid, b"ratelimit-remaining") is not None

    quote = await compare("POST", LOOKUP, JSON, [ship], lean=True)
    assert status_of(quote) == 402 and header(quote, b"payment-required")
    payment = pay_402(payer, header(quote, b"payment-required").decode())
    x402 = {**JSON, "payment-signature": payment, "x-quote-id": body_of(quote)["quote_id"]}
    settled = await compare("POST", LOOKUP, x402, [ship], lean=True)
    assert status_of(settled) == 200 and header(settled, b"payment-response")

    fields = msgspec.json.encode({"word": "", "limit": 0, "colour": "red"})
    invalid = await compare("POST", LOOKUP, {**JSON, **auth}, [fields], lean=True)
    assert status_of(invalid) == 400 and {d["field"] for d in body_of(invalid)["details"]} >= {"word", "limit"}
    malformed = await compare("POST", LOOKUP, {**JSON, **auth}, [b"{nope"], lean=True)
    assert status_of(malformed) == 400 and body_of(malformed)["error"] == "invalid_request"
    asked = len(twin.seen)
    too_deep = await compare("POST", LOOKUP, JSON, [b"[" * 70 + b"]" * 70], lean=True)
    assert status_of(too_deep) == 400 and body_of(too_deep)["details"] and len(twin.seen) == asked  # refused first

    # the body in pieces, no length said; a charset; no content type at all; a query string
    pieces = await compare("POST", LOOKUP, auth, [b'{"wo', b'rd": "sh', b'ip"}'], lean=True)
    assert status_of(pieces) == 200
    charset = await compare(
        "POST", LOOKUP, {"content-type": "Application/JSON; charset=utf-8", **auth}, [ship], lean=True
    )
    assert status_of(charset) == 200
    queried = await compare("POST", LOOKUP, {**JSON, **auth}, [ship], query=b"a=1&b=", lean=True)
    assert status_of(queried) == 200

    twin.inject = RuntimeError("the kernel broke")
    broken = await compare("POST", LOOKUP, {**JSON, **auth}, [ship], lean=True)
    twin.inject = None
    assert status_of(broken) == 500 and body_of(broken) == {"error": "internal_error", "message": "Internal error"}


async def test_jobs_and_idempotency_are_answered_identically(harness) -> None:
    compare, auth, _, _ = harness
    two = msgspec.json.encode({"a": 2, "b": 2})
    job = await compare("POST", "/v1/tools/test/add-numbers", {**JSON, **auth}, [two], lean=True)
    assert status_of(job) == 202 and body_of(job)["request_id"]

    keyed = {**JSON, **auth, "idempotency-key": "lean-path-1"}
    first = await compare("POST", "/v1/tools/test/add-keyed", keyed, [two], lean=True)
    replay = await compare("POST", "/v1/tools/test/add-keyed", keyed, [two], lean=True)
    assert status_of(first) == status_of(replay) == 202
    assert body_of(replay)["request_id"] == body_of(first)["request_id"]
    other = await compare("POST", "/v1/tools/test/add-keyed", keyed, [b'{"a": 3}'], lean=True)
    assert status_of(other) == 422
    missing = await compare("POST", "/v1/tools/test/add-keyed", {**JSON, **auth}, [two], lean=True)
    assert status_of(missing) == 400


async def test_what_the_front_leaves_to_litestar_is_answered_by_litestar(harness) -> None:
    compare, auth, _, _ = harness
    ship = msgspec.json.encode({"word": "ship"})

    announced = await compare("POST", LOOKUP, {**JSON, "content-length": "10000001"}, [b""], lean=False)
    assert status_of(announced) == 413
    streamed = await compare("POST", LOOKUP, JSON, [b" " * 1_000_000] * 11, lean=False)  # read, then handed on
    assert status_of(streamed) == 413 and body_of(streamed)["error"] == "payload_too_large"
    garbled = await compare("POST", LOOKUP, {**JSON, "content-length": "12x"}, [ship], lean=False)
    assert status_of(garbled) == 400
    form = await compare(
        "POST", LOOKUP, {"content-type": "application/x-www-form-urlencoded", **auth}, [ship], lean=False
    )
    assert status_of(form) == 200
    gone = await compare("POST", LOOKUP, JSON, [b'{"wo'], disconnect=True, lean=False)
    assert status_of(gone) == 500

    unknown = await compare("POST", "/v1/tools/test/no-such-tool", JSON, [ship], lean=False)
    assert status_of(unknown) == 404
    for method in ("GET", "PUT", "DELETE"):
        assert status_of(await compare(method, LOOKUP, auth, lean=False)) == 405
    assert status_of(await compare("HEAD", LOOKUP, lean=False)) == 405
    preflight = {"origin": "https://agent.example", "access-control-request-method": "POST"}
    assert status_of(await compare("OPTIONS", LOOKUP, preflight, lean=False)) == 204
    slash = await compare("POST", LOOKUP + "/", {**JSON, **auth}, [ship], lean=False)
    assert status_of(slash) == 200

    path_field = await compare("POST", "/v1/tools/things/th_1/poke", {**JSON, **auth}, [b"{}"], lean=False)
    assert status_of(path_field) == 200 and body_of(path_field)["data"]["thing_id"] == "th_1"
    own_host = await compare("POST", LOOKUP, {**JSON, **auth, "host": OWN_HOST}, [ship], lean=False)
    assert status_of(own_host) == 404

    schema = await compare("GET", "/schema/openapi.json", lean=False)
    assert status_of(schema) == 200 and LOOKUP in body_of(schema)["paths"]


async def test_the_openapi_document_is_the_litestar_apps(kernel_factory) -> None:
    from tollway._runtime.service import http_app

    kernel = await kernel_factory(plugins=[("jobs", JobsPlugin()), ("lookup", LookupPlugin())])
    front = http_app(kernel, manage_kernel=False)
    alone = await asgi(front.litestar, "GET", "/schema/openapi.json", [], [b""])
    served = await asgi(front, "GET", "/schema/openapi.json", [], [b""])
    assert served == alone and status_of(alone) == 200
    document = body_of(served)
    assert {"/v1/tools/test/lookup", "/v1/tools/test/add-numbers"} <= set(document["paths"])
    assert front.litestar.openapi_schema.to_schema() == document
