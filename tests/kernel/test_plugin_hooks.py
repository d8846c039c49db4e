"""Meta-tests that keep the plugin API honest, and a test for every hook.

Every hookspec in `core.hookspecs` must be documented in docs/plugins.md with its
exact arguments, and must have at least one test here marked `@exercises(hook)`.
The hook tests register inline plugin classes on a fresh kernel (`kernel_factory`);
the entry-point tests load a throwaway distribution from a temporary folder on
sys.path, so nothing is ever installed.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import importlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pluggy
import pytest
from eth_account import Account

from tests.support.echo_plugin import EchoInput, EchoOutput, run_echo
from tollway._core.credits import account_routes
from tollway._core.history.tools import kernel_tools
from tollway._core.jobs import read_routes
from tollway._core.kernel import StartupError
from tollway._core.payments.settlement import SettlementResult
from tollway._core.plugin_api import hookspecs
from tollway._core.plugin_api.context import PluginContext, StateKey
from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._core.plugin_api.periodic import PeriodicTask
from tollway._core.plugin_api.providers import Provider
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Tool
from tollway._core.receipts import value_tags
from tollway._core.receipts.tables import Receipt
from tollway._core.watches import routes as watch_routes
from tollway._runtime.cli import main as cli_main
from tollway._runtime.plugins import PluginLoadError, load_entry_point_plugins
from tollway.testing import http_client, pay_402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


# -- which hook each test exercises -------------------------------------------------
def exercises(*hooks: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a test as exercising these hooks (read by `test_every_hook_has_a_test`)."""

    def mark(test: Callable[..., Any]) -> Callable[..., Any]:
        test.exercises = hooks  # type: ignore[attr-defined]
        return test

    return mark


def hook_specs() -> dict[str, list[str]]:
    """Every hookspec in core.hookspecs, with its argument names in order."""
    marker = f"{hookspecs.PROJECT}_spec"
    return {
        name: list(inspect.signature(fn).parameters)
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, marker)
    }


def test_hookspecs_are_found() -> None:
    assert {"register_tools", "register_settings", "startup", "shutdown"} <= set(hook_specs())


def documented_hooks() -> dict[str, list[str]]:
    """Hooks documented in docs/plugins.md as headings like ### `register_tools(register)`."""
    found: dict[str, list[str]] = {}
    for match in re.finditer(r"^#{2,4} `(\w+)\(([^)`]*)\)`", DOCS.read_text(), flags=re.M):
        found[match.group(1)] = [a.strip() for a in match.group(2).split(",") if a.strip()]
    return found


def test_every_hook_is_documented_with_its_exact_arguments() -> None:
    documented = documented_hooks()
    for name, args in hook_specs().items():
        assert name in documented, f"docs/plugins.md has no heading `{name}(...)`"
        assert documented[name] == args, (
            f"docs/plugins.md documents {name}({', '.join(documented[name])}), the hook specification is {name}({', '.join(args)})"
        )
    assert set(documented) <= set(hook_specs()), (
        f"docs/plugins.md documents hooks that do not exist: {set(documented) - set(hook_specs())}"
    )


def test_every_hookspec_documents_each_argument() -> None:
    marker = f"{hookspecs.PROJECT}_spec"
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if hasattr(fn, marker):
            for arg in inspect.signature(fn).parameters:
                assert f":param {arg}:" in (fn.__doc__ or ""), f"{name} does not document {arg}"


def test_every_hook_has_a_test() -> None:
    covered = {hook for obj in list(globals().values()) for hook in getattr(obj, "exercises", ())}
    missing = set(hook_specs()) - covered
    assert not missing, f"hooks without a test here: {sorted(missing)}"
    unknown = covered - set(hook_specs())
    assert not unknown, f"tests claim to exercise hooks that do not exist: {sorted(unknown)}"


# -- inline plugins ------------------------------------------------------------------
def make_tool(name: str, path: str) -> Tool:
    return Tool(
        name=name,
        path=path,
        title=name,
        description="A test tool.",
        category="data",
        input_type=EchoInput,
        output_type=EchoOutput,
        run=run_echo,
        price="0.001",
        family="hooks",
    )


class ToolsPlugin:
    def __init__(self, *tools: Tool) -> None:
        self.tools = tools

    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        for tool in self.tools:
            register(tool)


# -- register_tools ------------------------------------------------------------------
@exercises("register_tools")
async def test_hook_register_tools_declares_routes(kernel_factory) -> None:
    a = make_tool("hooks_alpha", "/v1/tools/hooks/alpha")
    b = make_tool("hooks_beta", "/v1/tools/hooks/beta")
    kernel = await kernel_factory(plugins=[("tools", ToolsPlugin(a, b))])
    assert kernel.tools["hooks_alpha"] is a and kernel.tools_by_path["/v1/tools/hooks/beta"] is b
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/hooks/alpha", json={"text": "hi"})
    assert resp.status_code == 402 and resp.json()["amount_usdc"] == "0.001000"


