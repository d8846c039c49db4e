"""The kernel's free reads as `Route`s (health, receipt keys, one receipt, the receipts
listing, spend by category, a job's status, notifications), served by both fronts from
these declarations; what they read is core/jobs/agent_reads.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tollway._core import wire
from tollway._core.jobs.agent_reads import NO_READER
from tollway._core.plugin_api.query_params import QueryDoc
from tollway._core.plugin_api.route_shapes import Alias, McpTool, agent_needed
from tollway._core.plugin_api.routes import Route, RouteCall
from tollway._core.plugin_api.tool import CATEGORIES

READER = agent_needed(NO_READER)
# The MCP tools of the reads: read-only (notifications mark what they list read), free, closed-world.
READ_HINTS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_PERIOD = {"type": "integer", "minimum": 1, "maximum": 365}
_MCP_PERIOD = {**_PERIOD, "description": "days back"}


def mcp_input(properties: dict[str, Any], *required: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An MCP input schema of exactly these arguments (terser than the HTTP parameters)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return lambda _derived: schema


async def healthz(call: RouteCall) -> wire.Health:
    kernel = call.kernel
    kinds = tuple(t.provider_kind for t in kernel.tools.values() if t.provider_kind)
    providers = [
        wire.ProviderState(
            kind=p.kind,
            provider=p.provider,
            configured=p.configured,
            unset_settings=p.unset_settings,
            available=p.available,
        )
        for p in kernel.providers.statuses(also=kinds)
    ]
    sources = []
    for d in sorted(kernel.data_sources.values(), key=lambda d: d.name):
        problem = d.health(kernel.context) if d.health is not None else None
        sources.append(
            wire.DataSourceState(
                name=d.name, status="degraded" if problem else "ok", tools=list(d.tools), problem=problem
            )
        )
    status = "degraded" if any(s.status != "ok" for s in sources) else "ok"
    return wire.Health(
        status=status, tools=len(kernel.tools), network=kernel.network.caip2, providers=providers, data_sources=sources
    )


async def receipt_keys(call: RouteCall) -> wire.ReceiptKeys:
    return await call.kernel.receipts.keys()


async def receipt_get(call: RouteCall) -> Any:
    return await call.kernel.reads.receipt_for(call.caller, call.params["receipt_id"])


async def receipts(call: RouteCall) -> Any:
    return await call.kernel.reads.list_receipts(call.caller, call.query)


async def spend_breakdown(call: RouteCall) -> Any:
    return await call.kernel.reads.spend_breakdown(call.caller, call.query)


async def job_status(call: RouteCall) -> Any:
    return await call.kernel.reads.job_for(call.caller, call.params["request_id"])


async def notifications(call: RouteCall) -> Any:
    return await call.kernel.reads.list_notifications(call.caller, call.query)


def _read(**declared: Any) -> Route:
    """A free read of the caller's own things: any agent credential, counted as `free_read`."""
    return Route(**{"method": "GET", "caller_check": READER, "describe_in_openapi": False, **declared})


