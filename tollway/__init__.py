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

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.conf.apps import AppConfig

from core.context import JSONObject, JSONValue, Platform, PluginContext, PluginState, StateKey
from core.datasources import DataSource, Progress
from core.decorator import tool
from core.errors import Refusal
from core.evidence import Evidence, UpstreamCall
from core.history.declare import Benchmarkable
from core.history.keys import search_key
from core.hookspecs import hookimpl
from core.inbound import InboundMessage
from core.ids import iso, now_ms
from core.money import to_micro, usdc
from core.payments.settlement import BackendServices, SettlementResult
from core.parked import Parked
from core.periodic import PeriodicTask
from core.prepare import Admission
from core.providers import Provider
from core.query_params import QueryChoice, QueryFlag, QueryInt, QueryText, query_flag, query_int
from core.routes import Page, Route, RouteCall, RouteReply
from core.settings_spec import Setting
from core.source_values import source_int, source_text
from core.tool import AcceptedJob, Example, Fact, Tool, ToolContext, ToolError
from core.upstream import Reply, Upstream
from core.validation import FieldError, FieldErrors
from core.watches.sources import Observed, Snapshot, WatchSource
from core.tool_declarations import AdmissionChecks, HistoryDeclaration, JobDeclaration

from . import storage

__all__ = [
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
