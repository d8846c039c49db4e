"""The kernel: plugin manager, registries of tools/backends/settings, lifecycle,
and the services built from them.

Fronts hold one `Kernel` and call its services: `paid_calls` (the one paid-call
pipeline, docs/architecture.md), `accounts`, `reads`, `watches` (the resource),
`watch_polling` and `watch_deliveries`, `job_runner`, `refunds`, `rate_gate` and
`webhooks` (the webhook sender, docs/webhooks.md). Each service gets what it uses in
its constructor.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pluggy

from tollway._core import builtin
from tollway._core.auth import shared_settings
from tollway._core.auth.agents import AgentDirectory
from tollway._core.auth.auth import Authenticator
from tollway._core.auth.tokens import AccessTokens
from tollway._core.basics.events import EventBus, LocalEventBus
from tollway._core.basics.redaction import redact, secret_named_values
from tollway._core.calls.delegated import DelegatedCalls
from tollway._core.calls.idempotency import IdempotencyStore
from tollway._core.calls.pipeline import PaidCalls
from tollway._core.calls.rate_identity import RateGate
from tollway._core.calls.ratelimits import DEFAULT_LIMITS, RateLimiter
from tollway._core.calls.tool_runner import ToolRunner
from tollway._core.config import KernelConfig
from tollway._core.credits.accounts import Accounts
from tollway._core.credits.payouts import Payouts
from tollway._core.credits.reconciler import Reconciler
from tollway._core.credits.refunds import Refunds
from tollway._core.credits.sales import Sales
from tollway._core.credits.top_ups import TopUps
from tollway._core.history.tools import kernel_tools
from tollway._core.housekeeping import housekeeping_tasks
from tollway._core.jobs.agent_reads import AgentReads
from tollway._core.jobs.job_runner import JobRunner
from tollway._core.jobs.parked import ParkedJobs
from tollway._core.messages.content_safety import Rules
from tollway._core.messages.inbound import Inbound
from tollway._core.operator.installed import Installed
from tollway._core.payments.gateway import X402Gateway
from tollway._core.payments.networks import Network, get_network
from tollway._core.payments.settlement import BackendServices, SettlementBackend
from tollway._core.platform import KernelPlatform
from tollway._core.plugin_api import hookspecs
from tollway._core.plugin_api.context import PluginContext
from tollway._core.plugin_api.datasources import DataSource
from tollway._core.plugin_api.periodic import PeriodicTask
from tollway._core.plugin_api.providers import Providers
from tollway._core.plugin_api.routes import Route, RouteRunner
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Tool, ToolContexts
from tollway._core.plugin_api.upstream_cache import UpstreamCache
from tollway._core.receipts.receipt_signing import ReceiptSigner
from tollway._core.receipts.receipts import ReceiptBook
from tollway._core.registry import Registry, StartupError, start_plugins, stop_plugins
from tollway._core.watches import resume as watch_resume
from tollway._core.watches.delivery import WatchDeliveries
from tollway._core.watches.polling import WatchPolling, watch_poll_tasks
from tollway._core.watches.resource import Watches
from tollway._core.watches.sources import WatchSource
from tollway._core.webhooks.outbox import WebhookSender

log = logging.getLogger("tollway.kernel")


# Services that need the HTTP client or the settlement backend exist once started.
_BUILT_AT_START = frozenset(
    {
        "paid_calls",
        "accounts",
        "job_runner",
        "gateway",
        "top_ups",
        "reconciler",
        "backend",
        "http",
        "webhooks",
        "platform",
        "delegated",
        "payouts",
        "tool_runner",
    }
)


class Kernel:
    """Holds the registries and builds the services; starts and stops them."""

    paid_calls: PaidCalls
    accounts: Accounts
    job_runner: JobRunner
    backend: SettlementBackend
    gateway: X402Gateway
    top_ups: TopUps
    reconciler: Reconciler
    http: httpx.AsyncClient
    platform: KernelPlatform
    webhooks: WebhookSender

    def __init__(
        self,
        config: KernelConfig,
        db: Any,
        *,
        plugins: Iterable[tuple[str, object]] = (),
        http_transport: httpx.AsyncBaseTransport | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.config = config
        self.db = db
        self.network: Network = get_network(config.network)
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.pm.register(builtin, name="tollway.builtin")
        for name, plugin in plugins:
            self.pm.register(plugin, name=name)
        self.plugin_failures: dict[str, str] = {}
        self.http_transport = http_transport
        self.events: EventBus = events or LocalEventBus()
        watch_resume.subscribe()  # the ledger's "credits changed" event resumes credit-paused watches
        # What the plugins declared; the kernel's names are the registry's own (refilled in place).
        self.registry = Registry(config.plugin_env)
        self.tools: dict[str, Tool] = self.registry.tools
        self.tools_by_path: dict[str, Tool] = self.registry.tools_by_path
        self.settings: dict[str, Setting] = self.registry.settings
        self.periodic_tasks: list[PeriodicTask] = self.registry.periodic_tasks
        self.data_sources: dict[str, DataSource] = self.registry.data_sources
        self.backend_factories: dict[str, Any] = self.registry.backend_factories
        self.watch_sources: dict[str, WatchSource] = self.registry.watch_sources
        self.routes: dict[str, Route] = self.registry.routes
        # What every plugin hook, task, tool and route is handed; its http and platform once started.
        self.context = PluginContext(home=Path(config.home), offline=config.offline, settings_of=self.family_settings)
        self.providers = Providers(self.registry.providers, self.family_settings)
        self.agents = AgentDirectory()
        self.receipts = ReceiptBook(ReceiptSigner(config.receipt_seed))
        self.auth = Authenticator(
            agents=self.agents,
            chain_id=self.network.chain_id,
            enforce_read_proofs=config.proof_enforcement == "enforce",
            operator_token=config.operator_token,
        )
        self.rate_limiter = RateLimiter(
            config.rate_limits or DEFAULT_LIMITS, shared=getattr(db, "kind", "sqlite") == "postgres"
        )
        self.idempotency = IdempotencyStore(config.idempotency_ttl_s, config.idempotency_lease_s)
        self.rate_gate = RateGate(limiter=self.rate_limiter, auth=self.auth, network=self.network)
        self.refunds = Refunds(db=db, receipts=self.receipts)
        self.route_runner = RouteRunner(auth=self.auth, rate_gate=self.rate_gate)
        self.route_runner.kernel = self  # the kernel's own routes reach its services
        self.inbound = Inbound(self.registry.inbound_handlers)
        self.reads = AgentReads(auth=self.auth, receipts=self.receipts, tools=self.tools)
        self.watch_deliveries = WatchDeliveries(db=db, receipts=self.receipts, events=self.events)
        self.watch_polling = WatchPolling(
            db=db, sources=self.watch_sources, events=self.events, services=lambda: self.context, auth=self.auth
        )
        self.watches = Watches(
            db=db,
            auth=self.auth,
            sources=self.watch_sources,
            events=self.events,
            price_per_change=config.watch_price_per_change,
            allow_insecure_webhooks=config.webhooks_allow_insecure,
        )
        self.started = False
        self.shared_setting_differences: list[shared_settings.Difference] = []

    def __getattr__(self, name: str) -> Any:  # only for attributes not set yet
        if name in _BUILT_AT_START:
            raise AttributeError(f"Kernel.{name} exists once the kernel has started (await kernel.start())")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- registries -------------------------------------------------------------
    def collect(self) -> None:
        """Ask every plugin for its declarations, then add the kernel's own periodic tasks."""
        self.registry.collect(self.pm, self.context)
        for tool in kernel_tools(self.tools, self.watch_sources):
            self.registry.add_kernel_tool(tool)
        self.periodic_tasks.extend(watch_poll_tasks(self.watch_polling, self.config.watch_poll_interval_s))
        self.periodic_tasks.extend(
            housekeeping_tasks(
                rate_limiter=self.rate_limiter,
                idempotency=self.idempotency,
                reconcile=self._reconcile,
                reconcile_interval_s=self.config.reconcile_interval_s,
            )
        )

    async def _reconcile(self) -> None:
        if self.started:
            await self.reconciler.run_once()
            await self.payouts.resolve_stale(self.config.reconcile_after_s)

    def family_settings(self, family: str) -> Mapping[str, str]:
        return self.registry.family_settings(family)

    def shared_fingerprints(self) -> dict[str, str]:
        """This process's fingerprints of the settings every process must share."""
        return shared_settings.for_config(self.config, self.receipts.signer.key_id)

    # -- lifecycle ---------------------------------------------------------------
    async def start(self) -> None:
        if self.started:
            return
        self.collect()
        await self.db.connect()
        await self.db.migrate(self.pm)
        await self.receipts.publish_key()
        self.shared_setting_differences = await shared_settings.record(self.shared_fingerprints())
        backend_name = self.config.settlement_backend or ("local" if self.network.name == "local" else "facilitator")
        if backend_name not in self.backend_factories:
            raise StartupError(f"unknown settlement backend {backend_name!r}; known: {sorted(self.backend_factories)}")
        await self.events.start()
        self.http = httpx.AsyncClient(transport=self.http_transport, timeout=httpx.Timeout(15.0), follow_redirects=True)
        self.backend = self.backend_factories[backend_name](
            BackendServices(
                network=self.network,
                http=self.http,
                db=self.db,
                facilitator_url=self.config.facilitator_url,
                facilitator_timeout_s=self.config.facilitator_timeout_s,
                chain_rpc_url=self.config.chain_rpc_url,
            )
        )
        self._build_services()
        self.webhooks = WebhookSender(
            db=self.db,
            events=self.events,
            retry_base_s=self.config.webhook_retry_base_s,
            allow_insecure=self.config.webhooks_allow_insecure,
        )
        self.platform = KernelPlatform(
            db=self.db,
            events=self.events,
            allow_insecure_webhooks=self.config.webhooks_allow_insecure,
            settings_of=self.family_settings,
            http=self.http,
            providers=self.providers,
            inbound=self.inbound,
            refunds=self.refunds,
            delegated=self.delegated,
            receipts=self.receipts,
            parked=ParkedJobs(self.job_runner),
            sales=Sales(db=self.db, receipts=self.receipts),
            payouts=self.payouts,
            accounts=self.accounts,
            operator_token_check=self.auth.is_operator_token,
            tokens=AccessTokens(self.auth),
            installed=Installed(
                pm=self.pm,
                registry=self.registry,
                failures=self.plugin_failures,
                providers=self.providers,
                context=self.context,
            ),
            pages=self.registry.operator_pages,
        )
        self.route_runner.platform = self.inbound.platform = self.platform
        self.context.bind(http=self.http, platform=self.platform)
        self.started = True
        await start_plugins(self.pm, self.context)

    def _build_services(self) -> None:
        """The services that need the HTTP client and the settlement backend, each given what it uses."""
        config = self.config
        contexts = ToolContexts(
            http=self.http,
            family_settings=self.family_settings,
            providers=self.providers,
            upstream_cache=UpstreamCache(self.config.upstream_cache_s) if self.config.upstream_cache_s > 0 else None,
            content_rules=Rules.from_env(config.plugin_env),
            plugin=self.context,
        )
        self.gateway = X402Gateway(
            network=self.network,
            pay_to=config.pay_to,
            backend=self.backend,
            db=self.db,
            quote_ttl_s=config.quote_ttl_s,
            quote_secret=config.receipt_seed,
        )
        self.top_ups = TopUps(db=self.db, gateway=self.gateway, agents=self.agents, receipts=self.receipts)
        self.reconciler = Reconciler(
            db=self.db,
            tools=self.tools,
            agents=self.agents,
            receipts=self.receipts,
            refunds=self.refunds,
            gateway=self.gateway,
            top_ups=self.top_ups,
            events=self.events,
            reconcile_after_s=config.reconcile_after_s,
            reconcile_interval_s=config.reconcile_interval_s,
        )
        self.tool_runner = ToolRunner(
            contexts=contexts, watch_sources=self.watch_sources
        )  # paid calls, jobs and goal steps
        self.paid_calls = PaidCalls(
            db=self.db,
            tools=self.tools,
            network=self.network,
            auth=self.auth,
            agents=self.agents,
            receipts=self.receipts,
            refunds=self.refunds,
            idempotency=self.idempotency,
            rate_gate=self.rate_gate,
            gateway=self.gateway,
            events=self.events,
            contexts=contexts,
            runner=self.tool_runner,
        )
        self.job_runner = JobRunner(
            db=self.db,
            tools=self.tools,
            receipts=self.receipts,
            refunds=self.refunds,
            events=self.events,
            contexts=contexts,
            runner=self.tool_runner,
        )
        self.payouts = Payouts(db=self.db, backend=self.backend, network=self.network, key=config.payout_key)
        self.delegated = DelegatedCalls(
            tools=self.tools, contexts=contexts, receipts=self.receipts, runner=self.tool_runner
        )
        self.accounts = Accounts(
            db=self.db,
            auth=self.auth,
            agents=self.agents,
            network=self.network,
            backend=self.backend,
            top_ups=self.top_ups,
            reconciler=self.reconciler,
            access_token_ttl_s=config.access_token_ttl_s,
        )

    async def stop(self) -> None:
        if not self.started:
            return
        await stop_plugins(self.pm, self.context)
        await self.http.aclose()
        await self.webhooks.aclose()
        await self.events.stop()
        await self.db.close()
        self.started = False


def report_plugin_failure(kernel: Kernel, name: str, exc: BaseException) -> None:
    """Record and print why a plugin did not load, redacted: an import error may quote a setting's
    value (a failing plugin's own secret settings are not registered yet, so every setting whose
    name says it is secret counts too)."""
    hidden = [*kernel.registry.secret_values(), *secret_named_values(kernel.registry.plugin_env)]
    text = redact(str(exc), hidden)
    kernel.plugin_failures[name] = f"{type(exc).__name__}: {text}"
    print(f"tollway: plugin {name!r} failed to load and was skipped: {text}", file=sys.stderr)
