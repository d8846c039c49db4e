"""The MCP front: every `Tool` and every `Route` declared as one (`Route.mcp`) as an MCP
tool, plus its own `describe_tool`, on the SDK's low-level `Server`.

It translates `tools/call` to `kernel.paid_calls.call` or `kernel.route_runner.call` (a
`CallRequest` naming who calls and the payment as values, not HTTP headers) and the answer
or `ServiceError` back to a `CallToolResult`, nothing more: prices, payments, receipts and
jobs stay in the kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import mcp_types as types
import msgspec
from mcp.server import Server
from mcp.shared.exceptions import MCPError

from tollway._core.basics.errors import ServiceError, invalid_request
from tollway._core.basics.events import JOB_UPDATES
from tollway._core.basics.ids import new_id
from tollway._core.basics.money import AmountError, to_micro, usdc
from tollway._core.basics.request import Answer, CallRequest, Credential, HeldWallet, TokenCredential
from tollway._core.calls.ratelimits import DEFAULT_LIMITS
from tollway._core.jobs import jobs
from tollway._mcp_server.route_tools import (
    route_description,
    route_input_schema,
    route_output_schema,
    route_request,
    route_tool,
    route_value,
)
from tollway._mcp_server.selection import Selections, UnknownTools
from tollway._mcp_server.shaping import (
    BadPayment,
    cap_output,
    dumps,
    input_schema,
    output_schema,
    payment_value,
)
from tollway._mcp_server.wording import job_message, reword

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

log = logging.getLogger("tollway.mcp")

PAYMENT_META = "x402/payment"
PAYMENT_RESPONSE_META = "x402/payment-response"
RECEIPT_META = "tollway/receipt_id"
REQUEST_META = "tollway/request_id"
PRICE_META = "tollway/price"
ERROR_META = "tollway/error"
TRUNCATED_META = "tollway/truncated"
IDEMPOTENCY_META = "tollway/idempotency_key"

DEFAULT_OUTPUT_CAP = 50_000  # bytes of JSON text
DEFAULT_MAX_WAIT_S = 60
DEFAULT_MAX_PAYMENT = 1_000_000  # micro-USDC: 1.00 USDC
MAX_PAYMENT_SETTING = "TOLLWAY_MCP_MAX_PAYMENT_USDC"
SERVER_NAME = "tollway"
DESCRIBE = "describe_tool"

_PRIVATE_KEY = re.compile(r"^(0x)?[0-9a-fA-F]{64}$")


# -- who pays ------------------------------------------------------------------------
class Identity:
    """Who pays for every call of one MCP server (stdio, in memory)."""

    def credential(self) -> Credential | None:
        return None

    def sign_payment(self, network: Any, requirements: dict[str, Any]) -> dict[str, Any] | None:
        """The x402 payment object paying `requirements`, or None: this identity holds no key."""
        return None


@dataclasses.dataclass(frozen=True)
class BearerIdentity(Identity):
    token: str

    def credential(self) -> Credential | None:
        return TokenCredential(self.token)


@dataclasses.dataclass(frozen=True)
class WalletIdentity(Identity):
    """A wallet key this process holds: the kernel takes the wallet as proven (no signed proof needed)."""

    account: Any
    chain_id: int

    def credential(self) -> Credential | None:
        return HeldWallet(self.account.address)

    @property
    def address(self) -> str:
        return self.account.address

    def sign_payment(self, network: Any, requirements: dict[str, Any]) -> dict[str, Any] | None:
        """An EIP-3009 authorization for exactly `requirements` (x402 `exact`), as the payment object."""
        from tollway._core.payments.eip3009 import make_payment, sign_authorization

        now = int(time.time())
        valid_for = min(int(requirements.get("maxTimeoutSeconds") or 300), 3600)
        auth, signature = sign_authorization(
            self.account,
            network,
            to=requirements["payTo"],
            value=int(requirements["amount"]),
            valid_after=now - 60,
            valid_before=now + valid_for,
        )
        return make_payment(network, requirements, auth, signature)


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


def _http_credential(request: Any) -> Credential | None:
    """Over HTTP only the client's bearer access token identifies it (clientInfo never does)."""
    auth = request.headers.get("authorization") or ""
    return TokenCredential(auth[7:].strip()) if auth[:7].lower() == "bearer " else None


