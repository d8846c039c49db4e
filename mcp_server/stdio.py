"""`tollway mcp`: the MCP front over stdio for one agent (TOLLWAY_AGENT_KEY)."""
from __future__ import annotations

import os
import sys
from typing import Any

from .server import build_server, identity_from_key

AGENT_KEY_ENV = "TOLLWAY_AGENT_KEY"


async def serve_stdio(kernel: Any, *, workers: int = 0, agent_key: str | None = None) -> None:
    """Start the kernel, serve MCP on stdin/stdout until the client closes it, stop."""
    import anyio
    from mcp.server.stdio import stdio_server

    from runtime.worker import Worker

    from .guard import GuardedLines

    await kernel.start()
    running = []
    try:
        identity = identity_from_key(agent_key, kernel.network.chain_id)
        for _ in range(workers):  # job tools finish even when no `tollway serve` runs beside us
            worker = Worker(kernel)
            worker.start()
            running.append(worker)
        mcp = build_server(kernel, identity=identity)
        # stdin is read here, line by line, so a message nested too deeply is
        # answered with an error before the SDK decodes it (mcp_server/guard.py).
        lines = GuardedLines(anyio.wrap_file(sys.stdin.buffer))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.reply = write_stream.send
            await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())
    finally:
        for worker in running:
            await worker.stop()
        await kernel.stop()


def main(*, workers: int = 1) -> int:
    import anyio

    from runtime.service import build_kernel
    from runtime.settings import load_settings

    kernel = build_kernel(load_settings())
    for name, err in kernel.plugin_failures.items():
        print(f"tollway: plugin {name} skipped: {err}", file=sys.stderr)
    try:
        key = os.environ.get(AGENT_KEY_ENV)
        identity_from_key(key, 1)  # refuse a malformed key before touching stdio
    except ValueError as exc:
        print(f"tollway: {exc}", file=sys.stderr)
        return 2
    anyio.run(lambda: serve_stdio(kernel, workers=workers, agent_key=key))
    return 0
