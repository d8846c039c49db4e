"""HTTP <-> kernel translation: Litestar requests to `CallRequest`, kernel answers
and `ServiceError`s to responses with the error body of docs/api.md (and the x402
objects they carry as the base64 PAYMENT-REQUIRED / PAYMENT-RESPONSE headers)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, NotFoundException
from litestar.response.base import ASGIResponse
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.json_depth import check_json_depth
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.payments import x402

JSON = "application/json"


async def to_call_request(request: Request) -> CallRequest:
    """The kernel's request of a Litestar request (`call_request` of its scope and body)."""
    scope = request.scope
    body = await request.body() if scope["method"] in ("POST", "PUT", "PATCH", "DELETE") else b""
    return call_request(scope, body)


def call_request(scope: Any, body: bytes, headers: dict[str, str] | None = None) -> CallRequest:
    """The kernel's request, read straight off the ASGI scope (header names lower-cased:
    servers send them so, not every in-process transport does); `headers`, when given, are
    the scope's read so already (the lean front reads them while it looks at the request)."""
    check_json_depth(body)  # every route, before any decoder (docs/limits.md)
    if headers is None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
    raw_query = scope.get("query_string") or b""
    query = dict(parse_qsl(raw_query.decode("latin-1"), keep_blank_values=True)) if raw_query else {}
    client = scope.get("client")
    return CallRequest(
        method=scope["method"],
        path=scope["path"],
        url=_url(scope, headers, raw_query),
        headers=headers,
        body=body,
        query=query,
        client_ip=client[0] if client else None,
        raw_path=(scope.get("raw_path") or b"").decode("latin-1").split("?", 1)[0] or None,
    )


def _url(scope: Any, headers: dict[str, str], raw_query: bytes) -> str:
    """The absolute URL asked for: scheme, Host (else the server's address), root path, path, query."""
    host = headers.get("host")
    if host is None:
        server = scope.get("server")
        host = f"{server[0]}:{server[1]}" if server else "localhost"
    url = f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}{scope['path']}"
    return f"{url}?{raw_query.decode('latin-1')}" if raw_query else url


_encode = msgspec.json.Encoder().encode


def _with_x402(name: str, obj: dict[str, Any] | None, headers: dict[str, str]) -> dict[str, str]:
    """`headers`, after the x402 object `obj` as header `name` when there is one."""
    return {name: x402.encode_header(obj), **headers} if obj is not None else headers


def answer_response(answer: Answer) -> Response:
    headers = _with_x402(x402.PAYMENT_RESPONSE_HEADER, answer.settlement, answer.headers)
    return Response(content=answer.body, status_code=answer.status, headers=headers or None, media_type=JSON)


def answer_parts(answer: Answer) -> tuple[int, dict[str, str], bytes]:
    """A tool call's answer as status, headers and body, encoded once by msgspec."""
    headers = _with_x402(x402.PAYMENT_RESPONSE_HEADER, answer.settlement, answer.headers)
    return answer.status, headers, _encode(answer.body)


def answer_asgi(answer: Answer) -> ASGIResponse:
    """A tool call's answer sent as it is encoded: no Response to render on the hot path
    (same body and headers as `answer_response`)."""
    status, headers, body = answer_parts(answer)
    return ASGIResponse(body=body, status_code=status, headers=headers or None, media_type=JSON)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(content=body, status_code=status, headers=headers or None, media_type=JSON)


def error_headers(exc: ServiceError) -> dict[str, str]:
    """A refusal's headers: the x402 objects it carries (PAYMENT-REQUIRED, PAYMENT-RESPONSE)
    first, then its own."""
    headers = _with_x402(x402.PAYMENT_REQUIRED_HEADER, exc.payment_required, exc.headers)
    return _with_x402(x402.PAYMENT_RESPONSE_HEADER, exc.settlement, headers)


def service_error_handler(_: Request, exc: ServiceError) -> Response:
    return Response(content=exc.body(), status_code=exc.status, headers=error_headers(exc) or None, media_type=JSON)


_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}


def http_exception_handler(_: Request, exc: HTTPException) -> Response:
    status = exc.status_code
    code = _HTTP_CODES.get(status, "internal_error" if status >= 500 else "invalid_request")
    message = exc.detail if isinstance(exc, NotFoundException) or status < 500 else "Internal error"
    body: dict[str, Any] = {"error": code, "message": str(message)}
    extra = getattr(exc, "extra", None)
    if status == 400 and extra:
        body["details"] = extra
    return Response(content=body, status_code=status, headers=getattr(exc, "headers", None), media_type=JSON)


def unexpected_error_handler(_: Request, exc: Exception) -> Response:
    import logging

    logging.getLogger("tollway.http").exception("unhandled error", exc_info=exc)
    return Response(
        content={"error": "internal_error", "message": "Internal error"},
        status_code=HTTP_500_INTERNAL_SERVER_ERROR,
        media_type=JSON,
    )


# The app's exception handlers (the Litestar app's, and the lean tool-call path's, front.py).
EXCEPTION_HANDLERS: dict[type[Exception], Any] = {
    ServiceError: service_error_handler,
    HTTPException: http_exception_handler,
    Exception: unexpected_error_handler,
}
