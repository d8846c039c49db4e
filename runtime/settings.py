"""Settings from the environment (and `.env` files), docs/settings.md.

On the local test network, first start generates what an embedded deployment needs
into TOLLWAY_HOME: the receipt signing seed, the dev receiving wallet and the operator
token. On a real network nothing is generated: a missing secret stops the start
(runtime/production.py).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from tollway._core.basics.money import to_micro
from tollway._core.config import KernelConfig
from tollway._runtime.database.database import POOL_MAX
from tollway._runtime.production import malformed_settings, production_refusals


@dataclasses.dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    network: str
    pay_to: str
    payout_key: str | None
    facilitator_url: str | None
    facilitator_timeout_s: float
    chain_rpc_url: str | None
    reconcile_interval_s: float
    reconcile_after_s: float
    operator_token: str
    operator_token_generated: bool
    proof_enforcement: str
    receipt_seed: bytes
    offline: bool
    rate_limits: Mapping[str, tuple[int, int]]
    idempotency_ttl_s: int
    idempotency_lease_s: int
    env: Mapping[str, str]
    watch_poll_interval_s: float = 900.0
    watch_price_per_change: int = 20_000
    webhook_retry_base_s: float = 10.0
    webhooks_allow_insecure: bool = False
    upstream_cache_s: float = 60.0
    trusted_proxies: tuple[str, ...] = ()  # runtime/proxies.py
    db_dead_session_s: float = 30.0
    db_pool_max: int = POOL_MAX

    def kernel_config(self, *, strict_plugins: bool = False) -> KernelConfig:
        return KernelConfig(
            home=str(self.home),
            offline=self.offline,
            network=self.network,
            pay_to=self.pay_to,
            payout_key=self.payout_key,
            operator_token=self.operator_token,
            proof_enforcement=self.proof_enforcement,
            receipt_seed=self.receipt_seed,
            facilitator_url=self.facilitator_url,
            facilitator_timeout_s=self.facilitator_timeout_s,
            chain_rpc_url=self.chain_rpc_url,
            reconcile_interval_s=self.reconcile_interval_s,
            reconcile_after_s=self.reconcile_after_s,
            plugin_env={k: v for k, v in self.env.items() if k.startswith("TOLLWAY_")},
            rate_limits=self.rate_limits,
            idempotency_ttl_s=self.idempotency_ttl_s,
            idempotency_lease_s=self.idempotency_lease_s,
            strict_plugins=strict_plugins,
            watch_poll_interval_s=self.watch_poll_interval_s,
            watch_price_per_change=self.watch_price_per_change,
            webhook_retry_base_s=self.webhook_retry_base_s,
            webhooks_allow_insecure=self.webhooks_allow_insecure,
            upstream_cache_s=self.upstream_cache_s,
        )


def _read_or_create(path: Path, make: callable) -> tuple[str, bool]:
    if path.exists():
        return path.read_text().strip(), False
    path.parent.mkdir(parents=True, exist_ok=True)
    value = make()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return value, True


class SettingsError(ValueError):
    """A setting that stops start-up; the message names it, in one line."""


DOTENV_SWITCH = "TOLLWAY_DOTENV"  # 0/false/no/off: read no `.env` file (the test suite sets it)


def _dotenv(path: Path) -> dict[str, str]:
    from dotenv import dotenv_values

    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def dotenv_paths(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> list[Path]:
    """The `.env` files the settings read, the one that wins first: the working folder's,
    then TOLLWAY_HOME's (so a command started from anywhere, like an MCP client's
    `tollway mcp`, finds the deployment's). None when TOLLWAY_DOTENV is off."""
    environ = os.environ if environ is None else environ
    if (environ.get(DOTENV_SWITCH) or "").strip().lower() in ("0", "false", "no", "off"):
        return []
    here = (cwd or Path.cwd()) / ".env"
    home = home_of({**_dotenv(here), **environ}) / ".env"
    paths = [here]
    if home.resolve() != here.resolve():
        paths.append(home)
    return [p for p in paths if p.is_file()]


