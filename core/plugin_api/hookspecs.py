"""The plugin API: every hook a plugin may implement, marked with `hookimpl`.

The `register_*` hooks declare objects through a `register` callback (tools, routes,
providers, settings, periodic tasks, data sources, watch sources, inbound handlers,
settlement backends, migration apps, operator pages); the registered objects carry the behaviour.
`register_tools` may also take the service's `context` (a `PluginContext`) to bind its
tools' checks to it. `startup` and `shutdown` are async and awaited, each given the context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # only for annotations; pluggy never resolves them
    from piccolo.conf.apps import AppConfig

    from tollway._core.messages.inbound import InboundHandler
    from tollway._core.payments.settlement import SettlementBackendFactory
    from tollway._core.plugin_api.context import PluginContext
    from tollway._core.plugin_api.datasources import DataSource
    from tollway._core.plugin_api.operator_pages import OperatorPage
    from tollway._core.plugin_api.periodic import PeriodicTask
    from tollway._core.plugin_api.providers import Provider
    from tollway._core.plugin_api.routes import Route
    from tollway._core.plugin_api.settings_spec import Setting
    from tollway._core.plugin_api.tool import Tool
    from tollway._core.watches.sources import WatchSource

PROJECT = "tollway"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    """Declare the plugin's tools.

    :param register: call once per `tollway.Tool`; a name or path already
        taken stops start-up.
    :param context: the service's `tollway.PluginContext` (take it only when a tool's
        `check`, `admit` or `on_accept` needs the platform or settings: bind it to them).
        Its `platform` and `http` exist once the service has started, as when those run.
    """


@hookspec
def register_providers(register: Callable[[Provider], None]) -> None:
    """Declare providers: clients of a commercial or self-hosted service of a kind
    (search, llm, email, ...) that tools of that kind reach through `ctx.provider(kind)`.

    :param register: call once per `tollway.Provider`; its settings are registered with
        it, and the same kind and name declared twice stops start-up.
    """


@hookspec
def register_routes(register: Callable[[Route], None]) -> None:
    """Declare operations besides tools: resource reads and writes, pages a person opens.

    :param register: call once per `tollway.Route`; a name or a method and path already
        taken stops start-up.
    """


@hookspec
def register_inbound_handlers(register: Callable[[InboundHandler], None]) -> None:
    """Declare handlers of inbound messages (an email reply, ...).

    :param register: call once per `handler(message, platform) -> bool` (async): it
        receives each `tollway.InboundMessage` in turn and returns True when it took it.
    """


@hookspec
def register_settlement_backends(register: Callable[[str, SettlementBackendFactory], None]) -> None:
    """Declare payment settlement backends (the kernel registers `local` and `facilitator`).

    :param register: `register(name, factory)`; `factory(services)` builds the
        backend once the database and settings are ready, from a `BackendServices`
        (network, HTTP client, database, facilitator and chain settings).
    """


@hookspec
def register_settings(register: Callable[[Setting], None]) -> None:
    """Declare the plugin's settings, read from `TOLLWAY_<FAMILY>_<NAME>`.

    :param register: call once per `core.settings_spec.Setting`.
    """


@hookspec
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    """Declare work the scheduler runs every `interval_s` seconds.

    :param register: call once per `core.periodic.PeriodicTask`.
    """


@hookspec
def register_data_sources(register: Callable[[DataSource], None]) -> None:
    """Declare downloadable data the plugin keeps (refreshed by `tollway data refresh`).

    :param register: call once per `core.datasources.DataSource`; a name taken twice
        stops start-up.
    """


@hookspec
def register_watch_sources(register: Callable[[WatchSource], None]) -> None:
    """Declare an attribute agents may watch: how to poll its source's current values.

    :param register: call once per `tollway.WatchSource`; an attribute taken twice
        stops start-up.
    """


@hookspec
def register_operator_pages(register: Callable[[OperatorPage], None]) -> None:
    """Declare pages of the operator console: read-only reports of the plugin's own data.

    :param register: call once per `tollway.OperatorPage`; a name taken twice stops
        start-up. The console (when installed) serves each at `/console/view/{name}`.
    """


@hookspec
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    """Declare the plugin's own tables as a Piccolo app with forward-only migrations.

    :param register: call once per `piccolo.conf.apps.AppConfig` (`tollway.AppConfig`):
        a unique `app_name`, the folder of its migration files and its table
        classes. The service applies the pending migrations at start and on
        `tollway db migrate`, after the kernel's (docs/storage.md).
    """


@hookspec
async def startup(context: PluginContext) -> None:
    """Awaited once when the service has started (database open, tools registered); an
    `async def` (a plain function stops start-up). A server it starts (a listener) is kept
    in `context.state` for `shutdown`.

    :param context: what a plugin may use (`tollway.PluginContext`: home folder, offline
        flag, HTTP client, settings, platform, per-service state).
    """


@hookspec
async def shutdown(context: PluginContext) -> None:
    """Awaited once when the service stops, before its HTTP client and database close; an
    `async def`. A failing one is logged and the others still run.

    :param context: the same object `startup` received.
    """
