"""The MCP front: every kernel tool as an MCP tool, on the SDK's low-level `Server`.

It translates `tools/call` to `Kernel.call` (a `CallRequest` like the HTTP
front's) and the answer or `ServiceError` back to a `CallToolResult`, nothing
more: prices, payments, receipts and jobs stay in the kernel.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from core import jobs
from core.auth_proof import make_agent_proof
from core.errors import ServiceError, invalid_request
from core.events import JOB_UPDATES
from core.money import usdc
from core.ratelimits import DEFAULT_LIMITS
from core.request import Answer, CallRequest

from .shaping import (
    BadPayment,
    cap_output,
    decode_b64_json,
    dumps,
    input_schema,
    output_schema,
    payment_header,
)

log = logging.getLogger("tollway.mcp")

PAYMENT_META = "x402/payment"
PAYMENT_RESPONSE_META = "x402/payment-response"
RECEIPT_META = "tollway/receipt_id"
REQUEST_META = "tollway/request_id"
PRICE_META = "tollway/price"
ERROR_META = "tollway/error"
TRUNCATED_META = "tollway/truncated"

DEFAULT_OUTPUT_CAP = 50_000  # bytes of JSON text
DEFAULT_MAX_WAIT_S = 60
SERVER_NAME = "tollway"

_PRIVATE_KEY = re.compile(r"^(0x)?[0-9a-fA-F]{64}$")


# -- who pays ------------------------------------------------------------------------
class Identity:
    """The headers that say who calls, for one request (method, path, body)."""

    def headers(self, *, method: str, path: str, body: bytes, scope: str) -> dict[str, str]:
        return {}


@dataclasses.dataclass(frozen=True)
class BearerIdentity(Identity):
    token: str

    def headers(self, *, method: str, path: str, body: bytes, scope: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}


@dataclasses.dataclass(frozen=True)
class WalletIdentity(Identity):
    """A wallet key: `X-Agent-ID` plus an agent proof signed over exactly this request."""

    account: Any
    chain_id: int

    def headers(self, *, method: str, path: str, body: bytes, scope: str) -> dict[str, str]:
        proof = make_agent_proof(
            self.account, chain_id=self.chain_id, scope=scope, method=method, path=path, body=body, now=int(time.time())
        )
        return {"x-agent-id": self.account.address, "x-agent-proof": proof}


def identity_from_key(key: str | None, chain_id: int) -> Identity | None:
    """`TOLLWAY_AGENT_KEY`: an access token (`tw_at_…`) or a wallet private key (hex)."""
    key = (key or "").strip()
    if not key:
        return None
    if key.startswith("tw_at_"):
        return BearerIdentity(key)
    if _PRIVATE_KEY.match(key):
        from eth_account import Account

        return WalletIdentity(Account.from_key(key if key.startswith("0x") else "0x" + key), chain_id)
    raise ValueError("TOLLWAY_AGENT_KEY must be an access token (tw_at_…) or a 0x wallet private key")


def _http_headers(request: Any) -> dict[str, str]:
    """Over HTTP only the client's bearer access token identifies it (clientInfo never does)."""
    auth = request.headers.get("authorization") or ""
    return {"authorization": auth} if auth[:7].lower() == "bearer " else {}