@exercises("register_tools")
async def test_a_tools_admit_payer_refuses_before_any_debit_or_settlement(kernel_factory) -> None:
    from tollway import Refusal
    from tollway.testing import count_receipts, credits_session

    asked: list[str] = []

    async def admit_payer(value: EchoInput, agent_id: str) -> None:
        asked.append(agent_id)
        if value.text == "no":
            raise Refusal("provider_unavailable", "not for you", status=503, details={"reason": "test"})

    tool = dataclasses.replace(make_tool("hooks_payer", "/v1/tools/hooks/payer"), admit_payer=admit_payer)
    kernel = await kernel_factory(plugins=[("tools", ToolsPlugin(tool))])
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        agent, auth = await credits_session(client, "1")
        quote = await client.post("/v1/tools/hooks/payer", json={"text": "no"})  # no payer yet: not asked
        refused = await client.post("/v1/tools/hooks/payer", json={"text": "no"}, headers=auth)
        fine = await client.post("/v1/tools/hooks/payer", json={"text": "yes"}, headers=auth)
        receipts = await count_receipts()
        by_wallet = await client.post(
            "/v1/tools/hooks/payer",
            json={"text": "no"},
            headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])},
        )
        wallet = (await client.get("/v1/balance", headers={"X-Agent-ID": payer.address})).json()
        credits = (await client.get("/v1/balance", headers=auth)).json()
        receipts_after = await count_receipts()
    assert quote.status_code == 402
    assert refused.status_code == 503 and refused.json()["details"] == {"reason": "test"}
    assert fine.status_code == 200 and credits["credits_balance"] == "0.999000"  # only the admitted call paid
    assert by_wallet.status_code == 503 and wallet["on_chain_balance"] == "1.000000" and receipts_after == receipts
    assert asked[:2] == [agent, agent] and len(asked) == 3


@exercises("register_tools")
async def test_hook_register_tools_duplicate_name_stops_startup(kernel_factory) -> None:
    first = ToolsPlugin(make_tool("hooks_same", "/v1/tools/hooks/one"))
    second = ToolsPlugin(make_tool("hooks_same", "/v1/tools/hooks/two"))
    kernel = await kernel_factory(plugins=[("first", first), ("second", second)], start=False)
    with pytest.raises(StartupError, match="duplicate tool name 'hooks_same'"):
        await kernel.start()
    assert not kernel.started


@exercises("register_tools")
async def test_hook_register_tools_duplicate_path_stops_startup(kernel_factory) -> None:
    first = ToolsPlugin(make_tool("hooks_one", "/v1/tools/hooks/same"))
    second = ToolsPlugin(make_tool("hooks_two", "/v1/tools/hooks/same"))
    kernel = await kernel_factory(plugins=[("first", first), ("second", second)], start=False)
    with pytest.raises(StartupError, match="duplicate tool path '/v1/tools/hooks/same'"):
        await kernel.start()


@exercises("register_tools")
async def test_hook_register_tools_refuses_what_is_not_a_tool(kernel_factory) -> None:
    class NotATool:
        @hookimpl
        def register_tools(self, register):
            register({"name": "hooks_dict"})

    kernel = await kernel_factory(plugins=[("bad", NotATool())], start=False)
    with pytest.raises(StartupError, match="not a tollway.Tool"):
        kernel.collect()


# -- register_settings ---------------------------------------------------------------
class SettingsPlugin:
    @hookimpl
    def register_settings(self, register: Callable[[Setting], None]) -> None:
        register(Setting("hooks", "api_url", "https://api.example.org", "Upstream base URL."))
        register(Setting("hooks", "units", "metric", "Unit system."))
        register(Setting("hooks", "token", None, "Optional upstream token."))


@exercises("register_settings")
async def test_hook_register_settings_reads_tollway_family_name_variables(kernel_factory) -> None:
    kernel = await kernel_factory(
        plugins=[("settings", SettingsPlugin())],
        env={"TOLLWAY_HOOKS_API_URL": "http://127.0.0.1:9/mirror", "TOLLWAY_HOOKS_TOKEN": "t0k"},
    )
    assert set(kernel.settings) == {"TOLLWAY_HOOKS_API_URL", "TOLLWAY_HOOKS_UNITS", "TOLLWAY_HOOKS_TOKEN"}
    assert kernel.family_settings("hooks") == {
        "api_url": "http://127.0.0.1:9/mirror",
        "units": "metric",
        "token": "t0k",
    }
    assert kernel.family_settings("other") == {}


@exercises("register_settings")
async def test_hook_register_settings_defaults_when_unset(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("settings", SettingsPlugin())])
    # a setting without a default and without a value is absent, not None
    assert kernel.family_settings("hooks") == {"api_url": "https://api.example.org", "units": "metric"}


@exercises("register_settings")
async def test_hook_register_settings_duplicate_stops_startup(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("a", SettingsPlugin()), ("b", SettingsPlugin())], start=False)
    with pytest.raises(StartupError, match="duplicate setting TOLLWAY_HOOKS_"):
        kernel.collect()


# -- register_providers ----------------------------------------------------------------
class Shouter:
    """A provider's client: what a tool of kind `hooks` calls."""

    def __init__(self, settings, http) -> None:
        self.volume = settings.get("loud_volume", "1")
        self.http = http

    async def shout(self, text: str) -> str:
        return text.upper() + "!" * int(self.volume)


LOUD_KEY = Setting("hooks", "loud_api_key", None, "The loud provider's key (test).", secret=True)
LOUD_VOLUME = Setting("hooks", "loud_volume", "1", "How many marks (test).")
LOUD = Provider(
    kind="hooks",
    name="loud",
    build=Shouter,
    settings=(LOUD_KEY, LOUD_VOLUME),
    requires=(LOUD_KEY,),
    cost_estimate="0.000042",
)


async def run_shout(value: EchoInput, ctx) -> EchoOutput:
    shouted = await ctx.provider("hooks").shout(value.text)
    return EchoOutput(result={"text": shouted}, evidence={"source": "loud"})


class ProvidersPlugin:
    def __init__(self, *providers: Provider) -> None:
        self.providers = providers

    @hookimpl
    def register_providers(self, register: Callable[[Provider], None]) -> None:
        for provider in self.providers:
            register(provider)


def shout_tool() -> Tool:
    return dataclasses.replace(make_tool("hooks_shout", "/v1/tools/hooks/shout"), run=run_shout, provider_kind="hooks")


