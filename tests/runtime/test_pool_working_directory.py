"""A cpu-bound tool runs whatever folder the service was started from: started
from the folder above a checkout named `tollway` (the default clone name, and
where an MCP client may launch `tollway mcp`), the process-pool children import
exactly what the parent imported, not that folder as a namespace package
`tollway`. Real processes: `tollway serve` over HTTP and `tollway mcp` over stdio
through the official MCP client."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
from mcp import Client, StdioServerParameters

from tests.runtime.test_pool_children import ALLOCATION, funded_token, paid_cpu_job
from tests.support.serve_child import ServeProcess, free_port, serve_env


def checkout_parent(tmp_path: Path) -> Path:
    """A folder holding a checkout-like folder `tollway` (no `__init__.py`, as in a clone)."""
    parent = tmp_path / "src"
    for folder in ("tollway/core", "tollway/plugins/solve", "tollway/tollway_docs"):
        (parent / folder).mkdir(parents=True)
    (parent / "tollway" / "README.md").write_text("a checkout\n")
    return parent


async def test_a_solve_job_completes_under_serve_started_above_a_checkout(tmp_path):
    parent = checkout_parent(tmp_path)
    server = ServeProcess(serve_env(tmp_path), free_port(), tmp_path / "serve.log", cwd=parent)
    try:
        await server.start(timeout=300)  # a busy machine imports slowly
        async with httpx.AsyncClient(base_url=server.url, timeout=30.0) as client:
            await paid_cpu_job(client, await funded_token(client))
    finally:
        await server.stop()
    assert "ImportError" not in server.output()


async def test_a_solve_job_completes_under_tollway_mcp_launched_above_a_checkout(tmp_path):
    parent = checkout_parent(tmp_path)
    env = serve_env(tmp_path)
    server = ServeProcess(env, free_port(), tmp_path / "serve.log", "--workers", "0", cwd=parent)
    try:  # an agent with credits, made through the operator API, then the server stops
        await server.start(timeout=300)  # a busy machine imports slowly
        async with httpx.AsyncClient(base_url=server.url, timeout=30.0) as client:
            auth = await funded_token(client)
    finally:
        await server.stop()
    token = auth["Authorization"][len("Bearer ") :]
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "tollway"),
        args=["mcp"],
        env={**env, "TOLLWAY_AGENT_KEY": token},
        cwd=str(parent),
    )
    async with Client(params) as client:
        solved = await client.call_tool("solve", {**ALLOCATION, "wait_seconds": 60})
    assert solved.is_error is False, solved.structured_content
    job = solved.structured_content["job"]
    assert job["status"] == "completed", job
    assert job["result"]["status"] == "optimal", job["result"]