# -- settings ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class McpSettings:
    output_cap: int = DEFAULT_OUTPUT_CAP
    max_wait_s: int = DEFAULT_MAX_WAIT_S
    allowed_hosts: tuple[str, ...] = ("127.0.0.1:*", "localhost:*", "[::1]:*")
    allowed_origins: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> McpSettings:
        """TOLLWAY_MCP_OUTPUT_CAP (bytes), TOLLWAY_MCP_MAX_WAIT_SECONDS, TOLLWAY_MCP_ALLOWED_HOSTS and
        TOLLWAY_MCP_ALLOWED_ORIGINS (comma-separated; `host:*` allows any port)."""
        out = cls()
        if env.get("TOLLWAY_MCP_OUTPUT_CAP"):
            out = dataclasses.replace(out, output_cap=max(1024, int(env["TOLLWAY_MCP_OUTPUT_CAP"])))
        if env.get("TOLLWAY_MCP_MAX_WAIT_SECONDS"):
            out = dataclasses.replace(out, max_wait_s=max(0, int(env["TOLLWAY_MCP_MAX_WAIT_SECONDS"])))
        if env.get("TOLLWAY_MCP_ALLOWED_HOSTS"):
            out = dataclasses.replace(out, allowed_hosts=tuple(h.strip() for h in env["TOLLWAY_MCP_ALLOWED_HOSTS"].split(",") if h.strip()))
        if env.get("TOLLWAY_MCP_ALLOWED_ORIGINS"):
            out = dataclasses.replace(out, allowed_origins=tuple(h.strip() for h in env["TOLLWAY_MCP_ALLOWED_ORIGINS"].split(",") if h.strip()))
        return out


# -- free kernel reads as tools ---------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FreeTool:
    name: str
    title: str
    description: str
    path: Callable[[dict[str, Any]], str]
    read: Callable[[Any, CallRequest, dict[str, Any]], Awaitable[Any]]
    properties: dict[str, Any]
    required: tuple[str, ...] = ()
    query: bool = True  # arguments become the query string


_INT = {"type": "integer"}
_STR = {"type": "string"}
_PERIOD = {"type": "integer", "minimum": 1, "maximum": 365, "description": "days back"}