@exercises("register_providers")
async def test_hook_register_providers_gives_tools_their_client_and_records_its_cost(kernel_factory) -> None:
    from tollway.testing import credits_session

    kernel = await kernel_factory(
        plugins=[("providers", ProvidersPlugin(LOUD)), ("tools", ToolsPlugin(shout_tool()))],
        env={"TOLLWAY_HOOKS_LOUD_API_KEY": "sekrit-loud-key", "TOLLWAY_HOOKS_LOUD_VOLUME": "3"},
    )
    # the provider's settings and the kind's choice are registered with it
    assert {"TOLLWAY_HOOKS_PROVIDER", "TOLLWAY_HOOKS_LOUD_API_KEY", "TOLLWAY_HOOKS_LOUD_VOLUME"} <= set(kernel.settings)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post("/v1/tools/hooks/shout", json={"text": "ahoy"}, headers=auth)
        health = (await client.get("/healthz")).json()
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["result"] == {"text": "AHOY!!!"}  # the only provider of its kind, chosen by default
    receipt_id = resp.json()["data"]["receipt_id"]
    row = await Receipt.select(Receipt.provider_cost).where(Receipt.receipt_id == receipt_id).first()
    assert row["provider_cost"] == 42
    served = await kernel.receipts.get(receipt_id)
    assert 42 not in [v for v in served.values() if isinstance(v, int) and not isinstance(v, bool)]
    assert health["providers"] == [
        {"kind": "hooks", "provider": "loud", "configured": True, "unset_settings": [], "available": ["loud"]}
    ]
    assert "sekrit-loud-key" not in json.dumps(health) + resp.text


@exercises("register_providers")
async def test_hook_register_providers_unconfigured_refuses_before_payment(kernel_factory) -> None:
    from tollway.testing import count_quotes

    kernel = await kernel_factory(plugins=[("providers", ProvidersPlugin(LOUD)), ("tools", ToolsPlugin(shout_tool()))])
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/hooks/shout", json={"text": "ahoy"})
    assert resp.status_code == 503 and resp.json()["error"] == "provider_unavailable"
    assert resp.json()["details"] == {
        "reason": "not_configured",
        "kind": "hooks",
        "settings": ["TOLLWAY_HOOKS_LOUD_API_KEY"],
    }
    assert await count_quotes(kernel) == 0


@exercises("register_providers")
async def test_hook_register_providers_duplicates_and_strangers_stop_startup(kernel_factory) -> None:
    twice = await kernel_factory(plugins=[("a", ProvidersPlugin(LOUD)), ("b", ProvidersPlugin(LOUD))], start=False)
    with pytest.raises(StartupError, match="duplicate provider hooks/loud"):
        twice.collect()

    class NotAProvider:
        @hookimpl
        def register_providers(self, register):
            register({"kind": "hooks"})

    stranger = await kernel_factory(plugins=[("bad", NotAProvider())], start=False)
    with pytest.raises(StartupError, match="not a tollway.Provider"):
        stranger.collect()


# -- register_settlement_backends ------------------------------------------------------
class AlwaysSettles:
    """A settlement backend that accepts every verified payment and records it."""

    name = "local"
    settles_in_database = False
    TX = "0x" + "ab" * 32

    def __init__(self, services: Any) -> None:
        self.services = services
        self.settled: list[str] = []

    async def verify(self, payment, requirements, payer) -> str | None:
        return None

    async def settle(self, payment, requirements, payer) -> SettlementResult:
        self.settled.append(payer)
        return SettlementResult("settled", self.TX)

    async def on_chain_balance(self, address: str) -> int | None:
        return None


class BackendPlugin:
    @hookimpl
    def register_settlement_backends(self, register) -> None:
        register("local", AlwaysSettles)
        register("hooks_chain", AlwaysSettles)


@exercises("register_settlement_backends")
async def test_hook_register_settlement_backends_plugin_overrides_local(kernel_factory) -> None:
    tool = make_tool("hooks_paid", "/v1/tools/hooks/paid")
    kernel = await kernel_factory(plugins=[("backend", BackendPlugin()), ("tools", ToolsPlugin(tool))])
    assert kernel.backend_factories["local"] is AlwaysSettles
    assert {"hooks_chain", "facilitator"} <= set(kernel.backend_factories)  # the built-in one is still there
    assert isinstance(kernel.backend, AlwaysSettles)

    # An unfunded wallet pays: the built-in local ledger would refuse it for want of
    # balance, the plugin's backend settles it.
    payer = Account.create()
    async with http_client(kernel) as client:
        quote = await client.post(tool.path, json={"text": "pay"})
        paid = await client.post(
            tool.path,
            json={"text": "pay"},
            headers={
                "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
                "X-Quote-ID": quote.json()["quote_id"],
            },
        )
    assert paid.status_code == 200, paid.text
    assert msgspec.json.decode(base64.b64decode(paid.headers["PAYMENT-RESPONSE"]))["transaction"] == AlwaysSettles.TX
    assert kernel.backend.settled == [payer.address]
    receipt = await kernel.receipts.get(paid.json()["data"]["receipt_id"])
    assert receipt["settlement_tx"] == AlwaysSettles.TX
    assert await Receipt.count() == 1


