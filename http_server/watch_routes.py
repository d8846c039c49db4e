"""The watch routes (create, list, change, delete; free, counted as `free_read`) and
their OpenAPI operations: thin handlers over `kernel.watches` (core/watches/resource.py)."""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from litestar import Request, Response, delete, get, patch, post
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import Operation
from litestar.params import Parameter

from core import wire
from core.request import Answer, CallRequest

from .openapi import PRIVATE_SECURITY, RATE_HEADERS, WireSchemas, json_body, operation_class, path_param
from .translate import answer_response, json_response, to_call_request

PATH = "/v1/tools/watch"
TAGS = ["watches"]
# Changing watches: a write proof, or an access token from signing in (not an operator-issued one).
WRITE_SECURITY: list[dict[str, list[str]]] = [{"agentId": [], "agentProof": []}, {"accessToken": []}]
_WATCH_ID = path_param("watch_id", "The watch's id (UUID).")
_LIMIT_TEXT = "The agent already holds 100 watches that are not deleted (`watch_limit_reached`)."


def watch_operations(schemas: WireSchemas) -> dict[str, type[Operation]]:
    def ok(type_: Any, description: str, status: str = "200") -> dict[str, Any]:
        return {status: {"description": description, "headers": dict(RATE_HEADERS), "content": schemas.json(type_)}}

    def refused(*statuses: int) -> dict[str, Any]:
        return schemas.refusals(statuses, rate_limited=True)

    over_limit = {"409": {"description": _LIMIT_TEXT, "headers": dict(RATE_HEADERS), "content": schemas.json(wire.ErrorBody)}}
    return {
        "watch_create": operation_class(
            "watch_create",
            request_body=json_body(schemas, wire.WatchCreateRequest),
            responses={**ok(wire.WatchAnswer, "The new watch, running; `webhook_secret` once when a webhook URL was given.", "201"),
                       **refused(400, 401, 403), **over_limit, **refused(429)},
            security=WRITE_SECURITY,
        ),
        "watch_list": operation_class(
            "watch_list",
            responses={**ok(wire.WatchListAnswer, "The caller's watches that are not deleted, newest first."), **refused(400, 401, 404, 429)},
            security=PRIVATE_SECURITY,
        ),
        "watch_update": operation_class(
            "watch_update",
            request_body=json_body(schemas, wire.WatchUpdateRequest),
            parameters=[_WATCH_ID],
            responses={**ok(wire.WatchAnswer, "The changed watch; `webhook_secret` once when a new webhook URL was given."),
                       **refused(400, 401, 403, 404, 429)},
            security=WRITE_SECURITY,
        ),
        "watch_delete": operation_class(
            "watch_delete",
            parameters=[_WATCH_ID],
            responses={**ok(wire.WatchDeletedAnswer, "Deleted; its undelivered changes are dropped and nothing more is charged."),
                       **refused(400, 401, 403, 404, 429)},
            security=WRITE_SECURITY,
        ),
    }


def watch_handlers(kernel: Any, schemas: WireSchemas) -> list[HTTPRouteHandler]:
    ops = watch_operations(schemas)
    watches = kernel.watches

    async def limited(request: Request, run: Callable[[CallRequest], Awaitable[Any]]) -> Response:
        req = await to_call_request(request)
        result = await kernel.rate_gate.limited("free_read", req, lambda: run(req))
        if isinstance(result, Answer):
            return answer_response(result)
        value, headers = result
        return json_response(value, headers=headers)

    @post(PATH, operation_id="watch_create", summary="Create a watch", tags=TAGS, status_code=201, operation_class=ops["watch_create"])
    async def watch_create(request: Request) -> Response:
        return await limited(request, watches.create)

    @get(PATH, operation_id="watch_list", summary="List your watches", tags=TAGS, operation_class=ops["watch_list"])
    async def watch_list(request: Request) -> Response:
        return await limited(request, watches.list)

    @patch(f"{PATH}/{{watch_id:str}}", operation_id="watch_update", summary="Change a watch", tags=TAGS, operation_class=ops["watch_update"])
    async def watch_update(request: Request, watch_id: Annotated[str, Parameter()]) -> Response:
        return await limited(request, lambda req: watches.update(req, watch_id))

    @delete(f"{PATH}/{{watch_id:str}}", operation_id="watch_delete", summary="Delete a watch", tags=TAGS, status_code=200,
            operation_class=ops["watch_delete"])
    async def watch_delete(request: Request, watch_id: Annotated[str, Parameter()]) -> Response:
        return await limited(request, lambda req: watches.delete(req, watch_id))

    return [watch_create, watch_list, watch_update, watch_delete]