# -- settings ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class McpSettings:
    output_cap: int = DEFAULT_OUTPUT_CAP
    max_wait_s: int = DEFAULT_MAX_WAIT_S
    max_payment: int = DEFAULT_MAX_PAYMENT  # micro-USDC one x402 payment signed with TOLLWAY_AGENT_KEY may spend
    allowed_hosts: tuple[str, ...] = ("127.0.0.1:*", "localhost:*", "[::1]:*")
    allowed_origins: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> McpSettings:
        """TOLLWAY_MCP_OUTPUT_CAP (bytes), TOLLWAY_MCP_MAX_WAIT_SECONDS, TOLLWAY_MCP_MAX_PAYMENT_USDC,
        TOLLWAY_MCP_ALLOWED_HOSTS and TOLLWAY_MCP_ALLOWED_ORIGINS (comma-separated; `host:*` allows
        any port). A malformed value raises ValueError naming the setting."""

        def whole(name: str) -> int:
            try:
                return int(env[name])
            except ValueError:
                raise ValueError(f"{name} must be a whole number") from None

        out = cls()
        if env.get("TOLLWAY_MCP_OUTPUT_CAP"):
            out = dataclasses.replace(out, output_cap=max(1024, whole("TOLLWAY_MCP_OUTPUT_CAP")))
        if env.get("TOLLWAY_MCP_MAX_WAIT_SECONDS"):
            out = dataclasses.replace(out, max_wait_s=max(0, whole("TOLLWAY_MCP_MAX_WAIT_SECONDS")))
        if env.get(MAX_PAYMENT_SETTING):
            try:
                cap = to_micro(env[MAX_PAYMENT_SETTING])
            except AmountError:
                cap = -1
            if cap < 0:
                raise ValueError(f"{MAX_PAYMENT_SETTING} must be a USDC amount (0 or more, at most 6 decimals)")
            out = dataclasses.replace(out, max_payment=cap)
        if env.get("TOLLWAY_MCP_ALLOWED_HOSTS"):
            out = dataclasses.replace(
                out, allowed_hosts=tuple(h.strip() for h in env["TOLLWAY_MCP_ALLOWED_HOSTS"].split(",") if h.strip())
            )
        if env.get("TOLLWAY_MCP_ALLOWED_ORIGINS"):
            out = dataclasses.replace(
                out,
                allowed_origins=tuple(h.strip() for h in env["TOLLWAY_MCP_ALLOWED_ORIGINS"].split(",") if h.strip()),
            )
        return out


# -- describe_tool: the MCP front's own tool -----------------------------------------------
DESCRIBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 64, "description": "A tool name from tools/list."}
    },
    "additionalProperties": False,
    "required": ["name"],
}


def describe_tool() -> types.Tool:
    return types.Tool(
        name=DESCRIBE,
        title="Describe a tool",
        description="A tool's full description, price, limits, worked examples (arguments that validate) and output schema. Free.",
        inputSchema=DESCRIBE_SCHEMA,
        annotations=types.ToolAnnotations(
            readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
        ),
    )


def _describe_name(args: dict[str, Any]) -> str:
    """describe_tool's one argument, checked as its schema says (the SDK does not)."""
    for key, value in args.items():
        if key != "name":
            raise invalid_request(
                f"Unknown field {key}.", [{"field": key, "message": f"{key} is not an accepted field"}]
            )
        if not isinstance(value, str):
            raise invalid_request("name must be a string.", [{"field": "name", "message": "expected string"}])
    if not args.get("name"):
        raise invalid_request("name is required.", [{"field": "name", "message": "is required"}])
    return args["name"]


