"""Every `Route` (the kernel's own and the plugins') as Litestar handlers with their OpenAPI
operations, one per path and alias: each handler hands the kernel request and the path's
values to `kernel.route_runner`, and sends back JSON or the page it answers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from litestar import Request, Response, route
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import Operation

from tollway._core import wire
from tollway._core.plugin_api.routes import Alias, Page, Route
from tollway._http_server.hosts import OPT
from tollway._http_server.openapi import (
    AGENT_SECURITY,
    OPERATOR_SECURITY,
    PAYMENT_RESPONSE_HEADER,
    PRIVATE_SECURITY,
    RATE_HEADERS,
    WireSchemas,
    json_body,
    operation_class,
    path_param,
    payment_parameter,
    query,
    quote_parameter,
)
from tollway._http_server.translate import JSON, answer_response, to_call_request

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel

WRITE_SECURITY: list[dict[str, list[str]]] = [{"agentId": [], "agentProof": []}, {"accessToken": []}]
_SECURITY = {
    "read": AGENT_SECURITY,
    "write": WRITE_SECURITY,
    "signed_in": WRITE_SECURITY,  # the access token must come from signing in: said by the scheme's description
    "proof": [{"agentId": [], "agentProof": []}],
    "public": [{}],
    "optional": [{"agentId": []}, {}],
    "operator": OPERATOR_SECURITY,
}
_PARAM = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def litestar_path(path: str) -> str:
    """A declared path's `{name}` parameters in Litestar's typed form (`{name:str}`)."""
    return _PARAM.sub(lambda m: "{" + m.group(1) + ":str}", path)


def _answers(r: Route, schemas: WireSchemas, alias: Alias | None) -> dict[str, Any]:
    """The route's answers: its own status (and `also_answers`), then every refusal."""
    headers = {**(RATE_HEADERS if r.rate_limit else {}), **(PAYMENT_RESPONSE_HEADER if r.paid_with else {})}
    if r.page and r.answer_type is not None:  # a page of its own bytes in a typed format (JSON of a protocol)
        content: dict[str, Any] = {r.media_type: schemas.json(r.answer_type)[JSON]}
    elif r.page:
        content = {r.media_type: {"schema": {"type": "string"}}}
    elif r.answer_type is not None:
        content = schemas.json(r.answer_type)
    else:
        content = {"application/json": {"schema": {"type": "object"}}}
    described = r.answer_description or r.title
    if alias is not None:
        described = f"{described.rstrip('.')} (same as {r.method} {r.path})."
    responses: dict[str, Any] = {}
    for status, description in ((r.status, described), *r.also_answers):
        responses[str(status)] = {
            "description": description,
            "content": content,
            **({"headers": dict(headers)} if headers else {}),
        }
    if r.page:
        for status in r.statuses:
            if r.error_type is not None:  # the route's own error object (a protocol's), not the service's
                responses[str(status)] = {
                    "description": dict(r.refusal_docs).get(status, f"Refused ({status}): the error object says why."),
                    "content": {r.media_type: schemas.json(r.error_type)[JSON]},
                }
            else:
                responses[str(status)] = {"description": "A page saying why the link is refused.", "content": content}
        return responses
    worded = dict(r.refusal_docs)
    limited = r.rate_limit is not None
    for status in r.statuses:
        if status in worded:
            own = {"description": worded[status], "content": schemas.json(wire.ErrorBody)}
            responses[str(status)] = {**own, "headers": dict(RATE_HEADERS)} if limited else own
        else:
            responses.update(schemas.refusals((status,), rate_limited=limited))
    return responses


def route_operation(r: Route, schemas: WireSchemas, alias: Alias | None = None) -> type[Operation]:
    parameters: list[dict[str, Any]] = [path_param(name, r.param_doc(name)) for name in r.params]
    parameters += [query(p.name, p.description, p.schema()) for p in r.query_params]  # typed as the runner parses them
    if r.paid_with:
        parameters += [payment_parameter(schemas, r.paid_with), quote_parameter(schemas)]
    return operation_class(
        alias.name if alias else r.name,
        responses=_answers(r, schemas, alias),
        request_body=json_body(schemas, r.body_type) if r.body_type is not None else None,
        parameters=parameters,
        security=PRIVATE_SECURITY if r.private else _SECURITY[r.auth],
    )


def route_handlers(kernel: Kernel, schemas: WireSchemas, hosts: dict[str, str]) -> list[HTTPRouteHandler]:
    """`hosts`: the host name of each route served on a host of its own (hosts.bound_hosts)."""
    out = []
    for r in sorted(kernel.routes.values(), key=lambda r: (r.path, r.method)):
        out.append(_handler(kernel, r, schemas, hosts.get(r.name)))
        out += [_handler(kernel, r, schemas, hosts.get(r.name), alias) for alias in r.aliases]
    return out


def _handler(
    kernel: Kernel, r: Route, schemas: WireSchemas, host: str | None, alias: Alias | None = None
) -> HTTPRouteHandler:
    async def handle(request: Request) -> Response:
        params = {name: str(value) for name, value in request.path_params.items()}
        out = await kernel.route_runner.call(r, await to_call_request(request), params)
        if isinstance(out, Page):
            return Response(
                content=out.html, status_code=out.status, headers=dict(out.headers) or None, media_type=out.media_type
            )
        return answer_response(out)

    name = alias.name if alias else r.name
    handle.__name__ = f"route_{name}"
    handle.__annotations__ = {"request": Request, "return": Response}  # evaluated: see app._tool_handler
    return route(
        litestar_path(alias.path if alias else r.path),
        http_method=[r.method],
        operation_id=name,
        summary=(alias.summary if alias else None) or r.summary or r.title,
        description=r.description if r.describe_in_openapi else None,
        tags=list(r.tags) or ["plugins"],
        status_code=r.status,
        operation_class=route_operation(r, schemas, alias),
        opt={OPT: host} if host else None,
    )(handle)


__all__ = ["litestar_path", "route_handlers", "route_operation"]
