"""MCP messages nested too deeply are refused before the SDK decodes them: an ASGI
wrapper for /mcp and a line filter for stdio, each answering a JSON-RPC error."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.json_depth import MAX_JSON_DEPTH, json_too_deep, too_deep_error

# A tool's arguments object sits two levels down (in the message, in params): the
# message may nest that much more, and the kernel then holds the arguments
# themselves to MAX_JSON_DEPTH like any HTTP body.
MESSAGE_MAX_DEPTH = MAX_JSON_DEPTH + 2

MESSAGE_MAX_BYTES = 10_000_000  # as Litestar's request_max_body_size on every other route

_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')
_ID_SCAN_BYTES = 4096  # clients write "jsonrpc", "id", "method" before "params"


def request_id(raw: bytes) -> int | str | None:
    """The id of a refused message if it is written before anything nests, else None
    (JSON-RPC answers an unreadable request with a null id)."""
    head = raw[:_ID_SCAN_BYTES]
    first_nested = min((i for i in (head.find(b"[", 1), head.find(b"{", 1)) if i != -1), default=len(head))
    match = _ID.search(head, 0, first_nested)
    if match is None:
        return None
    text = match.group(1)
    if text.startswith(b'"'):
        try:
            return json.loads(text)
        except ValueError:
            return None
    return int(text)


def too_deep_reply(raw: bytes) -> types.JSONRPCError:
    """JSON-RPC `Invalid Request`, the service's error body in `data`."""
    return _reply(request_id(raw), too_deep_error(MESSAGE_MAX_DEPTH))


def _reply(rid: int | str | None, error: ServiceError) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=rid,
        error=types.ErrorData(code=types.INVALID_REQUEST, message=error.message, data=error.body()),
    )


# -- Streamable HTTP ------------------------------------------------------------------------
Receive = Callable[[], Awaitable[dict[str, Any]]]


class _TooLarge(Exception):
    pass


async def _read_body(receive: Receive) -> tuple[bytes, list[dict[str, Any]], bool]:
    """The whole request body, the messages it came in, and whether the client left;
    `_TooLarge` past MESSAGE_MAX_BYTES."""
    chunks: list[bytes] = []
    messages: list[dict[str, Any]] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] == "http.disconnect":
            return b"".join(chunks), messages, True
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MESSAGE_MAX_BYTES:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), messages, False


async def _send_error(send: Any, status: int, reply: types.JSONRPCError) -> None:
    payload = reply.model_dump_json(by_alias=True, exclude_unset=True).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


def guard_asgi(app: Callable[[Any, Receive, Any], Awaitable[None]]) -> Callable[[Any, Receive, Any], Awaitable[None]]:
    """Wrap the /mcp ASGI handler: a POST body nested deeper than MESSAGE_MAX_DEPTH
    gets 400 with a JSON-RPC error (one over MESSAGE_MAX_BYTES, 413); any other
    request reaches `app` unchanged (its body replayed from memory, then the
    client's own `receive`)."""

    async def guarded(scope: Any, receive: Receive, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        try:
            body, messages, gone = await _read_body(receive)
        except _TooLarge:
            error = ServiceError(
                413, "payload_too_large", f"An MCP message may be at most {MESSAGE_MAX_BYTES:,} bytes."
            )
            await _send_error(send, 413, _reply(None, error))
            return
        if not gone and json_too_deep(body, MESSAGE_MAX_DEPTH):
            await _send_error(send, 400, too_deep_reply(body))
            return
        replay = iter([{"type": "http.request", "body": body, "more_body": False}] if not gone else messages)

        async def replaying_receive() -> dict[str, Any]:
            for message in replay:
                return message
            return await receive()

        await app(scope, replaying_receive, send)

    return guarded


# -- stdio ------------------------------------------------------------------------------------------
class GuardedLines:
    """stdin for the SDK's stdio transport: the lines of `source` (bytes), each nested
    too deeply answered on `reply` (set once the transport is up) instead of passed on."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.reply: Callable[[SessionMessage], Awaitable[None]] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in self.source:
            line = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
            if json_too_deep(line, MESSAGE_MAX_DEPTH):
                if self.reply is not None:
                    await self.reply(SessionMessage(too_deep_reply(line)))
                continue
            yield line.decode("utf-8", "replace")


__all__ = ["MESSAGE_MAX_DEPTH", "GuardedLines", "guard_asgi", "request_id", "too_deep_reply"]
