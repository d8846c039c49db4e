"""`tollway mcp`: the MCP front over stdio for one agent (TOLLWAY_AGENT_KEY); the
process around it (kernel, workers) is assembled by runtime/service.py."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from tollway._mcp_server.server import Identity, build_server

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

AGENT_KEY_ENV = "TOLLWAY_AGENT_KEY"


async def serve_stdio(kernel: Kernel, *, identity: Identity | None, tools: frozenset[str] | None = None) -> None:
    """Serve MCP on stdin/stdout for the started `kernel` until the client closes it;
    `tools`: only these (`tollway mcp --tools`, mcp_server/selection.py)."""
    import anyio
    from mcp.server.stdio import stdio_server

    from tollway._mcp_server.guard import GuardedLines

    mcp = build_server(kernel, identity=identity, tools=tools)
    # stdin is read here, line by line, so a message nested too deeply is
    # answered with an error before the SDK decodes it (mcp_server/guard.py).
    lines = GuardedLines(anyio.wrap_file(sys.stdin.buffer))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.reply = write_stream.send
        await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