# -- register_periodic_tasks -------------------------------------------------------------
@exercises("register_periodic_tasks")
async def test_hook_register_periodic_tasks_declares_tasks(kernel_factory) -> None:
    ran: list[Any] = []

    async def tick(services: Any) -> None:
        ran.append(services)

    task = PeriodicTask(name="hooks_tick", interval_s=60.0, run=tick)

    class Periodic:
        @hookimpl
        def register_periodic_tasks(self, register):
            register(task)

    kernel = await kernel_factory(plugins=[("periodic", Periodic())])
    assert task in kernel.periodic_tasks
    from tollway._runtime.scheduler import Scheduler

    scheduler = Scheduler.for_kernel(kernel)  # what `tollway serve` and `tollway worker` run
    scheduler.start()
    for _ in range(200):
        if ran:
            break
        await asyncio.sleep(0.01)
    await scheduler.stop()
    assert ran == [kernel.context] and isinstance(ran[0], PluginContext)


# -- register_data_sources -------------------------------------------------------------
@exercises("register_data_sources")
async def test_hook_register_data_sources_declares_refreshable_data(kernel_factory) -> None:
    from tollway import DataSource
    from tollway._core.kernel import StartupError

    seen: list[tuple[int, int | None, str]] = []

    async def refresh(services: Any, progress: Any) -> str:
        progress(1, 2, "first.csv")
        progress(2, 2, "second.csv")
        return f"refreshed into {services.home}"

    source = DataSource(name="hooks_lists", description="two files", refresh=refresh)

    class Lists:
        @hookimpl
        def register_data_sources(self, register):
            register(source)

    kernel = await kernel_factory(plugins=[("lists", Lists())])
    assert kernel.data_sources == {"hooks_lists": source}
    summary = await kernel.data_sources["hooks_lists"].refresh(kernel.context, lambda *a: seen.append(a))
    assert seen == [(1, 2, "first.csv"), (2, 2, "second.csv")] and summary.startswith("refreshed into ")

    class Again:
        @hookimpl
        def register_data_sources(self, register):
            register(DataSource(name="hooks_lists", description="clash", refresh=refresh))

    clash = await kernel_factory(plugins=[("lists", Lists()), ("again", Again())], start=False)
    with pytest.raises(StartupError, match="hooks_lists"):
        clash.collect()


# -- register_migrations ------------------------------------------------------------------
@exercises("register_watch_sources")
async def test_hook_register_watch_sources_makes_an_attribute_watchable_and_polled(kernel_factory) -> None:
    from tollway import Observed, Snapshot, WatchSource

    asked: list[list[str]] = []

    async def poll(services: Any, watched_keys: Any) -> Snapshot:
        asked.append(list(watched_keys))
        return Snapshot(values={"k1": Observed({"v": 1})}, complete=False)

    source = WatchSource(attribute="hooks_feed", entity_types=("item",), source="hooks", poll=poll)

    class Feed:
        @hookimpl
        def register_watch_sources(self, register):
            register(source)

    kernel = await kernel_factory(plugins=[("feed", Feed())])
    assert kernel.watch_sources == {"hooks_feed": source}
    assert "watch_poll_hooks_feed" in {t.name for t in kernel.periodic_tasks}
    report = await kernel.watch_polling.poll("hooks_feed")
    assert asked == [[]] and report.attribute == "hooks_feed" and report.changes_detected == 0

    class Again:
        @hookimpl
        def register_watch_sources(self, register):
            register(WatchSource(attribute="hooks_feed", entity_types=("x",), source="clash", poll=poll))

    clash = await kernel_factory(plugins=[("feed", Feed()), ("again", Again())], start=False)
    with pytest.raises(StartupError, match="hooks_feed"):
        clash.collect()


@exercises("register_migrations")
async def test_hook_register_migrations_gives_a_plugin_tables_of_its_own(kernel_factory) -> None:
    from tests.support.notes_plugin import Note, NotesPlugin
    from tollway._runtime.database import MigrationError

    kernel = await kernel_factory(plugins=[("notes", NotesPlugin())])
    await Note.insert(Note(id="hooked", body="the kernel made this table", tag="x"))
    assert await Note.select(Note.body, Note.tag).where(Note.id == "hooked").first() == {
        "body": "the kernel made this table",
        "tag": "x",
    }
    assert await kernel.db.migrate(kernel.pm) == []  # applied at start, once

    class NotAnApp:
        @hookimpl
        def register_migrations(self, register):
            register("tollway_weather/migrations")

    with pytest.raises(MigrationError, match="not a Piccolo AppConfig"):
        await kernel_factory(plugins=[("bad", NotAnApp())])