_LIMIT = QueryDoc("limit", "At most 100 (larger is clamped).", {"type": "integer", "minimum": 1, "default": 50})
ROUTES = (
    Route(
        method="GET",
        path="/healthz",
        name="healthz",
        title="Health",
        summary="Healthz",
        description="Whether the service is up.",
        describe_in_openapi=False,
        handle=healthz,
        auth="public",
        rate_limit=None,
        answer_type=wire.Health,
        answer_description="The service is up.",
        statuses=(),
        tags=("service",),
    ),
    Route(
        method="GET",
        path="/v1/receipts/keys",
        name="receipt_keys",
        title="Receipt keys",
        summary="ReceiptKeys",
        description="The receipt signing public keys.",
        answer_description="The receipt signing public keys.",
        describe_in_openapi=False,
        handle=receipt_keys,
        auth="public",
        rate_limit=None,
        answer_type=wire.ReceiptKeys,
        statuses=(),
        tags=("receipts",),
    ),
    _read(
        path="/v1/receipts/{receipt_id}",
        name="receipt_get",
        title="Receipt",
        summary="ReceiptGet",
        description="One of your receipts.",
        handle=receipt_get,
        answer_type=wire.Receipt,
        answer_description="One of the caller's receipts, as signed.",
        tags=("receipts",),
        param_docs=(("receipt_id", "rcpt_..."),),
    ),
    _read(
        path="/v1/analytics/receipts",
        name="analytics_receipts",
        title="Receipts",
        summary="AnalyticsReceipts",
        description="Your signed receipts, newest first; filter by period, category, since, until; page with limit and offset. Free.",
        handle=receipts,
        answer_type=wire.ReceiptPage,
        answer_description="The caller's receipts, newest first.",
        tags=("analytics",),
        query=(
            QueryDoc("period", "Days back (omitted: all).", _PERIOD),
            QueryDoc("category", "Receipt category.", {"type": "string", "enum": list(CATEGORIES)}),
            _LIMIT,
            QueryDoc("offset", "Receipts to skip.", {"type": "integer", "minimum": 0, "default": 0}),
            QueryDoc("since", "ISO 8601, inclusive bound on created_at.", {"type": "string", "format": "date-time"}),
            QueryDoc("until", "ISO 8601, inclusive bound on created_at.", {"type": "string", "format": "date-time"}),
        ),
        mcp=McpTool(
            name="receipts",
            hints=READ_HINTS,
            input=mcp_input(
                {
                    "period": _MCP_PERIOD,
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "offset": {"type": "integer", "minimum": 0},
                    "category": {"type": "string"},
                    "since": {"type": "string", "description": "ISO 8601"},
                    "until": {"type": "string", "description": "ISO 8601"},
                }
            ),
        ),
    ),
    _read(
        path="/v1/analytics/spend/breakdown",
        name="analytics_spend_breakdown",
        title="Spend breakdown",
        summary="AnalyticsBreakdown",
        description="What you spent, by category and tool, over a period (default 30 days). Free.",
        handle=spend_breakdown,
        answer_type=wire.SpendBreakdown,
        answer_description="Spend by category.",
        tags=("analytics",),
        query=(QueryDoc("period", "Days back (default 30).", {**_PERIOD, "default": 30}),),
        mcp=McpTool(name="spend_breakdown", hints=READ_HINTS, input=mcp_input({"period": _MCP_PERIOD})),
    ),
    _read(
        path="/v1/requests/{request_id}",
        name="job_status",
        title="Job status",
        summary="JobStatus",
        description="A job you started: status pending, processing, completed (with `result`) or failed (with error fields). Free.",
        handle=job_status,
        answer_type=wire.JobStatus,
        answer_description="The Job.",
        tags=("jobs",),
        param_docs=(("request_id", "The request_id a job tool answered with."),),
        aliases=(Alias(path="/v1/status/{request_id}", name="job_status_alias", summary="JobStatusAlias"),),
        mcp=McpTool(
            hints=READ_HINTS,
            input=mcp_input(
                {
                    "request_id": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 100,
                        "description": "The request_id a job tool answered with.",
                    },
                },
                "request_id",
            ),
        ),
    ),
    _read(
        path="/v1/tools/notifications",
        name="notifications",
        title="Notifications",
        summary="ListNotifications",
        description="Your notifications, newest first (listing marks them read). Free.",
        handle=notifications,
        answer_type=wire.NotificationPage,
        answer_description="The caller's notifications, newest first.",
        tags=("notifications",),
        query=(QueryDoc("unread", "Only unread ones.", {"type": "boolean", "default": False}), _LIMIT),
        mcp=McpTool(
            hints={k: v for k, v in READ_HINTS.items() if k != "readOnlyHint"},
            input=mcp_input(
                {
                    "unread": {"type": "boolean"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                }
            ),
        ),
    ),
)