FREE_TOOLS: tuple[FreeTool, ...] = (
    FreeTool(
        "job_status",
        "Job status",
        "The Job resource of a job-mode call you made (status pending, processing, completed with `result`, or failed with error fields). Free.",
        lambda a: f"/v1/requests/{a['request_id']}",
        lambda k, req, a: k.job_status(req, a["request_id"]),
        {"request_id": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The request_id a job tool answered with."}},
        ("request_id",),
        query=False,
    ),
    FreeTool(
        "balance",
        "Balance",
        "Your prepaid credits and on-chain USDC balance. Free.",
        lambda a: "/v1/balance",
        lambda k, req, a: k.balance(req),
        {},
    ),
    FreeTool(
        "receipts",
        "Receipts",
        "Your signed receipts, newest first (filter by period, category, since/until; page with limit/offset). Free.",
        lambda a: "/v1/analytics/receipts",
        lambda k, req, a: k.list_receipts(req),
        {
            "period": _PERIOD,
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            "offset": {"type": "integer", "minimum": 0},
            "category": _STR,
            "since": {"type": "string", "description": "ISO 8601"},
            "until": {"type": "string", "description": "ISO 8601"},
        },
    ),
    FreeTool(
        "spend_breakdown",
        "Spend breakdown",
        "What you spent, by category and tool, over a period (default 30 days). Free.",
        lambda a: "/v1/analytics/spend/breakdown",
        lambda k, req, a: k.spend_breakdown(req),
        {"period": _PERIOD},
    ),
    FreeTool(
        "notifications",
        "Notifications",
        "Your notifications, newest first (listing marks them read). Free.",
        lambda a: "/v1/tools/notifications",
        lambda k, req, a: k.list_notifications(req),
        {"unread": {"type": "boolean"}, "limit": {"type": "integer", "minimum": 1}},
    ),
)


def _free_input_schema(ft: FreeTool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": ft.properties, "additionalProperties": False}
    if ft.required:
        schema["required"] = list(ft.required)
    return schema


def _check_free_args(ft: FreeTool, args: dict[str, Any]) -> None:
    """Shape checks the kernel cannot do for us (the arguments arrive typed, not as a query string)."""
    for name, value in args.items():
        prop = ft.properties.get(name)
        if prop is None:
            raise invalid_request(f"Unknown field {name}.", [{"field": name, "message": f"{name} is not an accepted field"}])
        kind = prop["type"]
        ok = (
            (kind == "integer" and isinstance(value, int) and not isinstance(value, bool))
            or (kind == "boolean" and isinstance(value, bool))
            or (kind == "string" and isinstance(value, str))
        )
        if not ok:
            raise invalid_request(f"{name} must be a{'n' if kind[0] in 'ai' else ''} {kind}.", [{"field": name, "message": f"expected {kind}"}])
    for name in ft.required:
        if name not in args or args[name] in ("", None):
            raise invalid_request(f"{name} is required.", [{"field": name, "message": "is required"}])


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- results ----------------------------------------------------------------------------------
def _text(value: Any) -> list[types.TextContent]:
    return [types.TextContent(type="text", text=dumps(value))]


def error_result(exc: ServiceError) -> types.CallToolResult:
    """402 as the x402 MCP convention (the PaymentRequired object, also as content[0].text);
    any other refusal as the error body of docs/api.md."""
    required = exc.headers.get("PAYMENT-REQUIRED") if exc.status == 402 else None
    if required:
        payment_required = decode_b64_json(required)
        return types.CallToolResult(
            content=_text(payment_required), structuredContent=payment_required, isError=True, _meta={ERROR_META: exc.body()}
        )
    body = exc.body()
    return types.CallToolResult(content=_text(body), structuredContent=body, isError=True, _meta={ERROR_META: {"status": exc.status}})


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for k, v in headers.items():
        if k.lower() == name.lower():
            return v
    return None


def price_meta(tool: Any, network: str) -> dict[str, Any]:
    fixed = tool.fixed_price
    out: dict[str, Any] = {"currency": "USDC", "network": network, "per": "call"}
    if fixed is None:
        out["amount_usdc"] = None
        out["depends_on_input"] = True
    else:
        out["amount_usdc"] = usdc(fixed)
        out["amount_atomic"] = str(fixed)
    return out


def _limit_text(category: str) -> str:
    limit, window = DEFAULT_LIMITS.get(category, (0, 60))
    return f"{limit} calls per {window} s" if limit else category


class TollwayMcp:
    """One MCP server over one kernel. `identity` fixes who pays (stdio, in-memory);
    without it each HTTP request's bearer token does."""

    def __init__(self, kernel: Any, *, identity: Identity | None = None, settings: McpSettings | None = None) -> None:
        self.kernel = kernel
        self.identity = identity
        self.settings = settings or McpSettings.from_env(kernel.config.plugin_env)
        self._inflight: set[asyncio.Task[Any]] = set()
        self._free = {ft.name: ft for ft in FREE_TOOLS}
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version="1.0.0",
            title="Tollway",
            instructions=(
                "Paid tools for agents. Each tool's price is in its description and in _meta['tollway/price']. "
                "Calls are paid from your credits when they cover the price; otherwise the result is an x402 "
                "PaymentRequired (isError) and you retry with _meta['x402/payment']. Receipts: _meta['tollway/receipt_id']."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- tools/list ---------------------------------------------------------------------
    def tool_list(self) -> list[types.Tool]:
        kernel = self.kernel
        clash = sorted(set(self._free) & set(kernel.tools))
        if clash:
            raise RuntimeError(f"tool names {clash} clash with the MCP front's free tools")
        network = kernel.network.caip2
        out: list[types.Tool] = []
        for tool in sorted(kernel.tools.values(), key=lambda t: t.name):
            price = "depends on the input" if tool.fixed_price is None else f"{usdc(tool.fixed_price)} USDC per call"
            limits = [f"rate limit {_limit_text(tool.rate_limit)}", f"results capped at {self.settings.output_cap // 1000} KB"]
            if tool.mode == "job":
                limits.append(f"runs as a job: answers a request_id at once; poll `job_status` or pass wait_seconds (≤ {self.settings.max_wait_s})")
            description = (
                f"{tool.description}\n\nPrice: {price}, paid from your credits or by x402 (USDC on {network}). "
                f"Limits: {'; '.join(limits)}."
            )
            out.append(
                types.Tool(
                    name=tool.name,
                    title=tool.title,
                    description=description,
                    inputSchema=input_schema(tool, max_wait_s=self.settings.max_wait_s),
                    outputSchema=output_schema(tool),
                    annotations=types.ToolAnnotations(
                        title=tool.title,
                        readOnlyHint=tool.rate_limit == "lookup",
                        destructiveHint=False,
                        idempotentHint=tool.idempotency == "required",
                        openWorldHint=not tool.cpu_bound,
                    ),
                    _meta={PRICE_META: price_meta(tool, network), "tollway/path": tool.path, "tollway/mode": tool.mode},
                )
            )
        for ft in FREE_TOOLS:
            out.append(
                types.Tool(
                    name=ft.name,
                    title=ft.title,
                    description=f"{ft.description} Rate limit {_limit_text('free_read')}.",
                    inputSchema=_free_input_schema(ft),
                    outputSchema={"type": "object"},
                    annotations=types.ToolAnnotations(
                        title=ft.title, readOnlyHint=ft.name != "notifications", destructiveHint=False, idempotentHint=True, openWorldHint=False
                    ),
                    _meta={PRICE_META: {"currency": "USDC", "amount_usdc": "0.000000", "per": "call"}},
                )
            )
        return out

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tool_list())

    # -- tools/call ---------------------------------------------------------------------
    def _who(self, ctx: Any, *, method: str, path: str, body: bytes, scope: str) -> tuple[dict[str, str], str, str | None]:
        """(identity headers, resource URL, client IP) for one kernel call."""
        request = getattr(ctx, "request", None)
        if request is not None and hasattr(request, "headers"):
            url = f"{request.url.scheme}://{request.url.netloc}{path}"
            ip = request.client.host if request.client else None
            headers = _http_headers(request)
        else:
            url, ip, headers = f"mcp://tollway{path}", None, {}
        if self.identity is not None and not headers:
            headers = self.identity.headers(method=method, path=path, body=body, scope=scope)
        return headers, url, ip

    async def _shielded(self, coro: Awaitable[Any]) -> Any:
        """Run the kernel's bookkeeping to the end even when the client cancels the call:
        a cancellation never leaves a charge without a receipt."""
        task = asyncio.ensure_future(coro)
        self._inflight.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._inflight.discard(t)
            if not t.cancelled() and t.exception() is not None and not isinstance(t.exception(), ServiceError):
                log.debug("kernel call ended with %r", t.exception())

        task.add_done_callback(done)
        return await asyncio.shield(task)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        args = dict(params.arguments or {})
        meta = dict(params.meta or {})
        try:
            if name in self._free:
                return await self._call_free(ctx, self._free[name], args)
            tool = self.kernel.tools.get(name)
            if tool is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
            return await self._call_paid(ctx, tool, args, meta)
        except ServiceError as exc:
            return error_result(exc)

    async def _call_free(self, ctx: Any, ft: FreeTool, args: dict[str, Any]) -> types.CallToolResult:
        _check_free_args(ft, args)
        path = ft.path(args)
        headers, url, ip = self._who(ctx, method="GET", path=path, body=b"", scope="read")
        query = {k: _query_value(v) for k, v in args.items()} if ft.query else {}
        req = CallRequest("GET", path, url, headers, b"", query=query, client_ip=ip)
        value, _headers = await self._shielded(self.kernel.limited("free_read", req, lambda: ft.read(self.kernel, req, args)))
        capped, dropped = cap_output(value, self.settings.output_cap)
        result_meta = {TRUNCATED_META: {"dropped_items": dropped}} if dropped else None
        return types.CallToolResult(content=_text(capped), structuredContent=capped, _meta=result_meta)

    async def _call_paid(self, ctx: Any, tool: Any, args: dict[str, Any], meta: dict[str, Any]) -> types.CallToolResult:
        wait_s = 0
        extra_headers: dict[str, str] = {}
        if tool.mode == "job" and "wait_seconds" in args:
            raw = args.pop("wait_seconds")
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
                raise invalid_request("wait_seconds must be a whole number of seconds, 0 or more.", [{"field": "wait_seconds", "message": "expected an integer >= 0"}])
            wait_s = min(raw, self.settings.max_wait_s)
        if tool.idempotency != "ignored" and "idempotency_key" in args:
            key = args.pop("idempotency_key")
            if not isinstance(key, str):
                raise invalid_request("idempotency_key must be a string.", [{"field": "idempotency_key", "message": "expected a string"}])
            extra_headers["idempotency-key"] = key
        body = dumps(args).encode()
        headers, url, ip = self._who(ctx, method="POST", path=tool.path, body=body, scope="write")
        headers = {**headers, **extra_headers}
        if meta.get(PAYMENT_META) is not None:
            try:
                headers["payment-signature"] = payment_header(meta[PAYMENT_META])
            except BadPayment as exc:
                raise ServiceError(
                    402, "payment_verification_failed", str(exc), {"reason": "invalid_payload"}
                ) from exc
        req = CallRequest("POST", tool.path, url, headers, body, client_ip=ip)
        answer: Answer = await self._shielded(self.kernel.call(tool.name, req))
        return await self._success(ctx, tool, answer, wait_s)

    async def _success(self, ctx: Any, tool: Any, answer: Answer, wait_s: int) -> types.CallToolResult:
        if answer.status == 202 or tool.mode == "job":
            structured = dict(answer.body)
            structured["message"] = (
                f"Accepted as job {structured['request_id']}. Call the `job_status` tool with this request_id for the result."
            )
            if wait_s > 0:
                job = await self._wait_for_job(ctx, structured["request_id"], wait_s)
                structured["status"] = job["status"]
                structured["job"] = job
        else:
            structured = dict(answer.body["data"]) if isinstance(answer.body, dict) and "data" in answer.body else dict(answer.body)
        result_meta: dict[str, Any] = {}
        if structured.get("receipt_id"):
            result_meta[RECEIPT_META] = structured["receipt_id"]
        if structured.get("request_id"):
            result_meta[REQUEST_META] = structured["request_id"]
        settle = _header(answer.headers, "PAYMENT-RESPONSE")
        if settle:
            result_meta[PAYMENT_RESPONSE_META] = decode_b64_json(settle)
        structured, dropped = cap_output(structured, self.settings.output_cap)
        if dropped:
            result_meta[TRUNCATED_META] = {"dropped_items": dropped}
        return types.CallToolResult(content=_text(structured), structuredContent=structured, _meta=result_meta)

    async def _wait_for_job(self, ctx: Any, request_id: str, wait_s: int) -> dict[str, Any]:
        """Wait (at most `wait_s`) for our own job; progress notifications as its status moves."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        changed = asyncio.Event()

        def on_update(payload: str) -> None:
            if payload.split(" ", 1)[0] == request_id:
                changed.set()

        unsubscribe = self.kernel.events.subscribe(JOB_UPDATES, on_update)
        steps = {"pending": 0, "processing": 1, "completed": 2, "failed": 2}
        last = None
        try:
            while True:
                changed.clear()
                row = await jobs.get(request_id)
                job = jobs.resource(row)
                if job["status"] != last:
                    last = job["status"]
                    with contextlib.suppress(Exception):  # a client that asked for no progress gets none
                        await ctx.session.report_progress(steps.get(last, 0), 2, f"job {request_id}: {last}")
                remaining = deadline - loop.time()
                if last in jobs.TERMINAL or remaining <= 0:
                    return job
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(changed.wait(), min(remaining, 0.5))
        finally:
            unsubscribe()


def build_server(kernel: Any, *, identity: Identity | None = None, settings: McpSettings | None = None) -> TollwayMcp:
    """The MCP server for `kernel` (already collected or started)."""
    return TollwayMcp(kernel, identity=identity, settings=settings)
