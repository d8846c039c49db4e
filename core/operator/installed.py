"""`Installed`: what this service runs and how its providers stand, for the operator (the
console's plugins page, `tollway plugins`, `tollway doctor`): each plugin with its
distribution, tools and routes, the plugins that failed to load, each provider kind's
status (missing settings by name, never a value) and the providers' health checks, every
error text redacted."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Iterable, Mapping
from importlib import metadata

import pluggy

from tollway._core.basics.json_values import JSONObject
from tollway._core.basics.money import usdc
from tollway._core.basics.redaction import redact
from tollway._core.plugin_api.context import PluginContext
from tollway._core.plugin_api.providers import Providers
from tollway._core.registry import Registry

HEALTH_TIMEOUT_S = 5.0  # the console's check of every provider; doctor passes its own


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Top-level package -> the installed distributions providing it (read once per process)."""
    return metadata.packages_distributions()


def distribution_of(plugin: object) -> tuple[str | None, str | None]:
    """The installed distribution (name, version) a plugin object's package belongs to, or (None, None)."""
    module = plugin.__name__ if inspect.ismodule(plugin) else type(plugin).__module__
    names = _distributions().get(module.split(".")[0]) or []
    for name in names:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None, None


async def bounded(check: Awaitable[str | None], timeout_s: float) -> str | None:
    """A health check's outcome: None when it passes, else what failed (a check that raises
    or outlasts `timeout_s` fails with that)."""
    try:
        return await asyncio.wait_for(check, timeout_s)
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except Exception as exc:  # noqa: BLE001 - a failing check is its finding
        return f"{type(exc).__name__}: {exc}"


async def provider_health(
    providers: Providers,
    kinds: Iterable[str],
    context: PluginContext,
    *,
    timeout_s: float,
    secrets: Iterable[str] = (),
) -> dict[str, str | None]:
    """Each kind's health check, run together: None when it passes, else what failed, redacted."""
    kinds = list(kinds)
    outcomes = await asyncio.gather(*(bounded(providers.check(kind, context), timeout_s) for kind in kinds))
    hidden = list(secrets)
    return {kind: None if found is None else redact(found, hidden) for kind, found in zip(kinds, outcomes, strict=True)}


class Installed:
    """The operator's view of the plugins and providers of one service."""

    def __init__(
        self,
        *,
        pm: pluggy.PluginManager,
        registry: Registry,
        failures: Mapping[str, str],
        providers: Providers,
        context: PluginContext,
    ) -> None:
        self.pm = pm
        self.registry = registry
        self.failures = failures  # plugin name -> why it did not load
        self.providers = providers
        self.context = context  # the started service's: its HTTP client and settings

    def plugins(self) -> JSONObject:
        """`{plugins: [...], failures: [{plugin, error}]}`: each registered plugin with its
        distribution and version, tools (name, path, price, category, mode), routes count and
        providers (`kind/name`),
        then the kernel's own tools; the failures' texts redacted."""
        owners = self.registry.owners
        tools: dict[str, list[JSONObject]] = {}
        for tool in sorted(self.registry.tools.values(), key=lambda t: t.path):
            price = tool.fixed_price
            tools.setdefault(owners.get(("tool", tool.name), "kernel"), []).append(
                {
                    "name": tool.name,
                    "path": tool.path,
                    "price": "by input" if price is None else usdc(price),
                    "category": tool.category,
                    "mode": tool.mode,
                }
            )
        routes: dict[str, int] = {}
        providers: dict[str, list[str]] = {}
        for (what, name), owner in owners.items():
            if what == "route":
                routes[owner] = routes.get(owner, 0) + 1
            elif what == "provider":
                providers.setdefault(owner, []).append(name)
        plugins: list[JSONObject] = []
        for name, plugin in sorted(self.pm.list_name_plugin(), key=lambda pair: str(pair[0])):
            if plugin is None:  # blocked
                continue
            distribution, version = distribution_of(plugin)
            plugins.append(
                {
                    "plugin": name,
                    "distribution": distribution,
                    "version": version,
                    "tools": tools.get(name, []),
                    "routes": routes.get(name, 0),
                    "providers": sorted(providers.get(name, [])),
                }
            )
        if tools.get("kernel") or routes.get("kernel"):
            plugins.append(
                {
                    "plugin": "kernel",
                    "distribution": None,
                    "version": None,
                    "tools": tools.get("kernel", []),
                    "routes": routes.get("kernel", 0),
                    "providers": [],
                }
            )
        hidden = self.registry.secret_values()
        failures: list[JSONObject] = [
            {"plugin": name, "error": redact(error, hidden)} for name, error in sorted(self.failures.items())
        ]
        return {"plugins": plugins, "failures": failures}

    def _kinds(self) -> tuple[str, ...]:
        return tuple(t.provider_kind for t in self.registry.tools.values() if t.provider_kind)

    def provider_status(self) -> list[JSONObject]:
        """Each provider kind (registered, or needed by a tool): the chosen provider, whether it
        is configured, the settings missing (their variables' names), the installed ones, why not."""
        return [
            {
                "kind": s.kind,
                "provider": s.provider,
                "configured": s.configured,
                "unset_settings": list(s.unset_settings),
                "available": list(s.available),
                "problem": s.problem,
            }
            for s in self.providers.statuses(also=self._kinds())
        ]

    async def check_providers(self, timeout_s: float = HEALTH_TIMEOUT_S) -> list[JSONObject]:
        """Each configured kind's health check, run now: `[{kind, provider, ok, error}]`, the error redacted."""
        configured = [s for s in self.providers.statuses(also=self._kinds()) if s.configured]
        found = await provider_health(
            self.providers,
            [s.kind for s in configured],
            self.context,
            timeout_s=timeout_s,
            secrets=self.registry.secret_values(),
        )
        return [
            {"kind": s.kind, "provider": s.provider, "ok": found[s.kind] is None, "error": found[s.kind]}
            for s in configured
        ]


__all__ = ["HEALTH_TIMEOUT_S", "Installed", "bounded", "distribution_of", "provider_health"]