def read_env(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, str]:
    """The settings' environment: the process's, over the working folder's `.env`, over
    TOLLWAY_HOME's `.env`."""
    environ = os.environ if environ is None else environ
    merged: dict[str, str] = {}
    for path in reversed(dotenv_paths(environ, cwd)):
        merged.update(_dotenv(path))
    return {**merged, **environ}


def home_of(env: Mapping[str, str]) -> Path:
    return Path(env.get("TOLLWAY_HOME") or "./.tollway").resolve()


def find_operator_token(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The operator token a client of a running service uses, and where it came from,
    without creating anything: TOLLWAY_OPERATOR_TOKEN, else TOLLWAY_HOME's
    `operator_token` file (the one `tollway serve` generated), else None."""
    if env.get("TOLLWAY_OPERATOR_TOKEN"):
        return env["TOLLWAY_OPERATOR_TOKEN"], "TOLLWAY_OPERATOR_TOKEN"
    path = home_of(env) / "operator_token"
    try:
        token = path.read_text().strip()
    except OSError:
        return None, str(path)
    return (token or None), str(path)


def service_url(env: Mapping[str, str]) -> str:
    """Where a client command finds the running service: TOLLWAY_URL, else
    http://127.0.0.1:<TOLLWAY_PORT or 8402> (the port `tollway serve` listens on)."""
    if env.get("TOLLWAY_URL"):
        return env["TOLLWAY_URL"].rstrip("/")
    return f"http://127.0.0.1:{env.get('TOLLWAY_PORT') or DEFAULT_PORT}"


DEFAULT_PORT = 8402


def _seconds(env: Mapping[str, str], name: str, default: float, *, zero: bool = False) -> float:
    text = env.get(name)
    try:
        value = float(text) if text else float(default)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds") from None
    if zero and value == 0:
        return 0.0
    if not 0 < value <= 86_400:
        raise ValueError(f"{name} must be {'0 or ' if zero else ''}more than 0 and at most 86400 seconds")
    return value


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings of `env` (default: `read_env()`); a bad or, on a real network, a
    missing setting raises `SettingsError` naming it, before anything is written."""
    if env is None:
        env = read_env()
    try:
        return _load_settings(env)
    except SettingsError:
        raise
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _pool_max(env: Mapping[str, str]) -> int:
    text = (env.get("TOLLWAY_DB_POOL_MAX") or "").strip()
    if not text:
        return POOL_MAX
    if not text.isdigit() or not 2 <= int(text) <= 1000:
        raise ValueError("TOLLWAY_DB_POOL_MAX must be a whole number from 2 to 1000")
    return int(text)


def _load_settings(env: Mapping[str, str]) -> Settings:
    network = env.get("TOLLWAY_NETWORK") or "local"
    if network not in ("local", "base-sepolia", "base"):
        raise SettingsError("TOLLWAY_NETWORK must be local, base-sepolia or base")
    # Before anything is written: on a real network nothing may be generated.
    refusals = malformed_settings(env) + production_refusals(env)
    if len(refusals) == 1:
        raise SettingsError(str(refusals[0]))
    if refusals:
        names = ", ".join(r.setting for r in refusals)
        raise SettingsError(
            f"network {network} needs {names} set: nothing is generated off the local network "
            "(`tollway doctor` says why each)"
        )
    home = home_of(env)
    home.mkdir(parents=True, exist_ok=True)
    database_url = env.get("TOLLWAY_DATABASE_URL") or f"sqlite:///{home / 'tollway.db'}"
    from tollway._runtime.database.database import parse_database_url

    try:
        parse_database_url(database_url)
    except ValueError:
        raise SettingsError(
            "TOLLWAY_DATABASE_URL must be sqlite:///<path> or postgres://user@host:port/database"
        ) from None

    pay_to = env.get("TOLLWAY_PAY_TO")
    payout_key = env.get("TOLLWAY_PAYOUT_KEY") or None
    if not pay_to:
        from eth_account import Account

        key, _ = _read_or_create(home / "dev_wallet.key", lambda: "0x" + secrets.token_hex(32))
        pay_to = Account.from_key(key).address
        payout_key = payout_key or key  # the generated wallet receives payments and pays out

    token = env.get("TOLLWAY_OPERATOR_TOKEN")
    generated = False
    if not token:
        token, generated = _read_or_create(home / "operator_token", lambda: "tw_op_" + secrets.token_urlsafe(24))

    seed_text = env.get("TOLLWAY_RECEIPT_KEY")
    if not seed_text:
        seed_text, _ = _read_or_create(
            home / "receipt_key.seed", lambda: base64.b64encode(secrets.token_bytes(32)).decode()
        )
    seed = base64.b64decode(seed_text)

    try:
        facilitator_timeout_s = float(env.get("TOLLWAY_FACILITATOR_TIMEOUT_S") or 15)
    except ValueError:
        raise ValueError("TOLLWAY_FACILITATOR_TIMEOUT_S must be a number of seconds") from None
    if not 0 < facilitator_timeout_s <= 300:
        raise ValueError("TOLLWAY_FACILITATOR_TIMEOUT_S must be more than 0 and at most 300 seconds")

    reconcile_interval_s = _seconds(env, "TOLLWAY_RECONCILE_INTERVAL_S", 60)
    reconcile_after_s = _seconds(env, "TOLLWAY_RECONCILE_AFTER_S", 300)

    enforcement = env.get("TOLLWAY_PROOF_ENFORCEMENT") or "log"
    if enforcement not in ("log", "enforce"):
        raise ValueError("TOLLWAY_PROOF_ENFORCEMENT must be log or enforce")
    from tollway._core.calls.idempotency import parse_settings as parse_idempotency
    from tollway._core.calls.ratelimits import parse_limits
    from tollway._runtime.proxies import parse_trusted_proxies

    rate_limits = parse_limits(env)
    price_text = (env.get("TOLLWAY_WATCH_PRICE_PER_CHANGE") or "0.02").strip()
    try:
        price_per_change = to_micro(price_text)
    except ValueError:
        raise ValueError("TOLLWAY_WATCH_PRICE_PER_CHANGE must be a USDC amount such as 0.02") from None
    if not 0 < price_per_change <= 100_000_000:
        raise ValueError("TOLLWAY_WATCH_PRICE_PER_CHANGE must be more than 0 and at most 100")
    idempotency_ttl_s, idempotency_lease_s = parse_idempotency(env)
    return Settings(
        home=home,
        database_url=database_url,
        network=network,
        pay_to=pay_to,
        payout_key=payout_key,
        facilitator_url=env.get("TOLLWAY_FACILITATOR_URL") or None,
        facilitator_timeout_s=facilitator_timeout_s,
        chain_rpc_url=env.get("TOLLWAY_CHAIN_RPC_URL") or None,
        reconcile_interval_s=reconcile_interval_s,
        reconcile_after_s=reconcile_after_s,
        operator_token=token,
        operator_token_generated=generated,
        proof_enforcement=enforcement,
        receipt_seed=seed,
        offline=(env.get("TOLLWAY_OFFLINE") or "").strip().lower() in ("1", "true", "yes"),
        rate_limits=rate_limits,
        idempotency_ttl_s=idempotency_ttl_s,
        idempotency_lease_s=idempotency_lease_s,
        env=dict(env),
        watch_poll_interval_s=_seconds(env, "TOLLWAY_WATCH_POLL_INTERVAL_S", 900),
        watch_price_per_change=price_per_change,
        webhook_retry_base_s=_seconds(env, "TOLLWAY_WEBHOOK_RETRY_BASE_S", 10),
        webhooks_allow_insecure=(env.get("TOLLWAY_WEBHOOKS_ALLOW_INSECURE") or "").strip().lower()
        in ("1", "true", "yes"),
        upstream_cache_s=_seconds(env, "TOLLWAY_UPSTREAM_CACHE_S", 60, zero=True),
        trusted_proxies=parse_trusted_proxies(env),
        db_dead_session_s=_seconds(env, "TOLLWAY_DB_DEAD_SESSION_S", 30, zero=True),
        db_pool_max=_pool_max(env),
    )
