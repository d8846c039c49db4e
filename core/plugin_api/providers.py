"""Providers (docs/providers.md): the commercial or self-hosted services a tool reaches
through a client a plugin declares (search, llm, email, ...), which one is chosen for
each kind, whether it is configured, and what a call through it costs us."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping

import httpx

from tollway._core.basics.money import to_micro
from tollway._core.plugin_api.context import PluginContext
from tollway._core.plugin_api.settings_spec import Setting, setting_value

_KIND = re.compile(r"^[a-z][a-z0-9_]{1,30}$")
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,30}$")

# What a call through the provider costs us: micro-USDC, a USDC decimal string, or a
# function of the kind's settings (a price the operator sets for their plan).
CostEstimate = int | str | Callable[[Mapping[str, str]], int]


@dataclasses.dataclass(frozen=True)
class Provider:
    """One implementation of a kind of provider, declared through `register_providers`.

    `settings` are of the family named by the kind (`TOLLWAY_<KIND>_<NAME>`) and are
    registered with the provider; `requires` are those it cannot work without (an API key,
    a base URL without a default). `build(settings, http)` makes the client a tool uses,
    from the kind's settings by name and the service's shared HTTP client.
    The client is of the duck type the kind's tools agree on (an object with `search`, with
    `send`, ...): the kernel only hands it on, `ctx.provider(kind)` gives it as `object`.
    `health(context)` (optional, given the `PluginContext`) checks the provider answers: it returns None when it
    does and a short reason when not. `cost_estimate` is what one call through it costs
    us, stored beside the receipt, never served or signed.
    """

    kind: str
    name: str
    build: Callable[[Mapping[str, str], httpx.AsyncClient], object]
    settings: tuple[Setting, ...] = ()
    requires: tuple[Setting, ...] = ()
    cost_estimate: CostEstimate = 0
    health: Callable[[PluginContext], Awaitable[str | None]] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not _KIND.match(self.kind):
            raise ValueError(f"provider kind {self.kind!r} must be lower_snake_case")
        if not _NAME.match(self.name) or self.name == "provider":
            raise ValueError(f"provider name {self.name!r} must be lower_snake_case (and not 'provider')")
        if any(s.family != self.kind for s in self.settings):
            raise ValueError(f"provider {self.kind}/{self.name}: its settings must be of the family {self.kind!r}")
        if not set(self.requires) <= set(self.settings):
            raise ValueError(f"provider {self.kind}/{self.name}: required settings must be among its settings")
        if isinstance(self.cost_estimate, str):
            object.__setattr__(self, "cost_estimate", to_micro(self.cost_estimate))
        if isinstance(self.cost_estimate, int) and self.cost_estimate < 0:
            raise ValueError(f"provider {self.kind}/{self.name}: cost_estimate must not be negative")

    def unset(self, settings: Mapping[str, str]) -> list[str]:
        """The variables of required settings that `settings` leaves unset."""
        return [s.env_var for s in self.requires if setting_value(settings, s) is None]

    def cost(self, settings: Mapping[str, str]) -> int:
        cost = self.cost_estimate(settings) if callable(self.cost_estimate) else self.cost_estimate
        if not isinstance(cost, int) or isinstance(cost, bool) or cost < 0:
            raise ValueError(
                f"provider {self.kind}/{self.name}: cost_estimate must give a nonnegative int of micro-USDC"
            )
        return cost


def choice_setting(kind: str) -> Setting:
    """`TOLLWAY_<KIND>_PROVIDER`: which registered provider of the kind tools use."""
    return Setting(
        kind, "provider", None,
        f"Which {kind} provider tools use, by name. Unset: the only {kind} provider installed, or the only one configured.",
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ProviderStatus:
    """What `tollway plugins` and `/healthz` say of one kind (never a setting's value)."""

    kind: str
    provider: str | None  # the chosen provider's name, None when none is chosen
    configured: bool
    unset_settings: list[str]  # the variables the operator must set
    available: list[str]  # names of the registered providers of the kind
    problem: str | None = None  # why it is not configured, in words


class Providers:
    """The registered providers by kind, the choice among them, and their clients."""

    def __init__(
        self, registered: Mapping[str, Mapping[str, Provider]], settings_of: Callable[[str], Mapping[str, str]]
    ) -> None:
        self.registered = registered
        self.settings_of = settings_of
        self._clients: dict[tuple[str, str], tuple[httpx.AsyncClient, object]] = {}  # (kind, name) -> (http, client)

    def kinds(self) -> list[str]:
        return sorted(self.registered)

    def chosen(self, kind: str) -> Provider | None:
        """The provider `TOLLWAY_<KIND>_PROVIDER` names; else the only one registered; else
        the only one the operator configured (setting SearXNG's URL alone is enough)."""
        available = self.registered.get(kind, {})
        settings = self.settings_of(kind)
        name = setting_value(settings, "provider")
        if name is not None:
            return available.get(name.lower())
        if len(available) == 1:
            return next(iter(available.values()))
        configured = [p for p in available.values() if not p.unset(settings)]
        return configured[0] if len(configured) == 1 else None

    def status(self, kind: str) -> ProviderStatus:
        available = sorted(self.registered.get(kind, {}))
        choice = choice_setting(kind).env_var
        provider = self.chosen(kind)
        if provider is None:
            named = setting_value(self.settings_of(kind), "provider")
            if not available:
                problem = f"no {kind} provider is installed (install one, then set {choice})"
            elif named is not None:
                problem = f"{choice} names {named!r}, which is not an installed {kind} provider (installed: {', '.join(available)})"
            else:
                problem = f"several {kind} providers are installed: set {choice} to one of {', '.join(available)}"
            return ProviderStatus(kind, None, False, [choice], available, problem)
        unset = provider.unset(self.settings_of(kind))
        problem = (
            f"the operator must set {' and '.join(unset)} for the {provider.name} {kind} provider" if unset else None
        )
        return ProviderStatus(kind, provider.name, not unset, unset, available, problem)

    def statuses(self, also: tuple[str, ...] = ()) -> list[ProviderStatus]:
        """Every kind with a registered provider, and the kinds in `also` (needed by a tool)."""
        return [self.status(kind) for kind in sorted(set(self.registered) | set(also))]

    def client(self, kind: str, http: httpx.AsyncClient) -> tuple[object, int]:
        """The chosen provider's client (built once per HTTP client) and the cost of one call.

        Raises LookupError when the kind has no configured provider.
        """
        state = self.status(kind)
        if not state.configured or state.provider is None:
            raise LookupError(state.problem or f"no {kind} provider is configured")
        provider = self.registered[kind][state.provider]
        settings = self.settings_of(kind)
        cached = self._clients.get((kind, provider.name))
        if cached is None or cached[0] is not http:  # a restarted service has a new client
            cached = self._clients[(kind, provider.name)] = (http, provider.build(settings, http))
        return cached[1], provider.cost(settings)

    async def check(self, kind: str, context: PluginContext) -> str | None:
        """None when the chosen provider is configured and its health check (if any) passes;
        else the reason, in words."""
        state = self.status(kind)
        if not state.configured or state.provider is None:
            return state.problem
        provider = self.registered[kind][state.provider]
        if provider.health is None:
            return None
        try:
            return await provider.health(context)
        except Exception as exc:  # a health check must never take the caller down
            return f"{type(exc).__name__}: {exc}"


__all__ = ["CostEstimate", "Provider", "ProviderStatus", "Providers", "choice_setting"]