# -- results ----------------------------------------------------------------------------------
def _text(value: Any) -> list[types.TextContent]:
    return [types.TextContent(type="text", text=dumps(value))]


def error_result(exc: ServiceError) -> types.CallToolResult:
    """402 as the x402 MCP convention (the PaymentRequired object, also as content[0].text,
    with `x402/payment-response` in it when a settlement was refused);
    any other refusal as the error body of docs/api.md, worded in MCP terms."""
    payment_required = exc.payment_required if exc.status == 402 else None
    if payment_required:
        if exc.settlement is not None:  # a refused settlement, beside the fresh requirements (x402's MCP transport)
            payment_required = {**payment_required, PAYMENT_RESPONSE_META: exc.settlement}
        return types.CallToolResult(
            content=_text(payment_required),
            structuredContent=payment_required,
            isError=True,
            _meta={ERROR_META: exc.body()},
        )
    body = reword(exc).body()
    return types.CallToolResult(
        content=_text(body), structuredContent=body, isError=True, _meta={ERROR_META: {"status": exc.status}}
    )


def price_meta(tool: Any) -> dict[str, Any]:
    """`_meta["tollway/price"]`: the fixed price, or that the input decides it (currency
    and network are the server's, in its instructions)."""
    fixed = tool.fixed_price
    if fixed is None:
        return {"amount_usdc": None, "depends_on_input": True}
    return {"amount_usdc": usdc(fixed)}


def _limit_text(kernel: Kernel, category: str) -> str:
    limits = getattr(kernel.config, "rate_limits", None) or DEFAULT_LIMITS
    limit, window = limits.get(category, DEFAULT_LIMITS.get(category, (0, 60)))
    return f"{limit} calls per {window} s" if limit else category


def _price_text(tool: Any) -> str:
    return (
        "Price: depends on the input."
        if tool.fixed_price is None
        else f"Price: {usdc(tool.fixed_price)} USDC per call."
    )


def _has_paging(schema: dict[str, Any]) -> tuple[bool, bool]:
    props = schema.get("properties") or {}
    return "limit" in props, "offset" in props


