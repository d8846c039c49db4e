"""`tollway doctor`: one process's configuration checked against what a deployment needs
(settings, database reachable and migrated, facilitator and chain endpoint, providers'
health, clock skew, the settings shared with the other processes) and what to fix.

It writes nothing: no generated secret, no migration, no fingerprint. Findings are
`ok`, `warn` (the service runs, something is off) or `fail` (fix before serving); the
command exits 1 when one fails (or, with `--strict`, warns), for CI and deploy scripts.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx

from tollway._core.auth import shared_settings
from tollway._core.payments.networks import Network, get_network
from tollway._runtime.production import layout_refusal, malformed_settings, production_refusals
from tollway._runtime.settings import Settings, find_operator_token, home_of, load_settings

CLOCK_WARN_S = 1.0
CLOCK_FAIL_S = 5.0  # payments allow 6 s between validBefore and now; agent proofs 30 s


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def _where(url: str) -> str:
    """A database URL without its credentials."""
    return url.split("@")[-1] if "@" in url else url


def _probe_env(env: Mapping[str, str]) -> tuple[dict[str, str], set[str]]:
    """`env` with what start-up would generate filled from TOLLWAY_HOME's files where they
    exist, else with placeholders, so settings load without writing anything; and the
    shared settings whose value is known (only those are compared with other processes)."""
    probe = {**env, "TOLLWAY_NETWORK": "local"}
    known = {"TOLLWAY_NETWORK", "TOLLWAY_PAY_TO", "TOLLWAY_OPERATOR_TOKEN", "TOLLWAY_RECEIPT_KEY"}
    home = home_of(env)
    if not env.get("TOLLWAY_PAY_TO"):
        key = _read(home / "dev_wallet.key")
        if key:
            from eth_account import Account

            probe["TOLLWAY_PAY_TO"] = Account.from_key(key).address
            probe.setdefault("TOLLWAY_PAYOUT_KEY", key)
        else:
            probe["TOLLWAY_PAY_TO"] = "0x" + "0" * 40
            known.discard("TOLLWAY_PAY_TO")
    token, _ = find_operator_token(env)
    if token:
        probe["TOLLWAY_OPERATOR_TOKEN"] = token
    else:
        probe["TOLLWAY_OPERATOR_TOKEN"] = "not-generated-yet"
        known.discard("TOLLWAY_OPERATOR_TOKEN")
    if not env.get("TOLLWAY_RECEIPT_KEY"):
        seed = _read(home / "receipt_key.seed")
        probe["TOLLWAY_RECEIPT_KEY"] = seed or base64.b64encode(bytes(32)).decode()
        if not seed:
            known.discard("TOLLWAY_RECEIPT_KEY")
    if "TOLLWAY_PAYOUT_KEY" in probe or not env.get("TOLLWAY_PAY_TO"):
        known.add("TOLLWAY_PAYOUT_KEY")
    return probe, known


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


class Doctor:
    """The checks, in order; each appends its findings."""

    def __init__(self, env: Mapping[str, str], *, providers: bool = True, timeout_s: float = 5.0) -> None:
        self.env = dict(env)
        self.providers = providers
        self.timeout_s = timeout_s
        self.findings: list[Finding] = []
        self.network: Network | None = None

    def add(self, check: str, status: str, detail: str, fix: str = "") -> None:
        self.findings.append(Finding(check, status, detail, fix))

    async def run(self) -> list[Finding]:
        settings, known = self.check_settings()
        if settings is None:
            return self.findings
        from tollway._runtime.service import build_kernel

        kernel = build_kernel(settings)
        kernel.collect()
        for name, err in kernel.plugin_failures.items():
            self.add("plugins", "warn", f"plugin {name} did not load: {err}", "install it again or remove it")
        async with httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), follow_redirects=True) as http:
            if await self.check_database(settings, kernel):
                await self.check_clock_database(settings, kernel)
                await self.check_shared(kernel, known)
            await self.check_facilitator(http)
            await self.check_chain(http)
            if self.providers:
                await self.check_providers(kernel, http)
            await kernel.db.close()
        return self.findings

    # -- settings -----------------------------------------------------------------
    def check_settings(self) -> tuple[Settings | None, set[str]]:
        env = self.env
        network_name = env.get("TOLLWAY_NETWORK") or "local"
        try:
            self.network = get_network(network_name)
        except ValueError:
            self.add("settings", "fail", f"TOLLWAY_NETWORK is {network_name!r}", "set local, base-sepolia or base")
            return None, set()
        refusals = malformed_settings(env) + production_refusals(env)
        for r in refusals:
            self.add("settings", "fail", r.message, f"set {r.setting}")
        database_url = env.get("TOLLWAY_DATABASE_URL") or "sqlite"
        several = layout_refusal(env, database_url, processes=2, role="serve")
        if several is not None:
            self.add(
                "settings",
                "warn",
                f"the embedded SQLite database serves one process only on network {network_name}: "
                "no `tollway worker`, no --processes",
                "set TOLLWAY_DATABASE_URL=postgres://… to run several processes or machines",
            )
        probe, known = _probe_env(env)
        try:
            settings = load_settings(probe)
        except ValueError as exc:
            self.add("settings", "fail", str(exc), "correct the setting it names")
            return None, known
        settings = dataclasses.replace(settings, network=network_name, offline=True)
        if not refusals:
            self.add(
                "settings",
                "ok",
                f"network {network_name}, receiving at {settings.pay_to if 'TOLLWAY_PAY_TO' in known else '(generated at first start)'}",
            )
        if network_name != "local" and not env.get("TOLLWAY_PAYOUT_KEY"):
            self.add(
                "settings",
                "warn",
                "TOLLWAY_PAYOUT_KEY is not set: sellers' payouts answer 503",
                "set it to pay out earnings",
            )
        if network_name == "base-sepolia" and not env.get("TOLLWAY_CHAIN_RPC_URL"):
            self.add(
                "settings",
                "warn",
                "TOLLWAY_CHAIN_RPC_URL is not set: a lost settlement answer is resolved by asking the facilitator again",
                "set any JSON-RPC endpoint of the network",
            )
        return settings, known

    # -- database -----------------------------------------------------------------
    async def check_database(self, settings: Settings, kernel: Any) -> bool:
        where = _where(settings.database_url)
        if kernel.db.kind == "sqlite" and not Path(kernel.db._config["path"]).exists():
            self.add("database", "ok", f"{where} is not created yet: the first start creates and migrates it")
            return False
        try:
            await asyncio.wait_for(kernel.db.connect(), self.timeout_s)
            pending = await asyncio.wait_for(kernel.db.pending(kernel.pm), self.timeout_s * 2)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            self.add(
                "database",
                "fail",
                f"{where} unreachable: {type(exc).__name__}: {exc or 'no answer'}",
                "check TOLLWAY_DATABASE_URL, that the server runs and that this machine reaches it",
            )
            return False
        if pending:
            names = ", ".join(str(step) for step in pending[:3]) + (" …" if len(pending) > 3 else "")
            self.add(
                "database",
                "fail",
                f"{where} lacks {len(pending)} migration{'s' if len(pending) > 1 else ''}: {names}",
                "run `tollway db migrate` (every start also does)",
            )
            return False
        self.add("database", "ok", f"{where} reachable and migrated")
        return True

    async def check_clock_database(self, settings: Settings, kernel: Any) -> None:
        if kernel.db.kind != "postgres":
            return  # the embedded database shares this machine's clock
        from tollway._core.storage.sql import fetch_one

        before = time.time()
        row = await fetch_one("SELECT extract(epoch FROM clock_timestamp()) AS now")
        server = float(row["now"])
        after = time.time()
        self._clock("the database server", server - (before + after) / 2)

    def _clock(self, what: str, skew: float, *, resolution: float = 0.0) -> None:
        off = abs(skew) - resolution
        if off > CLOCK_FAIL_S:
            self.add("clock", "fail", f"this machine's clock is {skew:+.1f} s from {what}'s", "synchronise it (NTP)")
        elif off > CLOCK_WARN_S:
            self.add("clock", "warn", f"this machine's clock is {skew:+.1f} s from {what}'s", "synchronise it (NTP)")
        else:
            self.add("clock", "ok", f"within {max(abs(skew), resolution):.1f} s of {what}'s")

    async def check_shared(self, kernel: Any, known: set[str]) -> None:
        from tollway._core.receipts.receipt_signing import ReceiptSigner

        ours = shared_settings.for_config(kernel.config, ReceiptSigner(kernel.config.receipt_seed).key_id)
        ours = {k: v for k, v in ours.items() if k in known}
        differences = await shared_settings.compare(ours)
        for d in differences:
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(d.recorded_ms / 1000))
            self.add(
                "deployment",
                "fail",
                f"{d.setting} differs from the one {d.host} started with at {when}",
                f"give every process of the deployment the same {d.setting}",
            )
        if not differences:
            self.add(
                "deployment", "ok", f"{', '.join(sorted(ours))} as the processes on this database last started with"
            )

    # -- payments -----------------------------------------------------------------
    async def check_facilitator(self, http: httpx.AsyncClient) -> None:
        url = (self.env.get("TOLLWAY_FACILITATOR_URL") or "").rstrip("/")
        if not url or self.network is None or self.network.name == "local":
            return
        try:
            resp = await http.get(f"{url}/supported")
            resp.raise_for_status()
            kinds = resp.json().get("kinds") or []
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            self.add(
                "facilitator",
                "fail",
                f"{url}/supported did not answer: {type(exc).__name__}: {exc}",
                "check TOLLWAY_FACILITATOR_URL and that this machine reaches it",
            )
            return
        names = {self.network.caip2, self.network.name}
        if not any(isinstance(k, dict) and k.get("scheme") == "exact" and k.get("network") in names for k in kinds):
            self.add(
                "facilitator",
                "fail",
                f"{url} does not settle the exact scheme on {self.network.caip2}",
                "use a facilitator of this network",
            )
            return
        self.add("facilitator", "ok", f"{url} settles exact payments on {self.network.caip2}")
        self._clock_from_date(url, resp.headers.get("date"))

    def _clock_from_date(self, what: str, header: str | None) -> None:
        if not header:
            return
        try:
            theirs = parsedate_to_datetime(header).timestamp()
        except (TypeError, ValueError):
            return
        self._clock(what, time.time() - theirs, resolution=1.0)

    async def check_chain(self, http: httpx.AsyncClient) -> None:
        url = self.env.get("TOLLWAY_CHAIN_RPC_URL") or ""
        if not url or self.network is None:
            return
        try:
            resp = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []})
            chain_id = int(resp.json()["result"], 16)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            self.add(
                "chain",
                "fail",
                f"{url} did not answer eth_chainId: {type(exc).__name__}: {exc}",
                "check TOLLWAY_CHAIN_RPC_URL",
            )
            return
        if chain_id != self.network.chain_id:
            self.add(
                "chain",
                "fail",
                f"{url} is chain {chain_id}, not {self.network.name}'s {self.network.chain_id}",
                "use an endpoint of this network",
            )
            return
        self.add("chain", "ok", f"{url} is chain {chain_id}")

    # -- providers ----------------------------------------------------------------
    async def check_providers(self, kernel: Any, http: httpx.AsyncClient) -> None:
        kinds = tuple(t.provider_kind for t in kernel.tools.values() if t.provider_kind)
        statuses = kernel.providers.statuses(also=kinds)
        configured = [s.kind for s in statuses if s.configured]
        health = await provider_health(kernel, configured, http=http, timeout_s=self.timeout_s * 2)
        for kind, problem in health.items():
            if problem:
                self.add("providers", "warn", f"{kind}: {problem}", "check the provider's settings and reachability")
        unconfigured = [s.kind for s in statuses if not s.configured]
        detail = f"{len(configured) - sum(1 for p in health.values() if p)} of {len(configured)} configured healthy"
        if unconfigured:
            detail += f"; not configured: {', '.join(sorted(unconfigured))} (`tollway plugins` says what to set)"
        self.add("providers", "ok", detail)


async def provider_health(
    kernel: Any, kinds: list[str], *, http: httpx.AsyncClient | None = None, timeout_s: float = 15.0
) -> dict[str, str | None]:
    """Each kind's health check with a client of this process (the kernel's check, as the
    console runs it): None when it passes, else what failed, redacted (a check that raises
    or outlasts `timeout_s` fails with that)."""
    from tollway._core.operator.installed import provider_health as checked
    from tollway._core.plugin_api.context import PluginContext

    async def run(client: httpx.AsyncClient) -> dict[str, str | None]:
        context = PluginContext(
            home=Path(kernel.config.home),
            offline=kernel.config.offline,
            http=client,
            settings_of=kernel.family_settings,
        )
        return await checked(
            kernel.providers, kinds, context, timeout_s=timeout_s, secrets=kernel.registry.secret_values()
        )

    if http is not None:
        return await run(http)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), follow_redirects=True) as client:
        return await run(client)


def render(findings: list[Finding], env: Mapping[str, str]) -> str:
    lines = [
        f"tollway doctor: network {env.get('TOLLWAY_NETWORK') or 'local'}, "
        f"database {_where(env.get('TOLLWAY_DATABASE_URL') or 'sqlite (TOLLWAY_HOME/tollway.db)')}"
    ]
    for f in findings:
        lines.append(f"  {f.status.upper() if f.status == 'fail' else f.status:5} {f.check:12} {f.detail}")
        if f.fix and f.status != "ok":
            lines.append(f"  {'':5} {'':12} fix: {f.fix}")
    fails = sum(f.status == "fail" for f in findings)
    warns = sum(f.status == "warn" for f in findings)
    lines.append(f"{fails} to fix, {warns} warning{'' if warns == 1 else 's'}")
    return "\n".join(lines)


def diagnose(env: Mapping[str, str], *, providers: bool = True, timeout_s: float = 5.0) -> list[Finding]:
    return asyncio.run(Doctor(env, providers=providers, timeout_s=timeout_s).run())


__all__ = ["Doctor", "Finding", "diagnose", "provider_health", "render"]
