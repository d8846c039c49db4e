"""The HTTP front renders exactly two declarations: each `Tool` (a paid call) and each
`Route` (the kernel's own and the plugins', plugin_routes.py), with their OpenAPI
operations, plus the push subscription; tool calls take the lean path of front.py in front
of them. runtime/service.py (`http_app`) assembles the app for `tollway serve`, the tests
and the benchmarks, mounting the MCP front beside it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from litestar import Litestar, Request, post
from litestar.handlers import HTTPRouteHandler
from litestar.logging import LoggingConfig
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.response.base import ASGIResponse

from tollway._core.basics.errors import invalid_request
from tollway._core.basics.request import CallRequest
from tollway._core.kernel import Kernel
from tollway._core.plugin_api.tool import Tool
from tollway._http_server.front import ToolFront
from tollway._http_server.hosts import bound_hosts, host_gate
from tollway._http_server.openapi import WireSchemas, include_components, tool_operation_class
from tollway._http_server.plugin_routes import litestar_path, route_handlers
from tollway._http_server.push import PushHub, make_subscribe_handler
from tollway._http_server.translate import EXCEPTION_HANDLERS, answer_asgi, to_call_request


def _with_path_fields(tool: Tool, call: CallRequest, params: dict[str, Any]) -> CallRequest:
    """The body with the path's fields put in (`/v1/tools/website/{site_id}/update`): a body
    that names one of them otherwise is refused; a body that is no JSON object is left for
    the kernel's own refusal."""
    try:
        body = json.loads(call.body or b"{}")
    except ValueError:
        return call
    if not isinstance(body, dict):
        return call
    clash = [f for f in tool.path_fields if f in body and body[f] != str(params[f])]
    if clash:
        raise invalid_request(
            "A field the path carries differs in the body.",
            [{"field": f, "message": "differs from the path's value; leave it out of the body"} for f in clash],
        )
    body.update({f: str(params[f]) for f in tool.path_fields})
    return dataclasses.replace(call, body=json.dumps(body).encode())


def _tool_handler(kernel: Kernel, tool: Tool, schemas: WireSchemas) -> HTTPRouteHandler:
    async def handle(request: Request) -> ASGIResponse:
        call = await to_call_request(request)
        if tool.path_fields:
            call = _with_path_fields(tool, call, request.path_params)
        return answer_asgi(await kernel.paid_calls.call(tool.name, call))

    handle.__name__ = f"tool_{tool.name}"
    # Evaluated annotations: Litestar resolves each handler's hints at registration, and
    # the string form (this module's `from __future__ import annotations`) costs a compile
    # per name per handler, paid again by every app built (each test's app, each reload).
    handle.__annotations__ = {"request": Request, "return": ASGIResponse}
    # The tool's description is transport-neutral; how to pay, retry and wait is said here in HTTP terms.
    how = [
        f"Price: {'depends on the input' if tool.fixed_price is None else f'{tool.fixed_price / 1_000_000:.6f} USDC'} per call. Pay with `{tool.payment_header}` after the 402 quote, or from credits."
    ]
    if tool.idempotency == "required":
        how.append("Send an `Idempotency-Key` header (required).")
    if tool.mode == "job":
        how.append(
            "Answered 202 with a `request_id`: poll `GET /v1/requests/{request_id}` or subscribe at `/v1/requests/subscribe`."
        )
    return post(
        litestar_path(tool.path),
        operation_id=tool.name,
        summary=tool.title,
        description=f"{tool.description}\n\n{' '.join(how)}",
        tags=[f"tools: {tool.family}"],
        operation_class=tool_operation_class(tool, schemas),
        status_code=202 if tool.mode == "job" else 200,
    )(handle)


def create_app(
    kernel: Kernel,
    *,
    on_startup: Sequence[Callable[[], Awaitable[None]]] = (),
    on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
    debug: bool = False,
    mounts: Sequence[Any] = (),
    lifespan: Sequence[Any] = (),
) -> ToolFront:
    """The routes of `kernel` (its registries already collected) as a Litestar app behind the
    lean path of tool calls (front.py; the Litestar app alone is its `litestar`);
    runtime/service.py assembles it with what runs beside it (`on_startup`, `on_shutdown`)
    and what else it serves: `mounts` (ASGI handlers, e.g. MCP over Streamable HTTP at
    /mcp) with the context managers of their `lifespan`.
    """
    tools = sorted(kernel.tools.values(), key=lambda t: t.path)
    hub = PushHub(kernel)
    schemas = WireSchemas(tools, kernel.routes.values())
    hosts = bound_hosts(kernel)  # routes served on a host of their own (Route.host)
    handlers = [
        *route_handlers(kernel, schemas, hosts),
        *(_tool_handler(kernel, t, schemas) for t in tools),
        make_subscribe_handler(kernel, hub),
        *mounts,
    ]

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
        exception_handlers=EXCEPTION_HANDLERS,
        on_startup=[*on_startup, start_hub],
        on_shutdown=[stop_hub, *on_shutdown],
        lifespan=list(lifespan),
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
    return ToolFront(app, kernel, frozenset(hosts.values()))