# -- startup and shutdown ---------------------------------------------------------------
class Lifecycle:
    """Records what `startup` and `shutdown` see: the `PluginContext`, and (through the
    kernel the test hands it) whether the service is ready."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []
        self.kernel: Any = None

    @hookimpl
    async def startup(self, context: PluginContext) -> None:
        k = self.kernel
        await asyncio.sleep(0)  # awaited: the kernel's start returns only after this has finished
        seen = {
            "started": k.started,
            "backend": k.backend is not None,
            "tools": sorted(k.tools),
            "http_open": not context.http.is_closed,
        }
        self.calls.append(("startup", context, seen))

    @hookimpl
    async def shutdown(self, context: PluginContext) -> None:
        await asyncio.sleep(0)
        seen = {"started": self.kernel.started, "http_open": not context.http.is_closed}
        self.calls.append(("shutdown", context, seen))


@exercises("startup")
async def test_hook_startup_runs_once_on_a_ready_kernel(kernel_factory) -> None:
    life = Lifecycle()
    tool = make_tool("hooks_ready", "/v1/tools/hooks/ready")
    kernel = await kernel_factory(plugins=[("life", life), ("tools", ToolsPlugin(tool))], start=False)
    life.kernel = kernel
    await kernel.start()
    await kernel.start()  # starting twice is a no-op
    tools = sorted(["hooks_ready", *(t.name for t in kernel_tools({}, {}))])  # the plugin's, and the kernel's own
    assert life.calls == [
        ("startup", kernel.context, {"started": True, "backend": True, "tools": tools, "http_open": True})
    ]
    context = life.calls[0][1]
    assert isinstance(context, PluginContext)
    assert context.home == Path(kernel.config.home) and context.offline is True
    assert context.http is kernel.http and context.platform is kernel.platform


@exercises("shutdown")
async def test_hook_shutdown_runs_once_before_resources_close(kernel_factory) -> None:
    life = Lifecycle()
    kernel = await kernel_factory(plugins=[("life", life)], start=False)
    life.kernel = kernel
    await kernel.start()
    await kernel.stop()
    await kernel.stop()  # stopping twice is a no-op
    assert [c[0] for c in life.calls] == ["startup", "shutdown"]
    assert life.calls[1] == ("shutdown", kernel.context, {"started": True, "http_open": True})
    assert not kernel.started


async def test_a_plain_function_lifecycle_hook_stops_start_up(kernel_factory) -> None:
    class Sync:
        @hookimpl
        def startup(self, context: PluginContext) -> None:  # not awaited: refused, never silently skipped
            raise AssertionError("never called")

    kernel = await kernel_factory(plugins=[("sync", Sync())], start=False)
    with pytest.raises(StartupError, match="'sync': its startup hook must be an `async def`"):
        await kernel.start()


async def test_a_failing_shutdown_does_not_keep_the_others_from_running(kernel_factory) -> None:
    life = Lifecycle()

    class Fails:
        @hookimpl
        async def shutdown(self, context: PluginContext) -> None:
            raise RuntimeError("broken shutdown")

    kernel = await kernel_factory(plugins=[("life", life), ("fails", Fails())], start=False)
    life.kernel = kernel
    await kernel.start()
    await kernel.stop()
    assert [c[0] for c in life.calls] == ["startup", "shutdown"] and not kernel.started


COUNTER: StateKey[list[str]] = StateKey("hooks", "counter")


async def test_plugin_state_is_per_service_and_reaches_tools_and_tasks(kernel_factory) -> None:
    """Two services in one process keep their own state; a tool's run reads it through
    `ToolContext.plugin`, a periodic task through its context."""

    async def run(value: EchoInput, ctx: Any) -> EchoOutput:
        ctx.plugin.state.setdefault(COUNTER, list).append(f"tool:{value.text}")
        return await run_echo(value, ctx)

    async def task_run(context: PluginContext) -> None:
        context.state.setdefault(COUNTER, list).append("task")

    class Stateful:
        @hookimpl
        def register_tools(self, register, context: PluginContext) -> None:
            assert not context.started  # collected before start: the platform comes later
            with pytest.raises(RuntimeError, match="once the service has started"):
                context.platform
            register(dataclasses.replace(make_tool("hooks_state", "/v1/tools/hooks/state"), run=run))

        @hookimpl
        async def startup(self, context: PluginContext) -> None:
            context.state.set(COUNTER, ["started"])

    first = await kernel_factory(plugins=[("stateful", Stateful())])
    second = await kernel_factory(plugins=[("stateful", Stateful())])
    assert first.context is not second.context
    ctx = first.job_runner.contexts.for_run(
        first.tools["hooks_state"], "req_1", None
    )  # as a paid call's or a job's run gets it
    assert ctx.plugin is first.context
    await first.tools["hooks_state"].run(EchoInput(text="a"), ctx)
    await PeriodicTask(name="t", interval_s=1, run=task_run).run(second.context)
    assert first.context.state.get(COUNTER) == ["started", "tool:a"]
    assert second.context.state.get(COUNTER) == ["started", "task"]


async def test_services_settings_are_the_familys_by_name(kernel_factory) -> None:
    class Declares:
        @hookimpl
        def register_settings(self, register):
            register(Setting(family="hooks", name="base_url", default="https://example.org", description="x"))
            register(Setting(family="hooks", name="api_key", default=None, description="y"))

    kernel = await kernel_factory(plugins=[("d", Declares())], env={"TOLLWAY_HOOKS_API_KEY": "k1"})
    assert dict(kernel.context.settings("hooks")) == {"base_url": "https://example.org", "api_key": "k1"}
    assert dict(kernel.context.settings("nobody")) == {}


# -- implementation errors ----------------------------------------------------------------
async def test_misspelled_hookimpl_fails_check_pending(kernel_factory) -> None:
    class Misspelled:
        @hookimpl
        def register_tool(self, register):  # the hook is register_tools
            raise AssertionError("never called")

    kernel = await kernel_factory(plugins=[("typo", Misspelled())], start=False)
    with pytest.raises(pluggy.PluginValidationError, match="register_tool"):
        await kernel.start()
    assert not kernel.started


async def test_hookimpl_with_an_unknown_argument_is_refused(kernel_factory) -> None:
    class WrongArgument:
        @hookimpl
        def register_tools(self, registrar):  # the argument is `register`
            raise AssertionError("never called")

    with pytest.raises(pluggy.PluginValidationError, match="registrar"):
        await kernel_factory(plugins=[("wrong", WrongArgument())], start=False)


# -- plugins from entry points ---------------------------------------------------------------
GOOD_PLUGIN = """
from tollway import hookimpl
from tollway import Tool
from tests.support.echo_plugin import EchoInput, EchoOutput


async def run(value, ctx):
    return EchoOutput(result={"text": value.text}, evidence={"source": "throwaway"})


PING = Tool(
    name="throwaway_ping", path="/v1/tools/throwaway/ping", title="Ping", description="Answers its text.",
    category="data", input_type=EchoInput, output_type=EchoOutput, run=run, price="0.001", family="throwaway",
)


