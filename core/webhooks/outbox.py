"""The webhook outbox: rows written in the transaction that decided them, and the
sender that claims due rows, sends them and records every attempt (docs/webhooks.md).

A row is `pending` until an attempt gets a 2xx (`delivered`) or the sixth
attempt fails (`abandoned`); after the n-th failure the next attempt waits
`retry_base_s * 2**(n-1)`. A sender claims due rows under a lease (`FOR UPDATE
SKIP LOCKED` on PostgreSQL, so concurrent senders take disjoint rows) and
records each outcome only while it still holds that lease. A sender that dies
mid-send leaves its rows leased: once the lease expires another sender sends them
again. Delivery is therefore at least once; receivers drop repeats by `webhook-id`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
from collections.abc import Callable
from typing import Any

import httpx
import msgspec

from tollway._core.basics.events import WEBHOOKS_DUE, EventBus
from tollway._core.basics.ids import now_ms
from tollway._core.storage import sql
from tollway._core.webhooks.delivery import Outcome, attempt, headers_for, make_client
from tollway._core.webhooks.targets import Resolver, system_resolve

log = logging.getLogger("tollway.webhooks")

MAX_ATTEMPTS = 6
DEFAULT_LEASE_S = 60.0  # longer than one attempt may take
DEFAULT_TIMEOUT_S = 10.0


async def enqueue(
    *,
    webhook_id: str,
    kind: str,
    subject: str,
    url: str,
    secret: str,
    body: dict[str, Any],
    numbered: bool = False,
    now_ms: int | None = None,
    signing: str | None = None,
) -> bool:
    """Add a pending webhook, due at once, in the caller's transaction (so it exists
    exactly when what decided it commits). False when `webhook_id` already exists.
    Publish `publish_due` after the commit to wake a sender."""
    now = _now(now_ms)
    row = await sql.fetch_one(
        "INSERT INTO tw_webhooks (id, kind, subject, url, secret, body, numbered, state, attempts, next_attempt_ms, "
        "lease_until_ms, created_ms, updated_ms, signing) VALUES ({}, {}, {}, {}, {}, {}, {}, 'pending', 0, {}, 0, {}, {}, {}) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        webhook_id,
        kind,
        subject,
        url,
        secret,
        msgspec.json.encode(body).decode(),
        bool(numbered),
        now,
        now,
        now,
        signing,
    )
    return row is not None


async def publish_due(bus: EventBus, webhook_id: str = "") -> None:
    """Wake the senders: call after the transaction that enqueued has committed."""
    await bus.publish(WEBHOOKS_DUE, webhook_id)


async def get(webhook_id: str) -> dict[str, Any] | None:
    """The outbox row (body as stored, without `attempt`), or None."""
    row = await sql.fetch_one("SELECT * FROM tw_webhooks WHERE id = {}", webhook_id)
    if row is None:
        return None
    out = dict(row)
    out["numbered"] = bool(out["numbered"])
    return out


async def attempts_of(webhook_id: str) -> list[dict[str, Any]]:
    """Every attempt, oldest first: attempt, started_ms, duration_ms, status_code, error."""
    rows = await sql.fetch(
        "SELECT attempt, started_ms, duration_ms, status_code, error FROM tw_webhook_attempts "
        "WHERE webhook_id = {} ORDER BY started_ms, id",
        webhook_id,
    )
    return [dict(r) for r in rows]


def retry_delay_ms(retry_base_s: float, failed_attempts: int) -> int:
    """The wait after the `failed_attempts`-th failure: base, 2 x base, 4 x base, ..."""
    return int(retry_base_s * 1000 * 2 ** (failed_attempts - 1))


def _now(value: int | None) -> int:
    return now_ms() if value is None else value


@dataclasses.dataclass(frozen=True)
class _Claimed:
    id: str
    url: str
    secret: str
    body: str
    numbered: bool
    attempts: int
    lease_until_ms: int
    signing: str | None = None  # None: the service's own signature; "acp": ACP's (signing.py)

    def raw_body(self, attempt_no: int) -> bytes:
        if not self.numbered:
            return self.body.encode()
        body = msgspec.json.decode(self.body)
        body["attempt"] = attempt_no
        return msgspec.json.encode(body)


_RETURNING = "id, url, secret, body, numbered, attempts, lease_until_ms, signing"
_DUE = "state = 'pending' AND next_attempt_ms <= {} AND lease_until_ms < {}"
_CLAIM_PG = (
    f"WITH due AS (SELECT id FROM tw_webhooks WHERE {_DUE} ORDER BY next_attempt_ms LIMIT {{}} FOR UPDATE SKIP LOCKED) "
    "UPDATE tw_webhooks SET lease_until_ms = {}, updated_ms = {} FROM due WHERE tw_webhooks.id = due.id "
    f"RETURNING {', '.join('tw_webhooks.' + c for c in _RETURNING.split(', '))}"
)
_CLAIM_SQLITE = (
    "UPDATE tw_webhooks SET lease_until_ms = {}, updated_ms = {} "
    f"WHERE id IN (SELECT id FROM tw_webhooks WHERE {_DUE} ORDER BY next_attempt_ms LIMIT {{}}) RETURNING {_RETURNING}"
)


class WebhookSender:
    """Sends due webhooks from the outbox; any number may run, in any processes."""

    def __init__(
        self,
        *,
        db: Any,
        events: EventBus,
        retry_base_s: float = 10.0,
        allow_insecure: bool = False,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        lease_s: float = DEFAULT_LEASE_S,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | bool = True,
        resolve: Resolver = system_resolve,
    ) -> None:
        self.db = db
        self.events = events
        self.retry_base_s = retry_base_s
        self.allow_insecure = allow_insecure
        self.timeout_s = timeout_s
        self.lease_s = lease_s
        self.resolve = resolve
        self.http = make_client(timeout_s=timeout_s, transport=transport, verify=verify)

    async def aclose(self) -> None:
        await self.http.aclose()

    def on_due(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback` when webhooks are announced due; returns the unsubscribe function."""
        return self.events.subscribe(WEBHOOKS_DUE, callback)

    async def get(self, webhook_id: str) -> dict[str, Any] | None:
        return await get(webhook_id)

    async def attempts_of(self, webhook_id: str) -> list[dict[str, Any]]:
        return await attempts_of(webhook_id)

    async def run_due(self, limit: int = 20) -> int:
        """Claim up to `limit` due webhooks, attempt each (concurrently), record the
        outcomes; returns how many were claimed."""
        claimed = await self._claim(limit, now_ms())
        results = await asyncio.gather(*(self._send(c) for c in claimed), return_exceptions=True)
        for c, result in zip(claimed, results):
            if isinstance(result, Exception):  # its lease runs out and another run retries it
                log.error("sending webhook %s failed", c.id, exc_info=result)
        return len(claimed)

    async def _claim(self, limit: int, now: int) -> list[_Claimed]:
        lease = now + int(self.lease_s * 1000)
        if getattr(self.db, "kind", "sqlite") == "postgres":
            rows = await sql.fetch(_CLAIM_PG, now, now, limit, lease, now)
        else:
            rows = await sql.fetch(_CLAIM_SQLITE, lease, now, now, now, limit)
        return [
            _Claimed(
                r["id"],
                r["url"],
                r["secret"],
                r["body"],
                bool(r["numbered"]),
                int(r["attempts"]),
                int(r["lease_until_ms"]),
                r["signing"],
            )
            for r in rows
        ]

    async def _send(self, claimed: _Claimed) -> None:
        number = claimed.attempts + 1
        raw = claimed.raw_body(number)
        started = now_ms()
        outcome = await attempt(
            self.http,
            url=claimed.url,
            raw_body=raw,
            headers=headers_for(webhook_id=claimed.id, secret=claimed.secret, raw_body=raw, signing=claimed.signing),
            allow_insecure=self.allow_insecure,
            timeout_s=self.timeout_s,
            resolve=self.resolve,
        )
        await self._record(claimed, number, started, outcome)

    async def _record(self, claimed: _Claimed, number: int, started: int, outcome: Outcome) -> None:
        now = now_ms()
        if outcome.delivered:
            state, next_ms = "delivered", now
        elif outcome.final or number >= MAX_ATTEMPTS:
            state, next_ms = "abandoned", now
        else:
            state, next_ms = "pending", now + retry_delay_ms(self.retry_base_s, number)
        async with self.db.transaction():
            await sql.fetch(
                "INSERT INTO tw_webhook_attempts (webhook_id, attempt, started_ms, duration_ms, status_code, error) "
                "VALUES ({}, {}, {}, {}, {}, {}) RETURNING id",
                claimed.id,
                number,
                started,
                outcome.duration_ms,
                outcome.status_code,
                outcome.error,
            )
            # A failure counts only while this sender's lease is the row's (a sender whose
            # lease ran out, and whose row another sender took, records just its attempt);
            # a 2xx ends the webhook however late it comes.
            await sql.fetch(
                "UPDATE tw_webhooks SET state = {}, attempts = {}, next_attempt_ms = {}, lease_until_ms = 0, updated_ms = {} "
                "WHERE id = {} AND state = 'pending' AND (lease_until_ms = {} OR {}) RETURNING id",
                state,
                number,
                next_ms,
                now,
                claimed.id,
                claimed.lease_until_ms,
                outcome.delivered,
            )
