"""The watch operations as `Route`s (create, list, change, delete; free, counted as
`free_read`) and the operator's poll of a watch source, served by both fronts from these
declarations; what they do is resource.py's and polling.py's."""

from __future__ import annotations

from typing import Any

from tollway._core import wire
from tollway._core.plugin_api.route_shapes import McpTool
from tollway._core.plugin_api.routes import Route, RouteCall
from tollway._core.watches.requests import watchable_pairs
from tollway._core.watches.resource import may_change, may_list

PATH = "/v1/tools/watch"
TAGS = ("watches",)
WATCH_ID = (("watch_id", "The watch's id (UUID)."),)
_LIMIT_TEXT = "The agent already holds 100 watches that are not deleted (`watch_limit_reached`)."


async def create(call: RouteCall) -> Any:
    return await call.kernel.watches.create(call.request, call.caller)


async def listing(call: RouteCall) -> Any:
    return await call.kernel.watches.list(call.request, call.caller)


async def update(call: RouteCall) -> Any:
    return await call.kernel.watches.update(call.request, call.params["watch_id"], call.caller)


async def delete(call: RouteCall) -> Any:
    return await call.kernel.watches.delete(call.request, call.params["watch_id"], call.caller)


async def poll(call: RouteCall) -> wire.WatchSourcePolled:
    return await call.kernel.watch_polling.poll_request(call.request, call.params["attribute"])


def watchable(kernel: Any) -> str:
    """What this server can watch now, for watch_create's MCP description."""
    pairs = watchable_pairs(kernel.watch_sources)
    named = (
        ", ".join(f"{p['entity_type']} {p['attribute']}" for p in pairs) or "nothing (no watchable source is installed)"
    )
    return f"Watchable (entity_type attribute): {named}."


def terse(schema: dict[str, Any]) -> dict[str, Any]:
    """The MCP input of a watch tool: the body's fields without their descriptions (the
    tool's description says what they mean; tools/list is read by every agent), a short id."""
    props = {
        name: {k: v for k, v in prop.items() if k not in ("description", "minLength")}
        for name, prop in schema["properties"].items()
    }
    if "id" in props:
        props["id"] = {"type": "string", "maxLength": 64}
    out = {**schema, "properties": props}
    if not out.get("required"):
        out.pop("required", None)
    return out


def terse_update(schema: dict[str, Any]) -> dict[str, Any]:
    """watch_update's: a webhook_url of null stops the webhooks."""
    out = terse(schema)
    out["properties"]["webhook_url"] = {**out["properties"]["webhook_url"], "type": ["string", "null"]}
    return out


def _watch(**declared: Any) -> Route:
    """A watch route: free (`free_read`), tagged `watches`, described in MCP only."""
    return Route(
        **{"tags": TAGS, "describe_in_openapi": False, "auth": "signed_in", "caller_check": may_change, **declared}
    )


ROUTES = (
    _watch(
        method="POST",
        path=PATH,
        name="watch_create",
        title="Create a watch",
        description="Follow one entity's attribute: each change is delivered once (notification; signed webhook to webhook_url) "
        "and charged price_per_change from credits, up to max_spend dollars. webhook_secret is shown only here. Max 100 watches.",
        handle=create,
        status=201,
        body_type=wire.WatchCreateRequest,
        raw_body=True,
        answer_type=wire.WatchAnswer,
        answer_description="The new watch, running; `webhook_secret` once when a webhook URL was given.",
        statuses=(400, 401, 403, 409, 429),
        refusal_docs=((409, _LIMIT_TEXT),),
        mcp=McpTool(input=terse, hints={"destructiveHint": False}, note=watchable, unwrap="data"),
    ),
    _watch(
        method="GET",
        path=PATH,
        name="watch_list",
        title="List your watches",
        description="Your watches, newest first, with status, pause_reason, spent and changes_delivered.",
        handle=listing,
        auth="read",
        private=True,
        caller_check=may_list,
        answer_type=wire.WatchListAnswer,
        answer_description="The caller's watches that are not deleted, newest first.",
        mcp=McpTool(input=terse, hints={"readOnlyHint": True}, unwrap="data"),
    ),
    _watch(
        method="PATCH",
        path=f"{PATH}/{{watch_id}}",
        name="watch_update",
        title="Change a watch",
        description="Change max_spend, webhook_url (new URL: new webhook_secret, shown once; null: stop sending) or paused. "
        "paused=false resumes only a watch you paused; a cap pause ends when max_spend leaves room for the next change.",
        handle=update,
        body_type=wire.WatchUpdateRequest,
        raw_body=True,
        answer_type=wire.WatchAnswer,
        param_docs=WATCH_ID,
        answer_description="The changed watch; `webhook_secret` once when a new webhook URL was given.",
        statuses=(400, 401, 403, 404, 429),
        mcp=McpTool(input=terse_update, args={"watch_id": "id"}, hints={"destructiveHint": False}, unwrap="data"),
    ),
    _watch(
        method="DELETE",
        path=f"{PATH}/{{watch_id}}",
        name="watch_delete",
        title="Delete a watch",
        description="Delete a watch: undelivered changes are dropped; nothing more is charged.",
        handle=delete,
        answer_type=wire.WatchDeletedAnswer,
        param_docs=WATCH_ID,
        answer_description="Deleted; its undelivered changes are dropped and nothing more is charged.",
        statuses=(400, 401, 403, 404, 429),
        mcp=McpTool(input=terse, args={"watch_id": "id"}, hints={"destructiveHint": True}, unwrap="data"),
    ),
    Route(
        method="POST",
        path="/v1/tools/internal/watch-sources/{attribute}/poll",
        name="operator_poll_watch_source",
        title="Poll a watch source",
        summary="PollWatchSource",
        description="One poll of a watch source now.",
        describe_in_openapi=False,
        handle=poll,
        auth="operator",
        rate_limit=None,
        tags=("operator",),
        answer_type=wire.WatchSourcePolled,
        answer_description="One poll of a watch source now; answered once its changes are recorded and queued for delivery.",
        statuses=(401, 404),
        param_docs=(("attribute", "The watchable attribute, e.g. `us_treasury_sanctions`."),),
    ),
)
