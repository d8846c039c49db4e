"""The watch routes as MCP tools (`watch_create`, `watch_list`, `watch_update`,
`watch_delete`): each becomes the kernel request its HTTP route makes, with the
caller's credential as a value (a held wallet key, or an access token, which must
come from signing in to change watches). Free; counted as `free_read`."""
from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
import msgspec

from core import wire
from core.errors import invalid_request
from core.request import Answer, CallRequest
from core.watches.requests import watchable_pairs

from .shaping import _root_object, compact, dumps

PATH = "/v1/tools/watch"
_ID = {"type": "string", "maxLength": 64}


@dataclasses.dataclass(frozen=True)
class WatchTool:
    name: str
    title: str
    description: str
    method: str
    takes_id: bool  # the watch id is an argument (the HTTP route's path parameter)
    run: Callable[[Any, CallRequest, str], Awaitable[Any]]  # (watches service, request, watch id)
    output_type: Any  # the answer's `data`, which the tool returns
    body_type: Any = None  # the arguments other than `id` are this JSON body
    annotations: types.ToolAnnotations | None = None


WATCH_TOOLS: tuple[WatchTool, ...] = (
    WatchTool(
        "watch_create",
        "Create a watch",
        "Follow one entity's attribute: each change is delivered once (notification; signed webhook to webhook_url) "
        "and charged price_per_change from credits, up to max_spend dollars. webhook_secret is shown only here. Max 100 watches.",
        "POST",
        False,
        lambda w, req, _id: w.create(req),
        wire.Watch,
        wire.WatchCreateRequest,
        types.ToolAnnotations(destructiveHint=False),
    ),
    WatchTool(
        "watch_list",
        "List your watches",
        "Your watches, newest first, with status, pause_reason, spent and changes_delivered.",
        "GET",
        False,
        lambda w, req, _id: w.list(req),
        wire.WatchList,
        annotations=types.ToolAnnotations(readOnlyHint=True),
    ),
    WatchTool(
        "watch_update",
        "Change a watch",
        "Change max_spend, webhook_url (new URL: new webhook_secret, shown once; null: stop sending) or paused. "
        "paused=false resumes only a watch you paused; a cap pause ends when max_spend leaves room for the next change.",
        "PATCH",
        True,
        lambda w, req, watch_id: w.update(req, watch_id),
        wire.Watch,
        wire.WatchUpdateRequest,
        types.ToolAnnotations(destructiveHint=False),
    ),
    WatchTool(
        "watch_delete",
        "Delete a watch",
        "Delete a watch: undelivered changes are dropped; nothing more is charged.",
        "DELETE",
        True,
        lambda w, req, watch_id: w.delete(req, watch_id),
        wire.WatchDeleted,
        annotations=types.ToolAnnotations(destructiveHint=True),
    ),
)


def watch_input_schema(tool: WatchTool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    if tool.body_type is not None:
        schema = compact(_root_object(msgspec.json.schema(tool.body_type)))
        schema.pop("description", None)
        # short: the tool's description says what the fields mean (tools/list is read by every agent)
        schema["properties"] = {name: _bounds(prop) for name, prop in schema["properties"].items()}
    props = schema["properties"]
    if "webhook_url" in props and tool.name == "watch_update":
        props["webhook_url"] = {**props["webhook_url"], "type": ["string", "null"]}
    if tool.takes_id:
        schema["properties"] = {"id": _ID, **props}
        schema["required"] = ["id", *schema.get("required", [])]
    return schema


def _bounds(prop: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in ("description", "minLength")}


def watch_output_schema(tool: WatchTool) -> dict[str, Any]:
    return compact(_root_object(msgspec.json.schema(tool.output_type)))


def watch_description(tool: WatchTool, sources: Mapping[str, Any]) -> str:
    """The tool's description; watch_create's names what this server can watch now."""
    if tool.name != "watch_create":
        return tool.description
    pairs = watchable_pairs(sources)
    named = ", ".join(f"{p['entity_type']} {p['attribute']}" for p in pairs) or "nothing (no watchable source is installed)"
    return f"{tool.description} Watchable (entity_type attribute): {named}."


Who = Callable[[str], "tuple[Credential | None, str, str | None]"]  # path -> (credential, resource URL, client IP)


def watch_request(tool: WatchTool, args: dict[str, Any], who: Who) -> tuple[CallRequest, str]:
    """The kernel request of one call (as its HTTP route would make it), and the watch id it names ("" for none)."""
    args = dict(args)
    watch_id = ""
    if tool.takes_id:
        raw = args.pop("id", None)
        if not isinstance(raw, str) or not raw:
            raise invalid_request("id is required: the watch's id.", [{"field": "id", "message": "is required (a string)"}])
        watch_id = raw
    path = f"{PATH}/{watch_id}" if tool.takes_id else PATH
    if tool.body_type is None and args:
        name = sorted(args)[0]
        raise invalid_request(f"Unknown field {name}.", [{"field": n, "message": f"{n} is not an accepted field"} for n in sorted(args)])
    body = dumps(args).encode() if tool.body_type is not None else b""
    credential, url, ip = who(path)
    return CallRequest(tool.method, path, url, {}, body, client_ip=ip, credential=credential), watch_id


def answer_data(result: Any) -> Any:
    """What the tool returns: the answer's `data` (the watch, `{watches}`, or `{id, deleted}`)."""
    value = result.body if isinstance(result, Answer) else result
    return msgspec.to_builtins(value)["data"]
