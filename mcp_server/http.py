"""Streamable HTTP at /mcp inside the Litestar app: one session manager per app,
run in the app's lifespan, DNS-rebinding protection with configurable hosts."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from tollway._mcp_server.guard import guard_asgi
from tollway._mcp_server.server import McpSettings, build_server

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

MCP_PATH = "/mcp"


def streamable_http(
    kernel: Kernel, *, allowed_hosts: Sequence[str] | None = None, allowed_origins: Sequence[str] | None = None
) -> tuple[Any, Any]:
    """(Litestar mount handler for /mcp, lifespan context manager) for `kernel`.

    Who pays is each request's `Authorization: Bearer <access token>`.
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
        await guarded(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return mcp_endpoint, lifespan
