"""Plugins' own routes (`tollway.Route`) as Litestar handlers with their OpenAPI
operations: each handler hands the kernel request and the path's values to
`kernel.route_runner`, and sends back JSON or the page it answers."""
from __future__ import annotations

import re
from typing import Any

from litestar import Request, Response, route
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import Operation

from core.routes import Page, Route

from .hosts import OPT
from .openapi import AGENT_SECURITY, OPERATOR_SECURITY, PRIVATE_SECURITY, RATE_HEADERS, WireSchemas, json_body, operation_class, path_param, query
from .translate import answer_response, to_call_request

WRITE_SECURITY: list[dict[str, list[str]]] = [{"agentId": [], "agentProof": []}, {"accessToken": []}]
_SECURITY = {"read": AGENT_SECURITY, "write": WRITE_SECURITY, "public": [{}], "operator": OPERATOR_SECURITY}
_PARAM = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def route_operation(r: Route, schemas: WireSchemas) -> type[Operation]:
    headers = dict(RATE_HEADERS) if r.rate_limit else {}
    if r.page:
        content: dict[str, Any] = {r.media_type: {"schema": {"type": "string"}}}
    elif r.answer_type is not None:
        content = schemas.json(r.answer_type)
    else:
        content = {"application/json": {"schema": {"type": "object"}}}
    responses: dict[str, Any] = {str(r.status): {"description": r.title, "headers": headers, "content": content}}
    if r.page:
        for status in r.statuses:
            responses[str(status)] = {"description": "A page saying why the link is refused.", "content": content}
    else:
        responses.update(schemas.refusals(r.statuses, rate_limited=r.rate_limit is not None))
    parameters = [path_param(name, f"The {name.replace('_', ' ')}.") for name in r.params]
    parameters += [query(p.name, p.description, p.schema()) for p in r.query_params]  # typed as the runner parses them
    return operation_class(
        r.name,
        responses=responses,
        request_body=json_body(schemas, r.body_type) if r.body_type is not None else None,
        parameters=parameters,
        security=PRIVATE_SECURITY if r.private else _SECURITY[r.auth],
    )


def route_handlers(kernel: Any, schemas: WireSchemas, hosts: dict[str, str]) -> list[HTTPRouteHandler]:
    """`hosts`: the host name of each route served on a host of its own (hosts.bound_hosts)."""
    return [_handler(kernel, r, schemas, hosts.get(r.name)) for r in sorted(kernel.routes.values(), key=lambda r: (r.path, r.method))]


def _handler(kernel: Any, r: Route, schemas: WireSchemas, host: str | None) -> HTTPRouteHandler:
    async def handle(request: Request) -> Response:
        params = {name: str(value) for name, value in request.path_params.items()}
        out = await kernel.route_runner.call(r, await to_call_request(request), params)
        if isinstance(out, Page):
            return Response(content=out.html, status_code=out.status, headers=dict(out.headers) or None, media_type=out.media_type)
        return answer_response(out)

    handle.__name__ = f"route_{r.name}"
    return route(
        _PARAM.sub(lambda m: "{" + m.group(1) + ":str}", r.path),
        http_method=[r.method],
        operation_id=r.name,
        summary=r.title,
        description=r.description,
        tags=list(r.tags) or ["plugins"],
        status_code=r.status,
        operation_class=route_operation(r, schemas),
        opt={OPT: host} if host else None,
    )(handle)


__all__ = ["route_handlers"]
