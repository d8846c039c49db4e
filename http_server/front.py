"""The lean path of tool calls, in front of the Litestar app: a POST to a tool's own path is
answered straight from the ASGI scope (the body read, the kernel's call, the answer encoded
once by msgspec), byte for byte as the tool's Litestar route answers it; every other request,
and every tool call whose answer Litestar would shape otherwise, goes to Litestar unchanged."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import msgspec
from litestar.response.base import ASGIResponse
from litestar.routes import HTTPRoute
from litestar.serialization import get_serializer

from tollway._core.basics.errors import ServiceError
from tollway._http_server.hosts import asked_host
from tollway._http_server.translate import EXCEPTION_HANDLERS, JSON, answer_parts, call_request, error_headers

if TYPE_CHECKING:
    from litestar import Litestar
    from litestar.types import Message, Receive, Scope, Send

    from tollway._core.kernel import Kernel

_JSON_TYPE = (b"content-type", JSON.encode())
_ENC_HOOK = get_serializer(None)  # what Litestar renders a handler's error Response with (no type encoders set)
# a refusal's body as Litestar's `Response.render` writes it (`msgspec.json.encode` with that hook)
_encode_error = msgspec.json.Encoder(enc_hook=_ENC_HOOK).encode


class ToolFront:
    """The ASGI app `tollway serve` serves: tool calls on the lean path, the rest by `litestar`
    (its routes, lifespan and OpenAPI document are the app's own)."""

    def __init__(self, litestar: Litestar, kernel: Kernel, bound_hosts: frozenset[str]) -> None:
        self.litestar = litestar
        self.kernel = kernel
        self._bound_hosts = bound_hosts
        # path -> (tool name, largest body Litestar reads): tools without path fields, and none
        # in debug mode (Litestar logs every exception there)
        self._tools: dict[str, tuple[str, float]] = {}
        if litestar.debug:
            return
        posts = {
            route.path: handler
            for route in litestar.routes
            if isinstance(route, HTTPRoute)
            for handler in route.route_handlers
            if "POST" in handler.http_methods
        }
        for tool in kernel.tools.values():
            handler = posts.get(tool.path)
            if handler is not None and not tool.path_fields:
                self._tools[tool.path] = (tool.name, handler.resolve_request_max_body_size() or math.inf)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            tool = self._tools.get(scope["path"])
            if tool is not None and (headers := self._plain(scope, tool[1])) is not None:
                await self._call(tool[0], tool[1], headers, scope, receive, send)
                return
        await self.litestar(scope, receive, send)

    def _plain(self, scope: Scope, limit: float) -> dict[str, str] | None:
        """The request's headers as the kernel reads them (`call_request`'s), read in the one
        pass that tells whether Litestar would hand this request to the tool's handler as it
        is: no root path, a JSON body (or none said), one well-formed length within the
        limit, and not a host kept for routes of its own (hosts.py answers 404 there); None
        when it would not."""
        if scope.get("root_path"):
            return None
        headers: dict[str, str] = {}
        length = None
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()  # no latin-1 letter lower-cases to ASCII: as bytes.lower()
            headers[key] = value.decode("latin-1")
            if key == "content-type":
                if value.split(b";", 1)[0].strip().lower() != b"application/json":
                    return None
            elif key == "content-length":
                if length is not None or not value.isdigit() or int(value) > limit:
                    return None
                length = value
        if self._bound_hosts and asked_host(scope) in self._bound_hosts:
            return None
        return headers

    async def _call(
        self, tool: str, limit: float, headers: dict[str, str], scope: Scope, receive: Receive, send: Send
    ) -> None:
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or (size := size + len(message.get("body", b""))) > limit:
                # a disconnect, or a body over the limit: Litestar answers, the body read again
                await self.litestar(scope, _replay(messages, receive), send)
                return
            if not message.get("more_body", False):
                break
        body = messages[0].get("body", b"") if len(messages) == 1 else b"".join(m.get("body", b"") for m in messages)
        try:
            answer = await self.kernel.paid_calls.call(tool, call_request(scope, body, headers))
            status, answer_headers, encoded = answer_parts(answer)
            if status < 200 or status in (204, 304):  # no body allowed: as Litestar's ASGIResponse says
                await ASGIResponse(body=encoded, status_code=status, headers=answer_headers or None, media_type=JSON)(
                    scope, receive, send
                )
                return
            raw = _raw_headers(answer_headers, encoded)
        except ServiceError as exc:  # a refusal (a 402 quote among them): what service_error_handler answers
            encoded = _encode_error(exc.body())
            status, raw = exc.status, _raw_headers(error_headers(exc), encoded)
        except Exception as exc:
            response = _handler(exc)(None, exc)
            encoded = response.render(response.content, response.media_type or JSON, _ENC_HOOK)
            status, raw = response.status_code, _raw_headers(response.headers, encoded)
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": encoded, "more_body": False})


def _handler(exc: Exception) -> Any:
    """The app's exception handler for `exc`: that of its nearest class (as Litestar picks it)."""
    for cls in type(exc).__mro__:
        if cls in EXCEPTION_HANDLERS:
            return EXCEPTION_HANDLERS[cls]
    return EXCEPTION_HANDLERS[Exception]


def _raw_headers(headers: dict[str, str] | None, body: bytes) -> list[tuple[bytes, bytes]]:
    """The answer's headers as Litestar's ASGIResponse sends them: names lower-cased in order,
    then the content type and length unless given."""
    raw = [
        (_RAW_NAMES.get(name) or _raw_name(name), value.encode("latin-1")) for name, value in (headers or {}).items()
    ]
    names = {name for name, _ in raw}
    if b"content-type" not in names:
        raw.append(_JSON_TYPE)
    if b"content-length" not in names:
        raw.append((b"content-length", str(len(body)).encode()))
    return raw


_RAW_NAMES: dict[str, bytes] = {}  # a header name as sent: the few names the kernel answers with, kept


def _raw_name(name: str) -> bytes:
    """`name` lower-cased and encoded as Litestar sends it, remembered (the `RateLimit-*` names
    are on every answer) while few names are."""
    raw = name.lower().encode("latin-1")
    if len(_RAW_NAMES) < 64:
        _RAW_NAMES[name] = raw
    return raw


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` with `messages` (already received) first."""
    pending = list(messages)

    async def again() -> Message:
        return pending.pop(0) if pending else await receive()

    return again


__all__ = ["ToolFront"]