class TollwayMcp:
    """One MCP server over one kernel. `identity` fixes who pays (stdio, in-memory);
    without it each HTTP request's bearer token does. `tools` (names from
    `selection.resolve`) fixes the tools it serves; without it an HTTP request's
    `?tools=` selects them, else every tool is served."""

    def __init__(
        self,
        kernel: Kernel,
        *,
        identity: Identity | None = None,
        settings: McpSettings | None = None,
        tools: frozenset[str] | None = None,
    ) -> None:
        self.kernel = kernel
        self.identity = identity
        self.tools = tools
        self.select = Selections(kernel)
        self.settings = settings or McpSettings.from_env(kernel.config.plugin_env)
        self._inflight: set[asyncio.Task[Any]] = set()
        tooled = [r for r in kernel.routes.values() if r.mcp_tool is not None]
        self._routes = {r.tool_name: r for r in tooled}
        if len(self._routes) != len(tooled):
            raise RuntimeError(f"two routes are the same MCP tool: {sorted(r.tool_name for r in tooled)}")
        self._schemas: dict[str, dict[str, Any]] = {}
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version="1.0.0",
            title="Tollway",
            instructions=self.instructions(),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def instructions(self) -> str:
        network = self.kernel.network.caip2
        paying = (
            f"Calls your credits cover are paid from them; otherwise this server pays by x402 (USDC on {network}) "
            f"with your wallet key, up to {usdc(self.settings.max_payment)} USDC a call ({MAX_PAYMENT_SETTING})."
            if self.identity is not None and isinstance(self.identity, WalletIdentity)
            else "Calls your credits cover are paid from them; otherwise the result is an x402 PaymentRequired "
            f"(isError; USDC on {network}): pay it by calling again with the signed payment in _meta['x402/payment']."
        )
        return (
            "Paid tools for agents. Each tool's description ends with its price. "
            f"{paying} Every paid call returns a signed receipt (_meta['tollway/receipt_id']; see `receipts`). "
            "Job tools answer a request_id at once: pass wait_seconds to wait for the result in the call, or call "
            "`job_status`. Tools that take an idempotency_key answer a retry with the same key and arguments once and "
            f"charge it once. Answers over {self.settings.output_cap // 1000} KB are shortened: `truncated`, `omitted` "
            "and `hint` say what was left out and how to get it. `describe_tool` gives any tool's full description, "
            f"worked examples and output schema. Free tools are limited to {_limit_text(self.kernel, 'free_read')}."
        )

    def input_schema(self, tool: Any) -> dict[str, Any]:
        """The tool's tools/list input schema (built once per tool and server)."""
        schema = self._schemas.get(tool.name)
        if schema is None:
            schema = self._schemas[tool.name] = input_schema(tool, max_wait_s=self.settings.max_wait_s)
        return schema

    # -- tools/list ---------------------------------------------------------------------
    def tool_list(self, selection: frozenset[str] | None = None) -> list[types.Tool]:
        """Compact: a sentence and the price per tool, its input schema (with an example when
        the input nests objects); full descriptions, every example and the output schemas
        come from `describe_tool`. With `selection`, only the tools it names."""
        kernel = self.kernel
        clash = sorted(({DESCRIBE} | set(self._routes)) & set(kernel.tools))
        if clash:
            raise RuntimeError(f"tool names {clash} clash with the MCP front's route tools")
        out: list[types.Tool] = []
        for tool in sorted(kernel.tools.values(), key=lambda t: t.name):
            if selection is not None and tool.name not in selection:
                continue
            description = f"{tool.short_description} {_price_text(tool)}"
            if tool.mode == "job":
                description += " Runs as a job."
            meta: dict[str, Any] = {PRICE_META: price_meta(tool)}
            if tool.mode == "job":
                meta["tollway/mode"] = "job"
            out.append(
                types.Tool(
                    name=tool.name,
                    title=tool.title,
                    description=description,
                    inputSchema=self.input_schema(tool),
                    annotations=types.ToolAnnotations(
                        readOnlyHint=True if tool.rate_limit == "lookup" else None,
                        destructiveHint=False,
                        idempotentHint=True if tool.idempotency == "required" else None,
                        openWorldHint=False if tool.cpu_bound else None,
                    ),
                    _meta=meta,
                )
            )
        out.extend(
            route_tool(r, kernel)
            for r in sorted(self._routes.values(), key=lambda r: r.tool_name)
            if selection is None or r.tool_name in selection
        )
        out.append(describe_tool())
        return out

    def selection(self, ctx: Any) -> frozenset[str] | None:
        """The tools this request may see: the server's own selection, else the HTTP
        request's `?tools=` (checked by the /mcp mount before it gets here), else all."""
        if self.tools is not None:
            return self.tools
        request = getattr(ctx, "request", None)
        query = getattr(request, "query_params", None)
        specs = query.getlist("tools") if query is not None else []
        if not specs:
            return None
        try:
            return self.select(",".join(specs))
        except UnknownTools as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=f"tools: {exc}") from None

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tool_list(self.selection(ctx)))

    def describe(self, name: str, selection: frozenset[str] | None = None) -> dict[str, Any]:
        """`describe_tool`: everything tools/list leaves out, in MCP terms (of the selected tools)."""
        if selection is not None and name not in selection:
            raise invalid_request(
                f"No tool {name!r}. Tools: {', '.join(sorted(selection))}.",
                [{"field": "name", "message": "unknown tool"}],
            )
        tool = self.kernel.tools.get(name)
        if tool is None and name in self._routes:
            r = self._routes[name]
            described: dict[str, Any] = {
                "name": name,
                "title": r.title,
                "description": route_description(r, self.kernel),
                "price": {"amount_usdc": "0.000000"},
                "rate_limit": _limit_text(self.kernel, r.rate_limit) if r.rate_limit else None,
                "input_schema": route_input_schema(r),
            }
            output = route_output_schema(r)
            if output is not None:
                described["output_schema"] = output
            return {**described, "examples": []}
        if tool is None and name == DESCRIBE:
            return {
                "name": DESCRIBE,
                "title": "Describe a tool",
                "description": describe_tool().description,
                "price": {"amount_usdc": "0.000000"},
                "rate_limit": _limit_text(self.kernel, "free_read"),
                "input_schema": DESCRIBE_SCHEMA,
                "examples": [],
            }
        if tool is None:
            names = sorted([*self.kernel.tools, *self._routes, DESCRIBE])
            raise invalid_request(
                f"No tool {name!r}. Tools: {', '.join(names)}.", [{"field": "name", "message": "unknown tool"}]
            )
        how = [_price_text(tool) + " Paid from your credits when they cover it, else by x402."]
        if tool.idempotency == "required":
            how.append(
                "Takes an idempotency_key (generated when you leave it out; the answer's _meta['tollway/idempotency_key'] gives it): "
                "a retry with the same key and arguments is answered once and charged once."
            )
        elif tool.idempotency == "optional":
            how.append(
                "Takes an optional idempotency_key: a retry with the same key and arguments is answered once and charged once."
            )
        if tool.mode == "job":
            refund = " A failed job is refunded to your credits." if tool.refund_failed_jobs else ""
            how.append(
                f"Runs as a job: the answer carries a request_id; pass wait_seconds (at most {self.settings.max_wait_s}) "
                f"to wait for the result in the call, or call `job_status`.{refund}"
            )
        how.append(
            f"Answers over {self.settings.output_cap // 1000} KB are shortened (`truncated`, `omitted`, `hint`)."
        )
        return {
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "how_to_call": " ".join(how),
            "price": price_meta(tool),
            "mode": tool.mode,
            "rate_limit": _limit_text(self.kernel, tool.rate_limit),
            "examples": [{"title": e.title, "arguments": dict(e.input)} for e in tool.examples],
            "input_schema": self.input_schema(tool),
            "output_schema": output_schema(tool),
        }

    # -- tools/call ---------------------------------------------------------------------
    def _who(self, ctx: Any, *, path: str) -> tuple[Credential | None, str, str | None]:
        """(who calls, resource URL, client IP) for one kernel call."""
        request = getattr(ctx, "request", None)
        credential: Credential | None
        if request is not None and hasattr(request, "headers"):
            url = f"{request.url.scheme}://{request.url.netloc}{path}"
            ip = request.client.host if request.client else None
            credential = _http_credential(request)
        else:
            url, ip, credential = f"mcp://tollway{path}", None, None
        if self.identity is not None and credential is None:
            credential = self.identity.credential()
        return credential, url, ip

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
        selection = self.selection(ctx)
        if selection is not None and name not in selection:  # as a tool that does not exist
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
        try:
            if name == DESCRIBE:  # the declarations, no kernel read
                return self._result(
                    self.describe(_describe_name(args), selection), {}, self._hint(DESCRIBE_SCHEMA, args, paid=False)
                )
            if name in self._routes:
                return await self._call_route(ctx, self._routes[name], args)
            tool = self.kernel.tools.get(name)
            if tool is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
            return await self._call_paid(ctx, tool, args, meta)
        except ServiceError as exc:
            return error_result(exc)

    async def _call_route(self, ctx: Any, r: Any, args: dict[str, Any]) -> types.CallToolResult:
        """A route, as its HTTP route runs it (same credential, rate limit and checks)."""
        req, params = route_request(r, args, lambda path: self._who(ctx, path=path))
        out = await self._shielded(self.kernel.route_runner.call(r, req, params))
        return self._result(route_value(r, out), {}, self._hint(route_input_schema(r), args, paid=False))

    def _result(self, value: Any, result_meta: dict[str, Any], hint: Any) -> types.CallToolResult:
        # the kernel answers wire Structs: rendered to plain JSON values here
        capped, dropped = cap_output(msgspec.to_builtins(value), self.settings.output_cap, hint)
        if dropped:
            result_meta[TRUNCATED_META] = {"dropped_items": dropped, "omitted": capped.get("omitted", {})}
        return types.CallToolResult(content=_text(capped), structuredContent=capped, _meta=result_meta or None)

    def _hint(self, schema: dict[str, Any], args: dict[str, Any], *, paid: bool) -> Any:
        """How to get what the output cap left out, for this tool and these arguments."""
        has_limit, has_offset = _has_paging(schema)
        cap_kb = self.settings.output_cap // 1000

        def hint(lists: dict[str, tuple[int, int]]) -> str:
            if not lists:
                return ""
            path, (kept, left) = max(lists.items(), key=lambda item: item[1][1])
            total = sum(n for _, n in lists.values())
            text = f"{total} item(s) were left out to fit the {cap_kb} KB output cap ({left} from `{path}`)."
            if has_limit:
                offset = int(args.get("offset") or 0)
                text += f" Call again with limit={max(1, kept)}"
                text += f" and offset={offset + kept} for the next ones." if has_offset else " for a smaller answer."
                if paid:
                    text += " That is a new paid call."
            else:
                text += " This tool has no limit argument: narrow the request to get the rest."
            return text

        return hint

    async def _call_paid(self, ctx: Any, tool: Any, args: dict[str, Any], meta: dict[str, Any]) -> types.CallToolResult:
        wait_s = 0
        extra_headers: dict[str, str] = {}
        call_args = dict(args)
        if tool.mode == "job" and "wait_seconds" in args:
            raw = args.pop("wait_seconds")
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
                raise invalid_request(
                    "wait_seconds must be a whole number of seconds, 0 or more.",
                    [{"field": "wait_seconds", "message": "expected an integer >= 0"}],
                )
            wait_s = min(raw, self.settings.max_wait_s)
        key: str | None = None
        generated = False
        if tool.idempotency != "ignored" and "idempotency_key" in args:
            key = args.pop("idempotency_key")
            if not isinstance(key, str):
                raise invalid_request(
                    "idempotency_key must be a string.", [{"field": "idempotency_key", "message": "expected a string"}]
                )
        elif tool.idempotency == "required":
            key, generated = new_id("mcp"), True  # the call goes through; the answer says which key to retry with
        if key is not None:
            extra_headers["idempotency-key"] = key
        body = dumps(args).encode()
        path = tool.path_for(args)
        credential, url, ip = self._who(ctx, path=path)
        payment = None
        if meta.get(PAYMENT_META) is not None:
            try:
                payment = payment_value(meta[PAYMENT_META])
            except BadPayment as exc:
                raise ServiceError(402, "payment_verification_failed", str(exc), {"reason": "invalid_payload"}) from exc
        req = CallRequest("POST", path, url, extra_headers, body, client_ip=ip, credential=credential, payment=payment)
        try:
            answer: Answer = await self._shielded(self.kernel.paid_calls.call(tool.name, req))
        except ServiceError as exc:
            if not self._pays_itself(exc, meta):
                raise
            answer = await self._pay_and_retry(tool, exc, body, extra_headers, url, ip)
        if answer.status >= 400:  # an idempotent replay of a call that failed
            raise ServiceError(
                answer.status,
                answer.body.get("error", "error"),
                answer.body.get("message", ""),
                answer.body.get("details"),
                extra={k: v for k, v in answer.body.items() if k not in ("error", "message", "details")},
            )
        return await self._success(
            ctx, tool, answer, wait_s, key, generated, self._hint(self.input_schema(tool), call_args, paid=True)
        )

    # -- paying with the wallet key --------------------------------------------------------
    def _pays_itself(self, exc: ServiceError, meta: dict[str, Any]) -> bool:
        """A 402 this server answers itself: the identity holds a wallet key and the caller
        sent no payment of its own."""
        return (
            exc.status == 402
            and exc.code == "payment_required"
            and exc.payment_required is not None
            and meta.get(PAYMENT_META) is None
            and isinstance(self.identity, WalletIdentity)
        )

    async def _pay_and_retry(
        self, tool: Any, quote: ServiceError, body: bytes, extra_headers: dict[str, str], url: str, ip: str | None
    ) -> Answer:
        """Sign what the 402 asks for with TOLLWAY_AGENT_KEY (within the per-call cap) and call again."""
        assert isinstance(self.identity, WalletIdentity)
        network = self.kernel.network
        required = quote.payment_required or {}
        accepts = [
            a for a in required.get("accepts", []) if a.get("scheme") == "exact" and a.get("network") == network.caip2
        ]
        if not accepts:
            raise quote
        requirements = accepts[0]
        amount = int(requirements["amount"])
        if amount > self.settings.max_payment:
            raise ServiceError(
                402,
                "payment_over_limit",
                f"This call costs {usdc(amount)} USDC, more than the {usdc(self.settings.max_payment)} USDC this server may pay "
                f"per call with your wallet ({MAX_PAYMENT_SETTING}). Nothing was paid. Raise {MAX_PAYMENT_SETTING}, add credits, "
                f"or pay it yourself with _meta['x402/payment'].",
                {
                    "price_usdc": usdc(amount),
                    "max_payment_usdc": usdc(self.settings.max_payment),
                    "setting": MAX_PAYMENT_SETTING,
                },
            )
        payment = self.identity.sign_payment(network, requirements)
        assert payment is not None
        # the kernel takes the payer from the signed authorization
        req = CallRequest(
            "POST",
            urlsplit(url).path,
            url,
            extra_headers,
            body,
            client_ip=ip,
            credential=self.identity.credential(),
            payment=payment,
        )
        try:
            return await self._shielded(self.kernel.paid_calls.call(tool.name, req))
        except ServiceError as exc:
            if exc.status == 402:
                reason = (exc.details or {}).get("reason") if isinstance(exc.details, dict) else None
                raise ServiceError(
                    402,
                    "payment_verification_failed",
                    f"Paying {usdc(amount)} USDC from your wallet {self.identity.address} failed: {exc.message}",
                    {"reason": reason or exc.code, "payer": self.identity.address, "amount_usdc": usdc(amount)},
                ) from exc
            raise

    async def _success(
        self, ctx: Any, tool: Any, answer: Answer, wait_s: int, key: str | None, generated: bool, hint: Any
    ) -> types.CallToolResult:
        result_meta: dict[str, Any] = {}
        body = msgspec.to_builtins(answer.body)
        if answer.status == 202 or tool.mode == "job":
            structured = dict(body)
            job = await self._wait_for_job(ctx, structured["request_id"], wait_s) if wait_s > 0 else None
            if job is not None:
                structured["status"] = job["status"]
                structured["job"] = job
            if generated:  # the key to retry with, which the caller did not choose
                structured["idempotency_key"] = key
            structured["message"] = job_message(
                structured["request_id"],
                structured["status"],
                waited_s=wait_s,
                job=job,
                refunds=tool.refund_failed_jobs,
            )
        else:
            structured = dict(body["data"]) if isinstance(body, dict) and "data" in body else dict(body)
        if structured.get("receipt_id"):
            result_meta[RECEIPT_META] = structured["receipt_id"]
        if structured.get("request_id"):
            result_meta[REQUEST_META] = structured["request_id"]
        if key is not None:
            result_meta[IDEMPOTENCY_META] = key
        if answer.settlement:
            result_meta[PAYMENT_RESPONSE_META] = answer.settlement
        return self._result(structured, result_meta, hint)

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
                job = msgspec.to_builtins(jobs.resource(row))
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


def build_server(
    kernel: Kernel,
    *,
    identity: Identity | None = None,
    settings: McpSettings | None = None,
    tools: frozenset[str] | None = None,
) -> TollwayMcp:
    """The MCP server for `kernel` (already collected or started); `tools`: only these
    (`selection.resolve`)."""
    return TollwayMcp(kernel, identity=identity, settings=settings, tools=tools)
