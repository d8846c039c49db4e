"""What the kernel needs to know about its deployment (built by runtime.settings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class KernelConfig:
    home: str = ".tollway"  # TOLLWAY_HOME: where plugins keep downloaded lists and indexes
    # TOLLWAY_OFFLINE: no background downloads (start-up or scheduled refreshes of
    # remote data); calls and explicit `tollway data refresh` still reach upstreams.
    # Air-gapped deployments and the test suite set it.
    offline: bool = False
    network: str = "local"  # local, base-sepolia, base
    pay_to: str = ""  # receiving wallet in quotes
    payout_key: str | None = None  # TOLLWAY_PAYOUT_KEY: the wallet payouts are paid from (None: no payouts)
    operator_token: str = ""
    proof_enforcement: str = "log"  # log | enforce (read proofs)
    receipt_seed: bytes = b""  # Ed25519 seed, 32 bytes
    facilitator_url: str | None = None
    facilitator_timeout_s: float = 15.0  # /verify and /settle; a settle past it is "pending"
    chain_rpc_url: str | None = None  # Ethereum JSON-RPC: settlement fates the facilitator cannot tell
    # The reconciler: every `reconcile_interval_s` it resolves holds, payments and
    # top-ups still in an intermediate state `reconcile_after_s` after they began.
    reconcile_interval_s: float = 60.0
    reconcile_after_s: float = 300.0
    settlement_backend: str | None = None  # None: local on the local network, else facilitator
    quote_ttl_s: int = 300
    access_token_ttl_s: int = 86_400
    plugin_env: Mapping[str, str] = dataclasses.field(default_factory=dict)  # TOLLWAY_* variables
    rate_limits: Mapping[str, tuple[int, int]] | None = None  # category -> (limit, window s); None: defaults
    idempotency_ttl_s: int = 86_400
    idempotency_lease_s: int = 60
    strict_plugins: bool = False
    upstream_cache_s: float = 60.0  # TOLLWAY_UPSTREAM_CACHE_S: a registry's answer reused this long (0: never)
    # Watches and webhooks (docs/watches.md, docs/webhooks.md)
    watch_poll_interval_s: float = 900.0  # TOLLWAY_WATCH_POLL_INTERVAL_S: how often sources are polled
    watch_price_per_change: int = 20_000  # TOLLWAY_WATCH_PRICE_PER_CHANGE (USDC): 0.02
    webhook_retry_base_s: float = 10.0  # TOLLWAY_WEBHOOK_RETRY_BASE_S: 10 s, 20 s, 40 s, ...
    # TOLLWAY_WEBHOOKS_ALLOW_INSECURE=1 (tests, local development): http:// and loopback targets too
    webhooks_allow_insecure: bool = False
