"""The one package a Tollway plugin imports: the whole plugin surface.

    import tollway

    @tollway.hookimpl
    def register_tools(register):
        register(tollway.Tool(...))

or, for a tool that is one typed async function, `@tollway.tool(path=..., price=...)`
over it builds the `Tool` from its signature and docstring.

Hooks are `register_tools`, `register_routes`, `register_settings`, `register_providers`, `register_periodic_tasks`,
`register_data_sources`, `register_settlement_backends`, `register_migrations`,
`startup(services)` and `shutdown(services)`; see docs/plugins.md. A tool that calls a
public HTTP registry declares it as an `Upstream` and answers with `Evidence`
(docs/upstream.md); a client of a commercial service of a kind (search, llm, ...) is a
`Provider` (docs/providers.md); a plugin's own tables are described in docs/storage.md
(`AppConfig`, `MigrationManager`).
`tollway.testing` is the contract suite and the pytest fixtures a plugin's tests use.
"""
from __future__ import annotations

from piccolo.apps.migrations.auto.migration_manager import MigrationManager
from piccolo.conf.apps import AppConfig

from core.agent_addresses import agent_address, agent_of_address
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
from core.services import Services
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
    "MigrationManager",
    "Observed",
    "Parked",
    "PeriodicTask",
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
    "Services",
    "Setting",
    "SettlementResult",
    "Snapshot",
    "Tool",
    "ToolContext",
    "ToolError",
    "Upstream",
    "UpstreamCall",
    "WatchSource",
    "agent_address",
    "agent_of_address",
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
