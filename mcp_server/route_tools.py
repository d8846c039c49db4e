"""Plugins' routes marked `mcp` (`tollway.Route`) as MCP tools: the path's parameters
and the body's fields are the tool's arguments, and a call is the kernel request its
HTTP route makes (same credential rules, rate limit and validation)."""
from __future__ import annotations

from typing import Any

import mcp_types as types
import msgspec

from core.errors import invalid_request
from core.request import Answer, CallRequest
from core.routes import Route

from .shaping import _root_object, compact, dumps


def route_input_schema(r: Route) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    if r.body_type is not None:
        schema = compact(_root_object(msgspec.json.schema(r.body_type)))
        schema.pop("description", None)
    props = {name: {"type": "string", "minLength": 1, "maxLength": 200} for name in r.params}
    # typed as the runner parses them; the default is in the description (the listing stays compact)
    props.update({p.name: {**_without_default(p.schema()), "description": p.description} for p in r.query_params})
    schema["properties"] = {**props, **schema.get("properties", {})}
    schema["required"] = [*r.params, *schema.get("required", [])]
    return schema


def _without_default(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "default"}


def query_value(value: Any) -> str:
    """An argument as the query string would carry it (true/false for a boolean)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def route_tool(r: Route) -> types.Tool:
    read_only = r.method == "GET"
    return types.Tool(
        name=r.name,
        title=r.title,
        description=r.description,
        inputSchema=route_input_schema(r),
        annotations=types.ToolAnnotations(readOnlyHint=read_only or None, destructiveHint=r.method == "DELETE", openWorldHint=False),
    )


def route_request(r: Route, args: dict[str, Any], who: Any) -> tuple[CallRequest, dict[str, str]]:
    """The kernel request of one call and the path's values; `who(path)` gives (credential, url, ip)."""
    args = dict(args)
    params: dict[str, str] = {}
    missing = []
    for name in r.params:
        value = args.pop(name, None)
        if not isinstance(value, str) or not value or "/" in value:
            missing.append({"field": name, "message": "is required (a string without '/')"})
        else:
            params[name] = value
    if missing:
        raise invalid_request(f"{', '.join(m['field'] for m in missing)} required.", missing)
    query = {p.name: query_value(args.pop(p.name)) for p in r.query_params if p.name in args}
    if r.body_type is None and args:
        raise invalid_request(f"Unknown field {sorted(args)[0]}.", [{"field": n, "message": f"{n} is not an accepted field"} for n in sorted(args)])
    path = r.concrete_path(params)
    credential, url, ip = who(path)
    body = dumps(args).encode() if r.body_type is not None else b""
    return CallRequest(r.method, path, url, {}, body, query=query, client_ip=ip, credential=credential), params


def route_value(out: Any) -> Any:
    """What the tool returns: the route's JSON answer as plain values."""
    value = out.body if isinstance(out, Answer) else out
    return msgspec.to_builtins(value)
