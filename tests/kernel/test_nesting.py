"""JSON nested too deeply never takes a process down: a real `tollway serve` answers
400 `invalid_request` on its routes and on /mcp (and refuses deep credentials),
then goes on serving; `tollway mcp` on stdio answers a JSON-RPC error and goes on;
the depth scan itself is exact about strings and escapes."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.installed import with_test_plugins
from tests.support.serve_child import REPO, TOLLWAY, free_port, running_serve, serve_env
from tollway._core.basics.json_depth import MAX_JSON_DEPTH, RECURSION_LIMIT, json_depth, json_too_deep
from tollway._mcp_server.guard import MESSAGE_MAX_BYTES, MESSAGE_MAX_DEPTH, request_id

DEEP = b'{"word": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # ~200 KB, 100,001 levels
LOOKUP = "/v1/tools/test/lookup"  # tests/support/lookup_plugin.py, loaded by the children as an installed plugin
OPERATOR = {"Authorization": "Bearer test-operator-token"}


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


async def test_a_deep_body_is_refused_and_the_server_keeps_serving(tmp_path):
    async with running_serve(
        with_test_plugins(serve_env(tmp_path), tmp_path), free_port(), tmp_path / "serve.log"
    ) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=30.0) as client:
            tool = await client.post(LOOKUP, content=DEEP, headers={"content-type": "application/json"})
            operator = await client.post("/v1/tools/internal/agents/register", content=DEEP, headers=OPERATOR)
            mcp = await client.post(
                "/mcp",
                content=b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "arguments": '
                + DEEP
                + b"}}",
                headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
            )
            huge_mcp = await client.post(
                "/mcp",
                content=b" " * (MESSAGE_MAX_BYTES + 1),
                headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
            )
            deep_proof = base64.urlsafe_b64encode(nested(3000)).decode()
            proof = await client.get(
                "/v1/balance", headers={"X-Agent-ID": "0x" + "ab" * 20, "X-Agent-Proof": deep_proof[:4000]}
            )
            payment = await client.post(
                LOOKUP,
                json={"word": "ship"},
                headers={"payment-signature": base64.b64encode(nested(20_000)).decode()},
            )
            # just inside the limit is fine: the tool's own validation answers
            at_limit = await client.post(LOOKUP, content=b'{"word": ' + nested(MAX_JSON_DEPTH - 1) + b"}")
            health = await client.get("/healthz")
            quote = await client.post(LOOKUP, json={"word": "ship"})
        assert server.proc is not None and server.proc.returncode is None, server.output()
    for answer in (tool, operator):
        assert answer.status_code == 400, answer.text
        body = answer.json()
        assert body["error"] == "invalid_request" and str(MAX_JSON_DEPTH) in body["message"]
        assert body["details"] == [{"field": "$", "message": f"nested deeper than {MAX_JSON_DEPTH} levels"}]
    assert mcp.status_code == 400
    rpc = mcp.json()
    assert rpc["id"] == 7 and rpc["error"]["code"] == -32600
    assert rpc["error"]["data"]["error"] == "invalid_request" and str(MESSAGE_MAX_DEPTH) in rpc["error"]["message"]
    assert huge_mcp.status_code == 413 and huge_mcp.json()["error"]["data"]["error"] == "payload_too_large"
    assert proof.status_code == 200  # log-only read proofs: a malformed one is logged, the read goes on
    assert payment.status_code == 402 and payment.json()["error"] == "payment_verification_failed"
    assert at_limit.status_code == 400 and "nested" not in at_limit.text
    assert health.status_code == 200
    assert quote.status_code == 402 and quote.headers["PAYMENT-REQUIRED"]


async def test_stdio_answers_a_deep_message_with_an_error_and_goes_on(tmp_path):
    env = with_test_plugins(serve_env(tmp_path), tmp_path)
    proc = await asyncio.create_subprocess_exec(
        TOLLWAY,
        "mcp",
        "--workers",
        "0",
        env=env,
        cwd=str(REPO),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=1 << 20,
    )
    assert proc.stdin is not None and proc.stdout is not None

    async def send(message: bytes) -> None:
        proc.stdin.write(message + b"\n")
        await proc.stdin.drain()

    async def answer() -> dict:
        return json.loads(await asyncio.wait_for(proc.stdout.readline(), timeout=60))

    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode())
        initialized = await answer()
        await send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        await send(
            b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lookup_word", "arguments": '
            + DEEP
            + b"}}"
        )
        refused = await answer()
        # arguments one level past the limit: refused by the transport too, with the same rule as HTTP
        over = b'{"word": ' + nested(MAX_JSON_DEPTH) + b"}"
        await send(
            b'{"jsonrpc": "2.0", "id": "three", "method": "tools/call", "params": {"name": "lookup_word", "arguments": '
            + over
            + b"}}"
        )
        refused_over = await answer()
        await send(b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}')
        listed = await answer()
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    assert initialized["id"] == 1 and "result" in initialized
    assert refused["id"] == 2 and refused["error"]["code"] == -32600
    assert refused["error"]["data"]["error"] == "invalid_request"
    assert refused_over["id"] == "three" and refused_over["error"]["data"]["error"] == "invalid_request"
    assert listed["id"] == 4 and any(t["name"] == "lookup_word" for t in listed["result"]["tools"])
    assert proc.returncode == 0


def test_importing_the_service_leaves_the_recursion_limit_at_the_default():
    code = (
        "import sys; import runtime.cli, http_server, mcp_server.stdio, mcp_server.http, runtime.worker, core.kernel;"
        "import eth_account, py_ecc.bls; print(sys.getrecursionlimit())"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True, text=True, check=True).stdout
    assert int(out) == RECURSION_LIMIT


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"", 0),
        (b"1", 0),
        (b'"[[["', 0),
        (b"{}", 1),
        (b"[[], [[]]]", 3),
        (b'{"a": "]]]]", "b": [["[["]]}', 3),
        (b'{"a": "\\"[[", "b": [1]}', 2),
        (b'{"a": "\\\\", "b": [[1]]}', 3),
        (b'["\\\\\\"]]]", [[]]]', 3),
    ],
)
def test_depth_ignores_brackets_inside_strings(text, depth):
    assert json_depth(text) == depth
    assert json_depth(text.decode()) == depth


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n\u00e9'),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=4), inner, max_size=3)
    ),
    max_leaves=30,
)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_depth_of_any_json_matches_its_structure(value):
    text = json.dumps(value)
    assert json_depth(text) == _depth(value)
    assert json_too_deep(text, 2) == (_depth(value) > 2)


def test_the_request_id_of_a_refused_message():
    assert request_id(b'{"jsonrpc": "2.0", "id": 12, "params": ' + nested(10) + b"}") == 12
    assert request_id(b'{"id": "a\\"b", "params": []}') == 'a"b'
    assert request_id(b'{"params": {"id": 3}, "id": 4}') is None  # written after something nests: not looked for
    assert request_id(b"[[[[") is None