@hookimpl
def register_tools(register):
    register(PING)
"""
BROKEN_PLUGIN = "import tollway_tp_dependency_that_is_not_installed\n"
WRONG_ARGUMENT_PLUGIN = """
from tollway import hookimpl


@hookimpl
def register_tools(registrar):
    pass
"""
THROWAWAY = {"tollway_tp_good", "tollway_tp_broken", "tollway_tp_wrong"}


@pytest.fixture
def throwaway_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A distribution with three `tollway` entry points, found through sys.path only."""
    site = tmp_path / "site"
    for package, source in (
        ("tollway_tp_good", GOOD_PLUGIN),
        ("tollway_tp_broken", BROKEN_PLUGIN),
        ("tollway_tp_wrong", WRONG_ARGUMENT_PLUGIN),
    ):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
        (site / package / "plugin.py").write_text(source)
    dist = site / "tollway_throwaway-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tollway-throwaway\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[tollway]\n" + "".join(f"{p} = {p}.plugin\n" for p in sorted(THROWAWAY)))
    monkeypatch.syspath_prepend(str(site))  # also invalidates importlib's caches
    yield site
    for name in [m for m in sys.modules if m.split(".")[0] in THROWAWAY]:
        del sys.modules[name]
    importlib.invalidate_caches()


async def test_broken_entry_point_is_reported_and_skipped(kernel_factory, throwaway_distribution, capsys) -> None:
    kernel = await kernel_factory(start=False)
    loaded = load_entry_point_plugins(kernel, strict=False, only=THROWAWAY)
    assert loaded == ["tollway_tp_good"]
    assert set(kernel.plugin_failures) == {"tollway_tp_broken", "tollway_tp_wrong"}
    assert kernel.plugin_failures["tollway_tp_broken"].startswith("ModuleNotFoundError")
    assert "tollway_tp_dependency_that_is_not_installed" in kernel.plugin_failures["tollway_tp_broken"]
    assert kernel.plugin_failures["tollway_tp_wrong"].startswith("PluginValidationError")
    assert not kernel.pm.has_plugin("tollway_tp_broken") and not kernel.pm.has_plugin("tollway_tp_wrong")
    err = capsys.readouterr().err
    assert "plugin 'tollway_tp_broken' failed to load and was skipped" in err
    await kernel.start()  # the service still starts, with the good plugin's tool
    assert "throwaway_ping" in kernel.tools


async def test_broken_entry_point_raises_in_strict_mode(kernel_factory, throwaway_distribution) -> None:
    with pytest.raises(PluginLoadError, match="tollway_tp_broken"):
        await kernel_factory(installed={"tollway_tp_broken"})
    kernel = await kernel_factory(installed={"tollway_tp_good"})
    assert kernel.pm.has_plugin("tollway_tp_good") and "throwaway_ping" in kernel.tools


