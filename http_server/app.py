"""The HTTP routes: kernel routes are thin handlers; each tool's route is generated
from its `Tool`. runtime/service.py (`http_app`) assembles the app for `tollway serve`,
the tests and the benchmarks."""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

from litestar import Litestar, Request, Response, get, post
from litestar.exceptions import HTTPException
from litestar.handlers import HTTPRouteHandler
from litestar.logging import LoggingConfig
from litestar.openapi import OpenAPIConfig
from litestar.params import Parameter
from litestar.response.base import ASGIResponse
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin

from core.errors import ServiceError
from core.kernel import Kernel
from core.tool import Tool
from core.wire import DataSourceState, Health, ProviderState, ReceiptKeys
from mcp_server.http import streamable_http

from .openapi import WireSchemas, include_components, tool_operation_class
from .openapi_routes import kernel_operations
from .push import PushHub, make_subscribe_handler
from .translate import (
    answer_asgi,
    answer_response,
    http_exception_handler,
    json_response,
    service_error_handler,
    to_call_request,
    unexpected_error_handler,
)
from .hosts import bound_hosts, host_gate
from .plugin_routes import route_handlers
from .watch_routes import watch_handlers


def _tool_handler(kernel: Kernel, tool: Tool, schemas: WireSchemas) -> HTTPRouteHandler:
    async def handle(request: Request) -> ASGIResponse:
        return answer_asgi(await kernel.paid_calls.call(tool.name, await to_call_request(request)))

    handle.__name__ = f"tool_{tool.name}"
    # The tool's description is transport-neutral; how to pay, retry and wait is said here in HTTP terms.
    how = [f"Price: {'depends on the input' if tool.fixed_price is None else f'{tool.fixed_price / 1_000_000:.6f} USDC'} per call. Pay with `{tool.payment_header}` after the 402 quote, or from credits."]
    if tool.idempotency == "required":
        how.append("Send an `Idempotency-Key` header (required).")
    if tool.mode == "job":
        how.append("Answered 202 with a `request_id`: poll `GET /v1/requests/{request_id}` or subscribe at `/v1/requests/subscribe`.")
    return post(
        tool.path,
        operation_id=tool.name,
        summary=tool.title,
        description=f"{tool.description}\n\n{' '.join(how)}",
        tags=[f"tools: {tool.family}"],
        operation_class=tool_operation_class(tool, schemas),
        status_code=202 if tool.mode == "job" else 200,
    )(handle)


def _kernel_handlers(kernel: Kernel, schemas: WireSchemas) -> list[HTTPRouteHandler]:
    ops = kernel_operations(schemas)

    @get("/healthz", operation_id="healthz", tags=["service"], operation_class=ops["healthz"])
    async def healthz() -> Health:
        kinds = tuple(t.provider_kind for t in kernel.tools.values() if t.provider_kind)
        providers = [
            ProviderState(kind=p.kind, provider=p.provider, configured=p.configured, unset_settings=p.unset_settings, available=p.available)
            for p in kernel.providers.statuses(also=kinds)
        ]
        sources = []
        for d in sorted(kernel.data_sources.values(), key=lambda d: d.name):
            problem = d.health(kernel.context) if d.health is not None else None
            sources.append(DataSourceState(name=d.name, status="degraded" if problem else "ok", tools=list(d.tools), problem=problem))
        status = "degraded" if any(s.status != "ok" for s in sources) else "ok"
        return Health(status=status, tools=len(kernel.tools), network=kernel.network.caip2, providers=providers, data_sources=sources)

    async def limited(request: Request, category: str, read: Any) -> Response:
        """Run a kernel read counted against `category`; RateLimit-* headers on every answer."""
        req = await to_call_request(request)
        value, headers = await kernel.rate_gate.limited(category, req, lambda: read(req))
        return json_response(value, headers=headers)

    @get("/v1/balance", operation_id="balance", tags=["credits"], operation_class=ops["balance"])
    async def balance(request: Request) -> Response:
        return await limited(request, "free_read", kernel.accounts.balance)

    @post("/v1/credits/top-up", operation_id="credits_top_up", tags=["credits"], status_code=200, operation_class=ops["credits_top_up"])
    async def top_up(request: Request) -> Response:
        req = await to_call_request(request)
        return answer_response(await kernel.rate_gate.limited("paid", req, lambda: kernel.accounts.top_up(req)))

    @get("/v1/receipts/keys", operation_id="receipt_keys", tags=["receipts"], operation_class=ops["receipt_keys"])
    async def receipt_keys() -> ReceiptKeys:
        return await kernel.receipts.keys()

    @get("/v1/receipts/{receipt_id:str}", operation_id="receipt_get", tags=["receipts"], operation_class=ops["receipt_get"])
    async def receipt_get(request: Request, receipt_id: Annotated[str, Parameter()]) -> Response:
        return await limited(request, "free_read", lambda req: kernel.reads.receipt_for(req, receipt_id))

    @get("/v1/analytics/receipts", operation_id="analytics_receipts", tags=["analytics"], operation_class=ops["analytics_receipts"])
    async def analytics_receipts(request: Request) -> Response:
        return await limited(request, "free_read", kernel.reads.list_receipts)

    @get("/v1/analytics/spend/breakdown", operation_id="analytics_spend_breakdown", tags=["analytics"], operation_class=ops["analytics_spend_breakdown"])
    async def analytics_breakdown(request: Request) -> Response:
        return await limited(request, "free_read", kernel.reads.spend_breakdown)

    @get("/v1/requests/{request_id:str}", operation_id="job_status", tags=["jobs"], operation_class=ops["job_status"])
    async def job_status(request: Request, request_id: Annotated[str, Parameter()]) -> Response:
        return await limited(request, "free_read", lambda req: kernel.reads.job_status(req, request_id))

    @get("/v1/status/{request_id:str}", operation_id="job_status_alias", tags=["jobs"], operation_class=ops["job_status_alias"])
    async def job_status_alias(request: Request, request_id: Annotated[str, Parameter()]) -> Response:
        return await limited(request, "free_read", lambda req: kernel.reads.job_status(req, request_id))

    @get("/v1/tools/notifications", operation_id="notifications", tags=["notifications"], operation_class=ops["notifications"])
    async def list_notifications(request: Request) -> Response:
        return await limited(request, "free_read", kernel.reads.list_notifications)

    @post("/v1/auth/sign-in", operation_id="auth_sign_in", tags=["auth"], status_code=200, operation_class=ops["auth_sign_in"])
    async def sign_in(request: Request) -> Response:
        return await limited(request, "free_read", kernel.accounts.sign_in)

    @post("/v1/tools/internal/agents/register", operation_id="operator_register_agent", tags=["operator"], status_code=200, operation_class=ops["operator_register_agent"])
    async def register_agent(request: Request) -> Response:
        return json_response(await kernel.accounts.register_agent(await to_call_request(request)))

    @post("/v1/tools/internal/credits/grant", operation_id="operator_grant_credits", tags=["operator"], status_code=200, operation_class=ops["operator_grant_credits"])
    async def grant(request: Request) -> Response:
        return json_response(await kernel.accounts.grant_credits(await to_call_request(request)))

    @post("/v1/tools/internal/access-tokens", operation_id="operator_access_token", tags=["operator"], status_code=200, operation_class=ops["operator_access_token"])
    async def access_token(request: Request) -> Response:
        return json_response(await kernel.accounts.issue_access_token(await to_call_request(request)))

    @post("/v1/tools/internal/chain/fund", operation_id="operator_chain_fund", tags=["operator"], status_code=200, operation_class=ops["operator_chain_fund"])
    async def chain_fund(request: Request) -> Response:
        return json_response(await kernel.accounts.fund_chain_request(await to_call_request(request)))

    @post("/v1/tools/internal/watch-sources/{attribute:str}/poll", operation_id="operator_poll_watch_source", tags=["operator"], status_code=200, operation_class=ops["operator_poll_watch_source"])
    async def poll_watch_source(request: Request, attribute: Annotated[str, Parameter()]) -> Response:
        return json_response(await kernel.watch_polling.poll_request(await to_call_request(request), attribute))

    @get("/v1/tools/internal/pending", operation_id="operator_pending", tags=["operator"], operation_class=ops["operator_pending"])
    async def pending(request: Request) -> Response:
        return json_response(await kernel.accounts.pending_report(await to_call_request(request)))

    return [
        pending,
        poll_watch_source,
        job_status,
        job_status_alias,
        list_notifications,
        sign_in,
        healthz,
        balance,
        top_up,
        receipt_keys,
        receipt_get,
        analytics_receipts,
        analytics_breakdown,
        register_agent,
        grant,
        access_token,
        chain_fund,
    ]


