"""Routes declared as MCP tools (`Route.mcp`: the kernel's reads, watches and value tags, and
plugins' routes): the path's parameters, the declared query parameters and the body's fields
are the tool's arguments, and a call is the kernel request its HTTP route makes (same
credential rules, rate limit and validation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcp_types as types
import msgspec

from tollway._core.basics.errors import invalid_request
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.plugin_api.query_params import QueryDoc
from tollway._core.plugin_api.routes import Route
from tollway._mcp_server.shaping import _root_object, compact, dumps

if TYPE_CHECKING:
    from tollway._core.kernel import Kernel


def route_input_schema(r: Route) -> dict[str, Any]:
    tool = r.mcp_tool
    assert tool is not None
    schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    if r.body_type is not None:
        schema = compact(_root_object(msgspec.json.schema(r.body_type)))
        schema.pop("description", None)
    props = {tool.argument(name): {"type": "string", "minLength": 1, "maxLength": 200} for name in r.params}
    # typed as the runner parses them; the default is in the description (the listing stays compact)
    props.update({p.name: {**_without_default(p.schema()), "description": p.description} for p in r.query_params})
    schema["properties"] = {**props, **schema.get("properties", {})}
    schema["required"] = [*(tool.argument(name) for name in r.params), *schema.get("required", [])]
    return tool.input(schema) if tool.input is not None else schema


def route_output_schema(r: Route) -> dict[str, Any] | None:
    """The schema of what the tool returns: the answer's type, or its `unwrap` field's."""
    tool = r.mcp_tool
    answer = r.answer_type
    if answer is None or tool is None:
        return None
    if tool.unwrap is not None:
        answer = next(f.type for f in msgspec.structs.fields(answer) if f.name == tool.unwrap)
    return compact(_root_object(msgspec.json.schema(answer)))


def _without_default(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "default"}


def query_value(value: Any) -> str:
    """An argument as the query string would carry it (true/false for a boolean)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _typed(param: Any, listed: dict[str, Any] | None, value: Any) -> Any:
    """A query argument: one its handler parses from the query string (`QueryDoc`) is first
    checked against the type its listed schema names (an MCP argument arrives typed)."""
    kind = (listed or {}).get("type")
    if (
        not isinstance(param, QueryDoc)
        or kind not in _KINDS
        or (isinstance(value, _KINDS[kind]) and not (kind == "integer" and isinstance(value, bool)))
    ):
        return value
    article = "an" if kind[0] in "ai" else "a"
    raise invalid_request(
        f"{param.name} must be {article} {kind}.", [{"field": param.name, "message": f"expected {kind}"}]
    )


_KINDS: dict[str, Any] = {"integer": int, "boolean": bool, "string": str}


def route_description(r: Route, kernel: Kernel) -> str:
    tool = r.mcp_tool
    return f"{r.description} {tool.note(kernel)}" if tool is not None and tool.note is not None else r.description


def route_tool(r: Route, kernel: Kernel) -> types.Tool:
    tool = r.mcp_tool
    assert tool is not None
    if tool.hints is not None:
        hints = types.ToolAnnotations(**tool.hints)
    else:
        hints = types.ToolAnnotations(
            readOnlyHint=r.method == "GET" or None, destructiveHint=r.method == "DELETE", openWorldHint=False
        )
    return types.Tool(
        name=r.tool_name,
        title=r.title,
        description=route_description(r, kernel),
        inputSchema=route_input_schema(r),
        annotations=hints,
    )


def route_request(r: Route, args: dict[str, Any], who: Any) -> tuple[CallRequest, dict[str, str]]:
    """The kernel request of one call and the path's values; `who(path)` gives (credential, url, ip)."""
    tool = r.mcp_tool
    assert tool is not None
    args = dict(args)
    params: dict[str, str] = {}
    missing = []
    for name in r.params:
        value = args.pop(tool.argument(name), None)
        if not isinstance(value, str) or not value:
            missing.append({"field": tool.argument(name), "message": "is required (a string)"})
        elif "/" in value:
            missing.append({"field": tool.argument(name), "message": "must not contain '/'"})
        else:
            params[name] = value
    if missing:
        raise invalid_request(f"{', '.join(m['field'] for m in missing)}: {missing[0]['message']}.", missing)
    listed = route_input_schema(r)["properties"]
    query = {
        p.name: query_value(_typed(p, listed.get(p.name), args.pop(p.name))) for p in r.query_params if p.name in args
    }
    if r.body_type is None and args:
        raise invalid_request(
            f"Unknown field {sorted(args)[0]}.",
            [{"field": n, "message": f"{n} is not an accepted field"} for n in sorted(args)],
        )
    path = r.concrete_path(params)
    credential, url, ip = who(path)
    body = dumps(args).encode() if r.body_type is not None else b""
    return CallRequest(r.method, path, url, {}, body, query=query, client_ip=ip, credential=credential), params


def route_value(r: Route, out: Any) -> Any:
    """What the tool returns: the route's JSON answer as plain values (its `unwrap` field, when named)."""
    value = msgspec.to_builtins(out.body if isinstance(out, Answer) else out)
    tool = r.mcp_tool
    return value[tool.unwrap] if tool is not None and tool.unwrap is not None else value