def test_tollway_plugins_lists_failures(throwaway_distribution, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # no .env from elsewhere
    monkeypatch.setenv("TOLLWAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOLLWAY_NETWORK", "local")
    monkeypatch.delenv("TOLLWAY_DATABASE_URL", raising=False)
    assert cli_main(["plugins", "--json"]) == 1  # a failure is an error for `tollway plugins`
    listing = json.loads(capsys.readouterr().out)
    assert "throwaway_ping" in {row["tool"] for row in listing["tools"]}
    assert {"tollway_tp_broken", "tollway_tp_wrong"} <= set(listing["failures"])


# -- register_routes ---------------------------------------------------------------------
@exercises("register_routes")
async def test_hook_register_routes_serves_a_plugins_operations_over_http_and_mcp(kernel_factory) -> None:
    import mcp

    from tollway import Page, Route, RouteCall, RouteReply
    from tollway.testing import credits_session, mcp_server_for

    class NoteBody(msgspec.Struct, forbid_unknown_fields=True):
        text: str
        count: int

    seen: list[tuple[str, Any, Any]] = []

    async def read(call: RouteCall) -> dict[str, Any]:
        seen.append(("read", call.params, call.agent_id))
        return {"id": call.params["note_id"], "q": call.query.get("q"), "agent": call.agent_id}

    async def write(call: RouteCall) -> RouteReply:
        seen.append(("write", call.body, call.caller.via))
        return RouteReply(201, {"stored": call.body.text, "times": call.body.count})

    async def page(call: RouteCall) -> Page:
        return Page(f"<p>hello {call.params['word']}</p>", status=410 if call.params["word"] == "gone" else 200)

    routes = [
        Route(
            method="GET",
            path="/v1/hooks/notes/{note_id}",
            name="hooks_note_read",
            title="Read a note",
            description="Reads.",
            handle=read,
            mcp=True,
            query=(("q", "A filter."),),
        ),
        Route(
            method="POST",
            path="/v1/hooks/notes",
            name="hooks_note_write",
            title="Write a note",
            description="Writes.",
            handle=write,
            auth="write",
            body_type=NoteBody,
            status=200,
        ),
        Route(
            method="GET",
            path="/v1/hooks/pages/{word}",
            name="hooks_page",
            title="A page",
            description="A page.",
            handle=page,
            auth="public",
            rate_limit=None,
            page=True,
        ),
    ]

    class Notes:
        @hookimpl
        def register_routes(self, register):
            for r in routes:
                register(r)

    kernel = await kernel_factory(plugins=[("notes", Notes())])
    kernels_own = {r.name for module in (read_routes, account_routes, watch_routes, value_tags) for r in module.ROUTES}
    assert {"healthz", "balance", "job_status", "watch_create", "value_tag"} <= kernels_own
    assert set(kernel.routes) == {"hooks_note_read", "hooks_note_write", "hooks_page"} | kernels_own
    async with http_client(kernel) as client:
        agent_id, headers = await credits_session(client, "1")
        ok = await client.get("/v1/hooks/notes/n1?q=x", headers=headers)
        anonymous = await client.get("/v1/hooks/notes/n1")
        written = await client.post("/v1/hooks/notes", json={"text": "hi", "count": 2}, headers=headers)
        bad = await client.post("/v1/hooks/notes", json={"text": 3, "count": "x", "more": 1}, headers=headers)
        shown = await client.get("/v1/hooks/pages/world")
        gone = await client.get("/v1/hooks/pages/gone")
        schema = (await client.get("/schema/openapi.json")).json()
    assert (
        ok.status_code == 200
        and ok.json() == {"id": "n1", "q": "x", "agent": agent_id}
        and "ratelimit-limit" in ok.headers
    )
    assert anonymous.status_code == 401
    assert (
        written.status_code == 201
        and written.json() == {"stored": "hi", "times": 2}
        and seen[-1] == ("write", NoteBody("hi", 2), "token")
    )
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} >= {"text", "count"}
    assert (
        shown.status_code == 200
        and shown.text == "<p>hello world</p>"
        and shown.headers["content-type"].startswith("text/html")
    )
    assert gone.status_code == 410
    assert {"/v1/hooks/notes/{note_id}", "/v1/hooks/notes", "/v1/hooks/pages/{word}"} <= set(schema["paths"])
    assert schema["paths"]["/v1/hooks/notes"]["post"]["operationId"] == "hooks_note_write"

    async with mcp.Client(mcp_server_for(kernel)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "hooks_note_read" in names and "hooks_note_write" not in names
    assert seen[0] == ("read", {"note_id": "n1"}, agent_id)

    class Again:
        @hookimpl
        def register_routes(self, register):
            register(
                Route(
                    method="GET",
                    path="/v1/hooks/notes/{note_id}",
                    name="hooks_other",
                    title="Clash",
                    description="Clash.",
                    handle=read,
                )
            )

    clash = await kernel_factory(plugins=[("notes", Notes()), ("again", Again())], start=False)
    with pytest.raises(StartupError, match="duplicate route GET /v1/hooks/notes"):
        clash.collect()


@exercises("register_operator_pages")
async def test_hook_register_operator_pages_lists_the_pages_by_title_and_refuses_clashes(kernel_factory) -> None:
    """Each registered `OperatorPage` is listed by `Platform.operator_pages()` (by title), and
    its `load` answers the typed report; a name taken twice, or something else than an
    `OperatorPage`, stops the start; a name that is not one url word is refused at once."""
    from tollway import Figure, Link, OperatorPage, Report, Row, Section, Table

    async def load(platform, query, item):
        if item == "missing":
            return None
        rows = (Row(("parent", 1)), Row((Link("child", "/console/view/zoo/child"), 2), level=1))
        return Report(
            f"Zoo {item or 'all'}",
            (Section("Animals", (Figure("Count", 2),), Table(("Name", "Legs"), rows), query.get("note")),),
        )

    def plugin(*pages: object) -> object:
        class Pages:
            @hookimpl
            def register_operator_pages(self, register):
                for page in pages:
                    register(page)

        return Pages()

    zoo = OperatorPage(name="zoo", title="Zoo", load=load)
    aviary = OperatorPage(name="aviary", title="Aviary", load=load, description="Birds.")
    kernel = await kernel_factory(plugins=[("zoo", plugin(zoo)), ("aviary", plugin(aviary))])
    assert [p.name for p in kernel.platform.operator_pages()] == ["aviary", "zoo"]
    report = await kernel.platform.operator_pages()[1].load(kernel.platform, {"note": "n"}, "child")
    assert report.title == "Zoo child" and report.sections[0].note == "n"
    assert report.sections[0].table.rows[1].level == 1 and report.sections[0].figures == (Figure("Count", 2),)
    assert await zoo.load(kernel.platform, {}, "missing") is None
    bare = await kernel_factory()
    assert bare.platform.operator_pages() == []

    twice = await kernel_factory(plugins=[("one", plugin(zoo)), ("two", plugin(zoo))], start=False)
    with pytest.raises(StartupError, match="duplicate operator page 'zoo'"):
        twice.collect()
    wrong = await kernel_factory(plugins=[("wrong", plugin({"name": "zoo"}))], start=False)
    with pytest.raises(StartupError, match="not a tollway.OperatorPage"):
        wrong.collect()
    for name in ("Zoo", "zoo/child", "", "z" * 41, "-zoo"):
        with pytest.raises(ValueError, match="operator page name"):
            OperatorPage(name=name, title="Zoo", load=load)
    with pytest.raises(ValueError, match="needs a title"):
        OperatorPage(name="zoo", title=" ", load=load)
    assert (Link.agent("a1"), Link.job("req_1"), Link.item("zoo", "z1")) == (
        Link("a1", "/console/agents/a1"),
        Link("req_1", "/console/jobs/req_1"),
        Link("z1", "/console/view/zoo/z1"),
    )


@exercises("register_routes")
async def test_hook_register_routes_alias_clashes_stop_startup(kernel_factory) -> None:
    """An alias's path and operation id are as taken as the route's own: a clash with another
    route, another alias or a tool's path stops the start, naming both."""

    from tests.support.echo_plugin import EchoPlugin
    from tollway import Alias, Route, RouteCall

    async def answer(call: RouteCall) -> dict[str, Any]:
        return {}

    def route(name: str, path: str, *aliases: Alias, method: str = "GET") -> Route:
        return Route(method=method, path=path, name=name, title=name, description=name, handle=answer, aliases=aliases)

    def plugin(*routes: Route) -> object:
        class Routes:
            @hookimpl
            def register_routes(self, register):
                for r in routes:
                    register(r)

        return Routes()

    first = route("hooks_first", "/v1/hooks/first", Alias(path="/v1/hooks/first-alias", name="hooks_first_alias"))
    clashes = {
        ("duplicate route GET /v1/hooks/first-alias", "hooks_first", "hooks_second"): route(
            "hooks_second", "/v1/hooks/first-alias"
        ),
        ("duplicate route GET /v1/hooks/first", "hooks_first", "hooks_third"): route(
            "hooks_third", "/v1/hooks/third", Alias(path="/v1/hooks/first", name="hooks_third_alias")
        ),
        ("duplicate route or tool name 'hooks_first_alias'", "hooks_first", "hooks_fourth"): route(
            "hooks_fourth", "/v1/hooks/fourth", Alias(path="/v1/hooks/fourth-alias", name="hooks_first_alias")
        ),
        ("duplicate route POST /v1/tools/test/echo", "echo_words", "hooks_fifth"): route(
            "hooks_fifth", "/v1/hooks/fifth", Alias(path="/v1/tools/test/echo", name="hooks_fifth_alias"), method="POST"
        ),
    }
    for (clash, one, other), second in clashes.items():  # either may be registered first
        kernel = await kernel_factory(
            plugins=[("echo", EchoPlugin()), ("first", plugin(first)), ("second", plugin(second))], start=False
        )
        either = f"({re.escape(one)} and {re.escape(other)}|{re.escape(other)} and {re.escape(one)})"
        with pytest.raises(StartupError, match=f"^{re.escape(clash)}: {either}$"):
            kernel.collect()
    fine = await kernel_factory(
        plugins=[("first", plugin(first)), ("second", plugin(route("hooks_first", "/v1/hooks/first", method="POST")))],
        start=False,
    )
    with pytest.raises(StartupError, match="duplicate route or tool name 'hooks_first'"):
        fine.collect()
    apart = await kernel_factory(
        plugins=[("first", plugin(first)), ("second", plugin(route("hooks_sixth", "/v1/hooks/first", method="POST")))],
        start=False,
    )
    apart.collect()  # the same path under another method is another operation


# -- register_inbound_handlers --------------------------------------------------------------
@exercises("register_inbound_handlers")
async def test_hook_register_inbound_handlers_offers_each_message_to_every_handler(kernel_factory) -> None:
    from tollway import InboundMessage

    seen: list[tuple[str, str]] = []

    async def broken(message, platform):
        seen.append(("broken", message.subject))
        raise RuntimeError("a handler that fails is skipped")

    async def replies_only(message, platform):
        seen.append(("replies", message.subject))
        return bool(message.in_reply_to) and platform is not None

    async def everything(message, platform):
        seen.append(("everything", message.subject))
        return message.subject != "spam"

    class Mail:
        @hookimpl
        def register_inbound_handlers(self, register):
            for handler in (broken, replies_only, everything):
                register(handler)

    kernel = await kernel_factory(plugins=[("mail", Mail())])
    reply = InboundMessage(
        channel="email",
        sender="a@example.com",
        recipients=("b@example.com",),
        subject="re",
        text="yes",
        message_id="<2@x>",
        in_reply_to="<1@x>",
        references=("<0@x>", "<1@x>"),
    )
    assert reply.thread == ("<1@x>", "<0@x>")
    assert await kernel.platform.deliver_inbound(reply) is True
    assert await kernel.platform.deliver_inbound(dataclasses.replace(reply, subject="new", in_reply_to=None)) is True
    assert await kernel.platform.deliver_inbound(dataclasses.replace(reply, subject="spam", in_reply_to=None)) is False
    assert seen == [
        ("broken", "re"),
        ("replies", "re"),
        ("everything", "re"),
        ("broken", "new"),
        ("replies", "new"),
        ("everything", "new"),
        ("broken", "spam"),
        ("replies", "spam"),
        ("everything", "spam"),
    ]


LEAKY_PLUGIN = """
import os

raise RuntimeError("cannot reach https://models.example/v1 with key " + os.environ["TOLLWAY_TP_LEAKY_API_KEY"])
"""


async def test_a_plugin_failure_quoting_a_secret_setting_is_recorded_and_printed_redacted(
    kernel_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    secret = "leaky-value-0123456789"
    monkeypatch.setenv("TOLLWAY_TP_LEAKY_API_KEY", secret)
    site = tmp_path / "site"
    (site / "tollway_tp_leaky").mkdir(parents=True)
    (site / "tollway_tp_leaky" / "__init__.py").write_text("")
    (site / "tollway_tp_leaky" / "plugin.py").write_text(LEAKY_PLUGIN)
    dist = site / "tollway_leaky-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tollway-leaky\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[tollway]\ntollway_tp_leaky = tollway_tp_leaky.plugin\n")
    monkeypatch.syspath_prepend(str(site))
    try:
        # the plugin never declared its setting secret (it failed first): its name says so
        kernel = await kernel_factory(start=False, env={"TOLLWAY_TP_LEAKY_API_KEY": secret})
        assert load_entry_point_plugins(kernel, strict=False, only={"tollway_tp_leaky"}) == []
        recorded = kernel.plugin_failures["tollway_tp_leaky"]
        assert recorded.startswith("RuntimeError: cannot reach https://models.example/v1 with key [redacted]")
        assert secret not in recorded and secret not in capsys.readouterr().err
    finally:
        sys.modules.pop("tollway_tp_leaky.plugin", None)
        sys.modules.pop("tollway_tp_leaky", None)
        importlib.invalidate_caches()
