"""`Registry`: what the plugins declared (tools, settings, providers, periodic tasks, data
sources, settlement backend factories, operator pages), collected through the hooks; collisions stop start-up.
With them, the awaited lifecycle hooks (`startup`, `shutdown`) of every plugin."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Mapping
from types import MappingProxyType
from typing import Any

import pluggy

from tollway._core.plugin_api.context import PluginContext
from tollway._core.plugin_api.datasources import DataSource
from tollway._core.plugin_api.operator_pages import OperatorPage
from tollway._core.plugin_api.periodic import PeriodicTask
from tollway._core.plugin_api.providers import Provider, choice_setting
from tollway._core.plugin_api.routes import Route
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Tool
from tollway._core.watches.sources import WatchSource

log = logging.getLogger("tollway.kernel")
LIFECYCLE_HOOKS = ("startup", "shutdown")


class StartupError(RuntimeError):
    """A configuration that must not start (duplicate tool name or path, unknown backend)."""


class Registry:
    """The declarations of every registered plugin, refilled in place by `collect`."""

    def __init__(self, plugin_env: Mapping[str, str]) -> None:
        self.plugin_env = plugin_env
        self.tools: dict[str, Tool] = {}
        self.tools_by_path: dict[str, Tool] = {}
        self.settings: dict[str, Setting] = {}
        self._families: dict[str, list[Setting]] = {}  # the settings by family
        # each family's values (`family_settings`, twice a paid call), read-only: made once,
        # from the fixed environment, and dropped when a setting is declared
        self._family_values: dict[str, Mapping[str, str]] = {}
        self.periodic_tasks: list[PeriodicTask] = []
        self.data_sources: dict[str, DataSource] = {}
        self.backend_factories: dict[str, Any] = {}
        self.watch_sources: dict[str, WatchSource] = {}
        self.providers: dict[str, dict[str, Provider]] = {}  # kind -> name -> provider
        self.routes: dict[str, Route] = {}  # name -> route
        self.inbound_handlers: list[Any] = []
        # ("tool" | "route" | "provider", its name) -> the plugin that declared it ("kernel": the kernel's own)
        self.owners: dict[tuple[str, str], str] = {}
        self._declaring = "kernel"
        self.operator_pages: dict[str, OperatorPage] = {}  # name -> page, in registration order

    def collect(self, pm: pluggy.PluginManager, context: PluginContext) -> None:
        """Ask every plugin for its declarations (a misspelled hook fails `check_pending`, a
        plain-function `startup`/`shutdown` fails here: they are awaited)."""
        pm.check_pending()
        for hook_name in LIFECYCLE_HOOKS:
            for impl in getattr(pm.hook, hook_name).get_hookimpls():
                if not inspect.iscoroutinefunction(impl.function):
                    raise StartupError(
                        f"plugin {impl.plugin_name!r}: its {hook_name} hook must be an `async def` (the service awaits it)"
                    )
        for registry in (
            self.tools,
            self.tools_by_path,
            self.settings,
            self.data_sources,
            self.backend_factories,
            self.watch_sources,
            self.providers,
            self.routes,
            self.operator_pages,
        ):
            registry.clear()
        self._families.clear()
        self._family_values.clear()
        self.periodic_tasks.clear()
        self.inbound_handlers.clear()
        self.owners.clear()
        self._declare(pm, "register_tools", register=self._add_tool, context=context)
        pm.hook.register_data_sources(register=self._add_source)
        pm.hook.register_settings(register=self._add_setting)
        self._declare(pm, "register_providers", register=self._add_provider)
        pm.hook.register_settlement_backends(register=self._add_backend)
        pm.hook.register_periodic_tasks(register=self.periodic_tasks.append)
        pm.hook.register_watch_sources(register=self._add_watch_source)
        self._declare(pm, "register_routes", register=self._add_route)
        pm.hook.register_inbound_handlers(register=self.inbound_handlers.append)
        pm.hook.register_operator_pages(register=self._add_operator_page)

    def _add_operator_page(self, page: OperatorPage) -> None:
        if not isinstance(page, OperatorPage):
            raise StartupError(f"register_operator_pages received {page!r}, not a tollway.OperatorPage")
        if page.name in self.operator_pages:
            raise StartupError(f"duplicate operator page {page.name!r}: two plugins declare it")
        self.operator_pages[page.name] = page

    def _declare(self, pm: pluggy.PluginManager, hook_name: str, **kwargs: Any) -> None:
        """Call a register hook as pluggy does (each implementation, last registered first),
        one plugin at a time, so what each declares is noted as its own (`owners`)."""
        hook = getattr(pm.hook, hook_name)
        impls = hook.get_hookimpls()
        if any(impl.hookwrapper or impl.wrapper for impl in impls):  # pluggy's own call, unattributed
            hook(**kwargs)
            return
        try:
            for impl in reversed(impls):
                self._declaring = impl.plugin_name
                extra = {name: kwargs[name] for name in impl.kwargnames if name in kwargs}
                impl.function(*(kwargs[name] for name in impl.argnames), **extra)
        finally:
            self._declaring = "kernel"

    def _add_route(self, route: Route) -> None:
        if not isinstance(route, Route):
            raise StartupError(f"register_routes received {route!r}, not a tollway.Route")
        taken_names = {n: r.name for r in self.routes.values() for n in _names(r)} | {n: n for n in self.tools}
        taken_paths = {p: r.name for r in self.routes.values() for p in _paths(r)}
        taken_paths |= {("POST", t.path): t.name for t in self.tools.values()}
        for name in _names(route):
            if name in taken_names:
                raise StartupError(f"duplicate route or tool name {name!r}: {taken_names[name]} and {route.name}")
        for method, path in _paths(route):
            if (method, path) in taken_paths:
                raise StartupError(f"duplicate route {method} {path}: {taken_paths[method, path]} and {route.name}")
        if route.host is not None and self.settings.get(route.host.env_var) != route.host:
            raise StartupError(
                f"route {route.name} is served on the host of {route.host.env_var}: register that setting with register_settings"
            )
        self.routes[route.name] = route
        self.owners["route", route.name] = self._declaring

    def add_kernel_tool(self, tool: Tool) -> None:
        """A tool the kernel itself provides (Changes, Benchmark), checked like a plugin's."""
        self._add_tool(tool)

    def _add_watch_source(self, source: WatchSource) -> None:
        if not isinstance(source, WatchSource):
            raise StartupError(f"register_watch_sources received {source!r}, not a tollway.WatchSource")
        if source.attribute in self.watch_sources:
            raise StartupError(f"duplicate watch source {source.attribute!r}")
        self.watch_sources[source.attribute] = source

    def _add_tool(self, tool: Tool) -> None:
        if not isinstance(tool, Tool):
            raise StartupError(f"register_tools received {tool!r}, not a tollway.Tool")
        if tool.name in self.tools:
            raise StartupError(f"duplicate tool name {tool.name!r}: two plugins declare it")
        if tool.path in self.tools_by_path:
            raise StartupError(
                f"duplicate tool path {tool.path!r}: {self.tools_by_path[tool.path].name} and {tool.name}"
            )
        self.tools[tool.name] = tool
        self.tools_by_path[tool.path] = tool
        self.owners["tool", tool.name] = self._declaring

    def _add_setting(self, setting: Setting) -> None:
        if setting.env_var in self.settings:
            raise StartupError(f"duplicate setting {setting.env_var}")
        self.settings[setting.env_var] = setting
        self._families.setdefault(setting.family, []).append(setting)
        self._family_values.pop(setting.family, None)

    def _add_provider(self, provider: Provider) -> None:
        if not isinstance(provider, Provider):
            raise StartupError(f"register_providers received {provider!r}, not a tollway.Provider")
        of_kind = self.providers.setdefault(provider.kind, {})
        if provider.name in of_kind:
            raise StartupError(f"duplicate provider {provider.kind}/{provider.name}")
        if not of_kind:  # the first of its kind brings TOLLWAY_<KIND>_PROVIDER
            self._add_setting(choice_setting(provider.kind))
        of_kind[provider.name] = provider
        self.owners["provider", f"{provider.kind}/{provider.name}"] = self._declaring
        for setting in provider.settings:
            self._add_setting(setting)

    def _add_backend(self, name: str, factory: Any) -> None:
        # First registration wins: pluggy calls later-registered plugins first,
        # and the built-in backends are trylast, so a plugin can override them.
        self.backend_factories.setdefault(name, factory)

    def _add_source(self, source: DataSource) -> None:
        if source.name in self.data_sources:
            raise StartupError(f"duplicate data source {source.name!r}")
        self.data_sources[source.name] = source

    def secret_values(self) -> list[str]:
        """The values the operator set for settings marked secret (what `redact` removes from texts shown)."""
        return [v for env_var, s in self.settings.items() if s.secret and (v := self.plugin_env.get(env_var))]

    def family_settings(self, family: str) -> Mapping[str, str]:
        """The family's settings by name, defaults included (unset ones without a default are
        absent); a read-only mapping, the same one each time until a setting is declared."""
        values = self._family_values.get(family)
        if values is None:
            out: dict[str, str] = {}
            # by family, not by variable prefix: TOLLWAY_AIR_ also starts TOLLWAY_AIR_QUALITY_*
            for setting in self._families.get(family, ()):
                value = self.plugin_env.get(setting.env_var, setting.default)
                if value is not None:
                    out[setting.name] = value
            values = self._family_values[family] = MappingProxyType(out)
        return values


async def start_plugins(pm: pluggy.PluginManager, context: PluginContext) -> None:
    """Await every plugin's `startup` in pluggy's order; the first failure stops start-up."""
    pending: list[Awaitable[None]] = pm.hook.startup(context=context)
    try:
        for index, started in enumerate(pending):
            await started
    finally:  # the ones not reached after a failure are never run
        for left in pending[index + 1 :] if pending else ():
            left.close()  # type: ignore[attr-defined]


async def stop_plugins(pm: pluggy.PluginManager, context: PluginContext) -> None:
    """Await every plugin's `shutdown`; a failing one is logged and the others still run."""
    for stopping in pm.hook.shutdown(context=context):
        try:
            await stopping
        except Exception:
            log.exception("a plugin's shutdown hook failed")


def _names(route: Route) -> list[str]:
    """A route's operation ids: its own and each alias's."""
    return [route.name, *(a.name for a in route.aliases)]


def _paths(route: Route) -> list[tuple[str, str]]:
    """The (method, path) pairs a route answers: its path and each alias's."""
    return [(route.method, route.path), *((route.method, a.path) for a in route.aliases)]
