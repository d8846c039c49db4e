"""Streamable HTTP at /mcp inside the Litestar app: one session manager per app,
run in the app's lifespan, DNS-rebinding protection with configurable hosts."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from tollway._core.basics.errors import invalid_request
from tollway._mcp_server.guard import guard_asgi
from tollway._mcp_server.selection import UnknownTools
from tollway._mcp_server.server import McpSettings, TollwayMcp, build_server

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

MCP_PATH = "/mcp"


def streamable_http(
    kernel: Kernel, *, allowed_hosts: Sequence[str] | None = None, allowed_origins: Sequence[str] | None = None
) -> tuple[Any, Any]:
    """(Litestar mount handler for /mcp, lifespan context manager) for `kernel`.

    Who pays is each request's `Authorization: Bearer <access token>`; `?tools=a,b` serves
    only those tools and families (mcp_server/selection.py), an unknown one is a 400.
    """
    from litestar.handlers import asgi

    settings = McpSettings.from_env(kernel.config.plugin_env)
    hosts = list(allowed_hosts) if allowed_hosts is not None else list(settings.allowed_hosts)
    origins = list(allowed_origins) if allowed_origins is not None else list(settings.allowed_origins)
    mcp = build_server(kernel, settings=settings)
    manager = StreamableHTTPSessionManager(
        app=mcp.server,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        ),
    )

    guarded = guard_asgi(manager.handle_request)  # messages nested too deeply never reach the SDK

    @asgi(MCP_PATH, is_mount=True, copy_scope=True, include_in_schema=False)
    async def mcp_endpoint(scope: Any, receive: Any, send: Any) -> None:
        refusal = _selection_refusal(mcp, scope)
        if refusal is not None:
            await _send_json(send, 400, refusal)
            return
        await guarded(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return mcp_endpoint, lifespan


def _selection_refusal(mcp: TollwayMcp, scope: Any) -> dict[str, Any] | None:
    """The error body refusing the request's `?tools=`, or None when it has none or names known tools."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    if "tools" not in query:
        return None
    try:
        mcp.select(",".join(query["tools"]))
    except UnknownTools as exc:
        details = [{"field": "tools", "message": f"unknown tool or family: {name}"} for name in exc.unknown]
        return invalid_request(f"tools: {exc}.", details or [{"field": "tools", "message": "names no tool"}]).body()
    return None


async def _send_json(send: Any, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