def create_app(
    kernel: Kernel,
    *,
    on_startup: Sequence[Callable[[], Awaitable[None]]] = (),
    on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
    debug: bool = False,
    mcp_allowed_hosts: list[str] | None = None,
) -> Litestar:
    """The routes of `kernel` (its registries already collected) as a Litestar app;
    runtime/service.py assembles it with what runs beside it (`on_startup`, `on_shutdown`).

    MCP (Streamable HTTP) is mounted at /mcp; its session manager runs in the
    app's lifespan. `mcp_allowed_hosts` (default TOLLWAY_MCP_ALLOWED_HOSTS, else
    loopback only) is its DNS-rebinding allow-list of Host values.
    """
    tools = sorted(kernel.tools.values(), key=lambda t: t.path)
    hub = PushHub(kernel)
    mcp_endpoint, mcp_lifespan = streamable_http(kernel, allowed_hosts=mcp_allowed_hosts)
    schemas = WireSchemas(tools, kernel.routes.values())
    hosts = bound_hosts(kernel)  # routes served on a host of their own (Route.host)
    handlers = _kernel_handlers(kernel, schemas) + watch_handlers(kernel, schemas) + route_handlers(kernel, schemas, hosts) + [_tool_handler(kernel, t, schemas) for t in tools] + [make_subscribe_handler(kernel, hub), mcp_endpoint]

    async def start_hub() -> None:
        hub.start()

    async def stop_hub() -> None:
        hub.stop()

    openapi = OpenAPIConfig(
        title="Tollway",
        version="1.0.0",
        description="Paid tools for autonomous agents: x402 (USDC) or prepaid credits, Ed25519-signed receipts.",
        path="/schema",
        render_plugins=[JsonRenderPlugin(), SwaggerRenderPlugin()],
    )
    app = Litestar(
        route_handlers=handlers,
        openapi_config=openapi,
        exception_handlers={ServiceError: service_error_handler, HTTPException: http_exception_handler, Exception: unexpected_error_handler},
        on_startup=[*on_startup, start_hub],
        on_shutdown=[stop_hub, *on_shutdown],
        lifespan=[mcp_lifespan],
        middleware=[host_gate(frozenset(hosts.values()))] if hosts else [],
        debug=debug,
        # Per-request INFO lines (httpx logs every upstream call) cost more than the
        # lookup itself; the service logs warnings and its own tollway.* INFO lines.
        logging_config=LoggingConfig(
            root={"level": "WARNING", "handlers": ["queue_listener"]},
            loggers={"tollway": {"level": "INFO", "propagate": True}, "httpx": {"level": "WARNING", "propagate": True}},
            log_exceptions="debug",
        ),
    )
    include_components(app, schemas)
    return app
