"""The webhook outbox: rows written in the transaction that decided them, and the
sender that claims due rows, sends them and records every attempt (docs/webhooks.md).

A row is `pending` until an attempt gets a 2xx (`delivered`) or the sixth
attempt fails (`abandoned`); after the n-th failure the next attempt waits
`retry_base_s * 2**(n-1)`. The operator may queue an abandoned row again
(redelivery.py): it gets a fresh budget of six attempts, counted from `budget_from`. A sender claims due rows under a lease (`FOR UPDATE
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
from tollway._core.webhooks.tables import Webhook, WebhookAttempt
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
    row = Webhook(
        id=webhook_id,
        kind=kind,
        subject=subject,
        url=url,
        secret=secret,
        body=msgspec.json.encode(body).decode(),
        numbered=bool(numbered),
        state="pending",
        attempts=0,
        next_attempt_ms=now,
        lease_until_ms=0,
        created_ms=now,
        updated_ms=now,
        signing=signing,
    )
    added = await Webhook.insert(row).on_conflict(target=Webhook.id, action="DO NOTHING").returning(Webhook.id)
    return bool(added)


async def publish_due(bus: EventBus, webhook_id: str = "") -> None:
    """Wake the senders: call after the transaction that enqueued has committed."""
    await bus.publish(WEBHOOKS_DUE, webhook_id)


async def get(webhook_id: str) -> dict[str, Any] | None:
    """The outbox row (body as stored, without `attempt`), or None."""
    row = await Webhook.select().where(Webhook.id == webhook_id).first()
    if row is None:
        return None
    out = dict(row)
    out["numbered"] = bool(out["numbered"])
    return out


async def attempts_of(webhook_id: str) -> list[dict[str, Any]]:
    """Every attempt, oldest first: attempt, started_ms, duration_ms, status_code, error."""
    a = WebhookAttempt
    rows = (
        await a.select(a.attempt, a.started_ms, a.duration_ms, a.status_code, a.error)
        .where(a.webhook_id == webhook_id)
        .order_by(a.started_ms, a.id)
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
    budget_from: int = 0  # the attempts made before the operator's last redelivery

    def raw_body(self, attempt_no: int) -> bytes:
        if not self.numbered:
            return self.body.encode()
        body = msgspec.json.decode(self.body)
        body["attempt"] = attempt_no
        return msgspec.json.encode(body)


# Claiming due rows under a lease stays raw: one statement that picks and leases them, which
# the ORM cannot say (on PostgreSQL a CTE with FOR UPDATE SKIP LOCKED, so concurrent senders
# take disjoint rows; on SQLite an UPDATE of a limited subquery, its writer lock serialising).
CLAIM_PG = sql.Statement(
    "WITH due AS (SELECT id FROM tw_webhooks WHERE state = 'pending' AND next_attempt_ms <= {} AND lease_until_ms < {} "
    "ORDER BY next_attempt_ms LIMIT {} FOR UPDATE SKIP LOCKED) "
    "UPDATE tw_webhooks SET lease_until_ms = {}, updated_ms = {} FROM due WHERE tw_webhooks.id = due.id "
    "RETURNING tw_webhooks.id, tw_webhooks.url, tw_webhooks.secret, tw_webhooks.body, tw_webhooks.numbered, "
    "tw_webhooks.attempts, tw_webhooks.lease_until_ms, tw_webhooks.signing, tw_webhooks.budget_from"
)
CLAIM_SQLITE = sql.Statement(
    "UPDATE tw_webhooks SET lease_until_ms = {}, updated_ms = {} WHERE id IN (SELECT id FROM tw_webhooks "
    "WHERE state = 'pending' AND next_attempt_ms <= {} AND lease_until_ms < {} ORDER BY next_attempt_ms LIMIT {}) "
    "RETURNING id, url, secret, body, numbered, attempts, lease_until_ms, signing, budget_from"
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
            rows = await CLAIM_PG.rows(now, now, limit, lease, now)
        else:
            rows = await CLAIM_SQLITE.rows(lease, now, now, now, limit)
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
                int(r["budget_from"] or 0),
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
        spent = number - claimed.budget_from  # of this budget's attempts
        if outcome.delivered:
            state, next_ms = "delivered", now
        elif outcome.final or spent >= MAX_ATTEMPTS:
            state, next_ms = "abandoned", now
        else:
            state, next_ms = "pending", now + retry_delay_ms(self.retry_base_s, spent)
        async with self.db.transaction():
            await WebhookAttempt.insert(
                WebhookAttempt(
                    webhook_id=claimed.id,
                    attempt=number,
                    started_ms=started,
                    duration_ms=outcome.duration_ms,
                    status_code=outcome.status_code,
                    error=outcome.error,
                )
            )
            # A failure counts only while this sender's lease is the row's (a sender whose
            # lease ran out, and whose row another sender took, records just its attempt);
            # a 2xx ends the webhook however late it comes.
            ours = [Webhook.id == claimed.id, Webhook.state == "pending"]
            if not outcome.delivered:
                ours.append(Webhook.lease_until_ms == claimed.lease_until_ms)
            await Webhook.update(
                {
                    Webhook.state: state,
                    Webhook.attempts: number,
                    Webhook.next_attempt_ms: next_ms,
                    Webhook.lease_until_ms: 0,
                    Webhook.updated_ms: now,
                }
            ).where(*ours)
