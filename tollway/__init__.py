"""The one package a Tollway plugin imports: the plugin API, every name of it documented in
docs/plugins.md ("What `tollway` gives a plugin"; a test holds `__all__` to that table).

    import tollway

    @tollway.hookimpl
    def register_tools(register):
        register(tollway.Tool(...))

or, for a tool that is one typed async function, `@tollway.tool(path=..., price=...)`
over it builds the `Tool` from its signature and docstring.

The hooks are those of docs/plugins.md ("Hooks"): the `register_*` declarations and the
async `startup(context)` / `shutdown(context)`. Hooks, tasks, data sources, watch sources
and tools (`ToolContext.plugin`) get the service's `PluginContext`: settings, HTTP client,
home folder, the kernel services (`Platform`) and per-service state (`StateKey`).
Helpers that are not the plugin API proper live in `tollway.helpers`; `tollway.testing` is
the contract suite and the pytest fixtures a plugin's tests use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers and readers see; at run time each name is imported on first use
    from piccolo.apps.migrations.auto.migration_manager import MigrationManager
    from piccolo.conf.apps import AppConfig

    from tollway._core.basics.errors import Refusal
    from tollway._core.basics.ids import iso, now_ms
    from tollway._core.basics.money import to_micro, usdc
    from tollway._core.basics.source_values import source_int, source_text
    from tollway._core.basics.validation import FieldError, FieldErrors
    from tollway._core.calls.prepare import Admission
    from tollway._core.history.declare import Benchmarkable
    from tollway._core.history.keys import search_key
    from tollway._core.jobs.parked import Parked
    from tollway._core.messages.inbound import InboundMessage
    from tollway._core.payments.settlement import BackendServices, SettlementResult
    from tollway._core.plugin_api.context import JSONObject, JSONValue, Platform, PluginContext, PluginState, StateKey
    from tollway._core.plugin_api.datasources import DataSource, Progress
    from tollway._core.plugin_api.decorator import tool
    from tollway._core.plugin_api.evidence import Evidence, UpstreamCall
    from tollway._core.plugin_api.hookspecs import hookimpl
    from tollway._core.plugin_api.operator_pages import Figure, Link, OperatorPage, Report, Row, Section, Table
    from tollway._core.plugin_api.periodic import PeriodicTask
    from tollway._core.plugin_api.providers import Provider
    from tollway._core.plugin_api.query_params import (
        QueryChoice,
        QueryDoc,
        QueryFlag,
        QueryInt,
        QueryText,
        query_flag,
        query_int,
    )
    from tollway._core.plugin_api.route_shapes import Alias, McpTool
    from tollway._core.plugin_api.routes import Page, Route, RouteCall, RouteReply
    from tollway._core.plugin_api.settings_spec import Setting
    from tollway._core.plugin_api.tool import AcceptedJob, Example, Fact, Tool, ToolContext, ToolError
    from tollway._core.plugin_api.tool_declarations import AdmissionChecks, HistoryDeclaration, JobDeclaration
    from tollway._core.plugin_api.upstream import Reply, Upstream
    from tollway._core.watches.sources import Observed, Snapshot, WatchSource

    from . import storage

# Each public name and where it lives. `import tollway` (and so every internal module, which is
# installed under it) imports none of them; a name's module is imported when the name is first used.
_EXPORTS: dict[str, tuple[str, str]] = {
    "Alias": ("tollway._core.plugin_api.route_shapes", "Alias"),
    "McpTool": ("tollway._core.plugin_api.route_shapes", "McpTool"),
    "QueryDoc": ("tollway._core.plugin_api.query_params", "QueryDoc"),
    "AcceptedJob": ("tollway._core.plugin_api.tool", "AcceptedJob"),
    "Admission": ("tollway._core.calls.prepare", "Admission"),
    "AdmissionChecks": ("tollway._core.plugin_api.tool_declarations", "AdmissionChecks"),
    "AppConfig": ("piccolo.conf.apps", "AppConfig"),
    "BackendServices": ("tollway._core.payments.settlement", "BackendServices"),
    "Benchmarkable": ("tollway._core.history.declare", "Benchmarkable"),
    "DataSource": ("tollway._core.plugin_api.datasources", "DataSource"),
    "Evidence": ("tollway._core.plugin_api.evidence", "Evidence"),
    "Example": ("tollway._core.plugin_api.tool", "Example"),
    "Fact": ("tollway._core.plugin_api.tool", "Fact"),
    "FieldError": ("tollway._core.basics.validation", "FieldError"),
    "FieldErrors": ("tollway._core.basics.validation", "FieldErrors"),
    "HistoryDeclaration": ("tollway._core.plugin_api.tool_declarations", "HistoryDeclaration"),
    "InboundMessage": ("tollway._core.messages.inbound", "InboundMessage"),
    "JSONObject": ("tollway._core.plugin_api.context", "JSONObject"),
    "JSONValue": ("tollway._core.plugin_api.context", "JSONValue"),
    "JobDeclaration": ("tollway._core.plugin_api.tool_declarations", "JobDeclaration"),
    "MigrationManager": ("piccolo.apps.migrations.auto.migration_manager", "MigrationManager"),
    "Figure": ("tollway._core.plugin_api.operator_pages", "Figure"),
    "Link": ("tollway._core.plugin_api.operator_pages", "Link"),
    "OperatorPage": ("tollway._core.plugin_api.operator_pages", "OperatorPage"),
    "Report": ("tollway._core.plugin_api.operator_pages", "Report"),
    "Row": ("tollway._core.plugin_api.operator_pages", "Row"),
    "Section": ("tollway._core.plugin_api.operator_pages", "Section"),
    "Table": ("tollway._core.plugin_api.operator_pages", "Table"),
    "Observed": ("tollway._core.watches.sources", "Observed"),
    "Page": ("tollway._core.plugin_api.routes", "Page"),
    "Parked": ("tollway._core.jobs.parked", "Parked"),
    "PeriodicTask": ("tollway._core.plugin_api.periodic", "PeriodicTask"),
    "Platform": ("tollway._core.plugin_api.context", "Platform"),
    "PluginContext": ("tollway._core.plugin_api.context", "PluginContext"),
    "PluginState": ("tollway._core.plugin_api.context", "PluginState"),
    "Progress": ("tollway._core.plugin_api.datasources", "Progress"),
    "Provider": ("tollway._core.plugin_api.providers", "Provider"),
    "QueryChoice": ("tollway._core.plugin_api.query_params", "QueryChoice"),
    "QueryFlag": ("tollway._core.plugin_api.query_params", "QueryFlag"),
    "QueryInt": ("tollway._core.plugin_api.query_params", "QueryInt"),
    "QueryText": ("tollway._core.plugin_api.query_params", "QueryText"),
    "Refusal": ("tollway._core.basics.errors", "Refusal"),
    "Reply": ("tollway._core.plugin_api.upstream", "Reply"),
    "Route": ("tollway._core.plugin_api.routes", "Route"),
    "RouteCall": ("tollway._core.plugin_api.routes", "RouteCall"),
    "RouteReply": ("tollway._core.plugin_api.routes", "RouteReply"),
    "Setting": ("tollway._core.plugin_api.settings_spec", "Setting"),
    "SettlementResult": ("tollway._core.payments.settlement", "SettlementResult"),
    "Snapshot": ("tollway._core.watches.sources", "Snapshot"),
    "StateKey": ("tollway._core.plugin_api.context", "StateKey"),
    "Tool": ("tollway._core.plugin_api.tool", "Tool"),
    "ToolContext": ("tollway._core.plugin_api.tool", "ToolContext"),
    "ToolError": ("tollway._core.plugin_api.tool", "ToolError"),
    "Upstream": ("tollway._core.plugin_api.upstream", "Upstream"),
    "UpstreamCall": ("tollway._core.plugin_api.evidence", "UpstreamCall"),
    "WatchSource": ("tollway._core.watches.sources", "WatchSource"),
    "hookimpl": ("tollway._core.plugin_api.hookspecs", "hookimpl"),
    "iso": ("tollway._core.basics.ids", "iso"),
    "now_ms": ("tollway._core.basics.ids", "now_ms"),
    "query_flag": ("tollway._core.plugin_api.query_params", "query_flag"),
    "query_int": ("tollway._core.plugin_api.query_params", "query_int"),
    "search_key": ("tollway._core.history.keys", "search_key"),
    "source_int": ("tollway._core.basics.source_values", "source_int"),
    "source_text": ("tollway._core.basics.source_values", "source_text"),
    "storage": ("tollway", "storage"),
    "to_micro": ("tollway._core.basics.money", "to_micro"),
    "tool": ("tollway._core.plugin_api.decorator", "tool"),
    "usdc": ("tollway._core.basics.money", "usdc"),
}


def __getattr__(name: str) -> object:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'tollway' has no attribute {name!r}") from None
    if module == "tollway":  # a submodule of the public package (`tollway.storage`)
        value = importlib.import_module(f"tollway.{attr}")
    else:
        value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "Alias",
    "McpTool",
    "QueryDoc",
    "AcceptedJob",
    "Admission",
    "AppConfig",
    "BackendServices",
    "Benchmarkable",
    "DataSource",
    "Evidence",
    "Example",
    "Fact",
    "FieldError",
    "FieldErrors",
    "InboundMessage",
    "JSONObject",
    "JSONValue",
    "MigrationManager",
    "Figure",
    "Link",
    "OperatorPage",
    "Report",
    "Row",
    "Section",
    "Table",
    "Observed",
    "Parked",
    "PeriodicTask",
    "Platform",
    "PluginContext",
    "PluginState",
    "Progress",
    "Page",
    "Provider",
    "QueryChoice",
    "QueryFlag",
    "QueryInt",
    "QueryText",
    "query_flag",
    "query_int",
    "Refusal",
    "Reply",
    "Route",
    "RouteCall",
    "RouteReply",
    "Setting",
    "SettlementResult",
    "Snapshot",
    "StateKey",
    "Tool",
    "ToolContext",
    "ToolError",
    "Upstream",
    "UpstreamCall",
    "WatchSource",
    "hookimpl",
    "iso",
    "now_ms",
    "source_int",
    "search_key",
    "source_text",
    "storage",
    "tool",
    "to_micro",
    "usdc",
    "AdmissionChecks",
    "HistoryDeclaration",
    "JobDeclaration",
]
