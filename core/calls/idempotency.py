"""Idempotency-Key records (docs/limits.md; a step of the paid call, docs/architecture.md).

Where a tool's declaration applies `Idempotency-Key`, the first request with a
key owns it and runs; every later request with the same key in the same scope
(`<tool name>:<payer or agent id>`) gets:

* the same body, first one finished: the stored status, body and headers replayed
  (errors included, once execution began);
* a different body: 422 `idempotency_key_reused`;
* the same body while the first is still running: 409 `idempotency_in_progress`
  with `Retry-After`.

Records live `ttl_s` (24 hours by default) from when they were written, or for good for a
tool that declares `idempotency_durable` (physical mail). The
winner of a race is decided by ONE `INSERT … ON CONFLICT (id) DO NOTHING
RETURNING id`, so any number of processes sharing the database agree. A
`running` record carries a lease: if its owner crashed, a request after the
lease ends takes it over (a conditional UPDATE, again one winner) and runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import msgspec
from piccolo.columns import BigInt, Integer, Text, Varchar
from piccolo.table import Table

from tollway._core.basics.canonical import canonical_bytes
from tollway._core.basics.errors import ServiceError, invalid_request
from tollway._core.basics.request import Answer
from tollway._core.payments import x402
from tollway._core.storage import sql
from tollway._core.storage.tables import PLACEHOLDER_ENGINE

DEFAULT_TTL_S = 86_400
DEFAULT_LEASE_S = 60
DURABLE_MS = 100 * 365 * 86_400_000  # a durable record's life: never purged in practice
IN_PROGRESS_RETRY_AFTER_S = 1
KEY_MAX = 255
HEADER = "Idempotency-Key"


class IdempotencyRecord(Table, tablename="tw_idempotency", db=PLACEHOLDER_ENGINE):
    id = Varchar(length=64, primary_key=True)  # sha256 hex of "<scope>\n<key>"
    scope = Text()  # "<tool name>:<payer or agent id>", for inspection
    body_hash = Varchar(length=64)
    state = Varchar(length=8)  # running | done
    owner = Varchar(length=32, null=True, default=None)  # token of the request running it
    lease_until_ms = BigInt(default=0)  # a running record may be taken over after this
    status = Integer(null=True, default=None)
    body = Text(null=True, default=None)  # JSON
    headers = Text(null=True, default=None)  # JSON object of strings
    created_ms = BigInt()
    expires_ms = BigInt(index=True)


IDEMPOTENCY_TABLES: tuple[type[Table], ...] = (IdempotencyRecord,)

_CLAIM = (
    "INSERT INTO tw_idempotency (id, scope, body_hash, state, owner, lease_until_ms, created_ms, expires_ms) "
    "VALUES ({}, {}, {}, 'running', {}, {}, {}, {}) ON CONFLICT (id) DO NOTHING RETURNING id"
)
_READ = "SELECT body_hash, state, owner, lease_until_ms, status, body, headers, expires_ms FROM tw_idempotency WHERE id = {}"
_DROP_EXPIRED_ONE = "DELETE FROM tw_idempotency WHERE id = {} AND expires_ms <= {} RETURNING id"
_TAKE_OVER = (
    "UPDATE tw_idempotency SET owner = {}, lease_until_ms = {} "
    "WHERE id = {} AND state = 'running' AND owner = {} AND lease_until_ms <= {} RETURNING id"
)
_FINISH = (
    "UPDATE tw_idempotency SET state = 'done', status = {}, body = {}, headers = {}, expires_ms = {} "
    "WHERE id = {} AND state = 'running' AND owner = {} RETURNING id"
)
_ABANDON = "DELETE FROM tw_idempotency WHERE id = {} AND state = 'running' AND owner = {} RETURNING id"
_PURGE = "DELETE FROM tw_idempotency WHERE expires_ms <= {} RETURNING id"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def record_id(scope: str, key: str) -> str:
    return hashlib.sha256(f"{scope}\n{key}".encode()).hexdigest()


def check_key(key: str | None) -> str:
    """The key itself if it is 1-255 printable ASCII characters, else 400 `invalid_request`."""
    if key is None or not 1 <= len(key) <= KEY_MAX or not all(" " <= ch <= "~" for ch in key):
        raise invalid_request(
            f"{HEADER} must be 1 to {KEY_MAX} printable ASCII characters.",
            [{"field": HEADER, "message": f"expected 1 to {KEY_MAX} printable ASCII characters"}],
        )
    return key


def missing_key() -> ServiceError:  # a tool whose declaration makes the key mandatory
    return invalid_request(f"{HEADER} is required for this endpoint.", [{"field": HEADER, "message": "required"}])


def hash_body(body: bytes) -> str:
    """SHA-256 of the request body as JSON canonicalised by RFC 8785 (key order and
    whitespace do not matter; memo and decisionContext do), or of the raw bytes
    when it is not canonicalisable JSON."""
    try:
        canonical = canonical_bytes(msgspec.json.decode(body))
    except ValueError:  # not JSON, or numbers RFC 8785 cannot represent
        canonical = body
    return hashlib.sha256(canonical).hexdigest()


@dataclasses.dataclass(frozen=True)
class Begin:
    """What `begin` decided: `new` (run it, then `finish(token, …)` or `abandon(token)`)
    or `replay` (answer `status`, `body`, `headers` as stored)."""

    kind: Literal["new", "replay"]
    token: str | None = None
    status: int | None = None
    body: Any = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


def key_reused() -> ServiceError:
    return ServiceError(
        422,
        "idempotency_key_reused",
        f"This {HEADER} was already used with a different request body; use a new key for a new request.",
    )


def in_progress(retry_after_s: int = IN_PROGRESS_RETRY_AFTER_S) -> ServiceError:
    return ServiceError(
        409,
        "idempotency_in_progress",
        f"A request with this {HEADER} is still running; retry after {retry_after_s} seconds to get its answer.",
        extra={"retry_after": retry_after_s},
        headers={"Retry-After": str(retry_after_s)},
    )


# A record keeps an answer's x402 settlement among its headers, in its PAYMENT-RESPONSE
# header form, as records have always been written (those of earlier versions replay too).
def _stored_headers(answer: Answer) -> dict[str, str]:
    settled = (
        {x402.PAYMENT_RESPONSE_HEADER: x402.encode_header(answer.settlement)} if answer.settlement is not None else {}
    )
    return {**settled, **answer.headers}


def _replayed(begin: Begin) -> Answer:
    headers = dict(begin.headers)
    settlement = headers.pop(x402.PAYMENT_RESPONSE_HEADER, None)
    return Answer(begin.status, begin.body, headers, settlement=x402.decode_header(settlement) if settlement else None)


class IdempotencyStore:
    """Idempotency records in the database. `engine` defaults to the one
    `IdempotencyRecord` is bound to (tests pass another to act as a second process)."""

    def __init__(
        self, ttl_s: int = DEFAULT_TTL_S, running_lease_s: int = DEFAULT_LEASE_S, *, engine: Any = None
    ) -> None:
        if ttl_s < 1 or running_lease_s < 1:
            raise ValueError("idempotency ttl and lease must be at least 1 second")
        self.ttl_ms = ttl_s * 1000
        self.lease_ms = running_lease_s * 1000
        self._engine = engine

    async def _run(self, template: str, *args: Any) -> list[Any]:
        engine = self._engine or IdempotencyRecord._meta.db
        if engine is PLACEHOLDER_ENGINE:
            raise RuntimeError(
                "IdempotencyRecord is not bound: add core.idempotency.IDEMPOTENCY_TABLES to the Database"
            )
        return await sql.run(engine, template, args)

    async def begin(
        self, scope: str, key: str, body_hash: str, now_ms: int | None = None, *, durable: bool = False
    ) -> Begin:
        """Claim `key` in `scope` for a request whose body hashes to `body_hash`.

        Returns `new` (this request owns the key) or `replay`; raises 400 for a
        malformed key, 422 `idempotency_key_reused`, 409 `idempotency_in_progress`.
        """
        check_key(key)
        rid = record_id(scope, key)
        now = _now_ms() if now_ms is None else now_ms
        owner = secrets.token_hex(16)
        # A record can vanish between the failed INSERT and the SELECT (abandoned or
        # purged); each pass either decides or observes such a change, so a few suffice.
        for _ in range(8):
            claimed = await self._run(
                _CLAIM, rid, scope, body_hash, owner, now + self.lease_ms, now, now + self._ttl(durable)
            )
            if claimed:
                return Begin("new", token=f"{rid}.{owner}")
            rows = await self._run(_READ, rid)
            if not rows:
                continue
            row = rows[0]
            if row["expires_ms"] <= now:  # past its TTL: as if absent
                await self._run(_DROP_EXPIRED_ONE, rid, now)
                continue
            if row["body_hash"] != body_hash:
                raise key_reused()
            if row["state"] == "done":
                return Begin(
                    "replay",
                    status=int(row["status"]),
                    body=msgspec.json.decode(row["body"]),
                    headers=msgspec.json.decode(row["headers"]) if row["headers"] else {},
                )
            if row["lease_until_ms"] > now:
                raise in_progress()
            # running, and its owner has not finished within the lease: take it over
            taken = await self._run(_TAKE_OVER, owner, now + self.lease_ms, rid, row["owner"], now)
            if taken:
                return Begin("new", token=f"{rid}.{owner}")
        raise in_progress()

    @staticmethod
    def _split(token: str) -> tuple[str, str]:
        rid, _, owner = token.partition(".")
        if not rid or not owner:
            raise ValueError("not an idempotency token")
        return rid, owner

    def _ttl(self, durable: bool) -> int:
        return DURABLE_MS if durable else self.ttl_ms

    async def finish(
        self,
        token: str,
        status: int,
        body: Any,
        headers: Mapping[str, str],
        now_ms: int | None = None,
        *,
        durable: bool = False,
    ) -> bool:
        """Store the answer to replay. False if the record is no longer this token's
        (its lease ended and another request took it over, or it was purged)."""
        rid, owner = self._split(token)
        now = _now_ms() if now_ms is None else now_ms
        done = await self._run(
            _FINISH,
            int(status),
            msgspec.json.encode(body).decode(),
            msgspec.json.encode(dict(headers)).decode(),
            now + self._ttl(durable),
            rid,
            owner,
        )
        return bool(done)

    async def abandon(self, token: str) -> bool:
        """Remove a running record that did not execute (e.g. it was only quoted, 402),
        so a retry with the same key proceeds. False if it was no longer this token's."""
        rid, owner = self._split(token)
        return bool(await self._run(_ABANDON, rid, owner))

    async def answer_once(
        self, scope: str, key: str, body: bytes, run: Callable[[], Awaitable[Answer]], *, durable: bool = False
    ) -> Answer:
        """Run `run` once for (scope, key): a retry with the same body gets the stored
        answer or error; a refused payment or proof (401, 402) ran nothing and is not kept."""
        begin = await self.begin(scope, key, hash_body(body), durable=durable)
        if begin.kind == "replay":
            return _replayed(begin)
        try:
            answer = await run()
        except ServiceError as exc:
            if exc.status in (401, 402):
                await self.abandon(begin.token)
            else:  # errors after execution began are replayed like answers
                await self.finish(begin.token, exc.status, exc.body(), exc.headers, durable=durable)
            raise
        except BaseException:
            await self.abandon(begin.token)
            raise
        await self.finish(begin.token, answer.status, answer.body, _stored_headers(answer), durable=durable)
        return answer

    async def purge_expired(self, now_ms: int | None = None) -> int:
        """Delete records past their TTL; returns how many."""
        now = _now_ms() if now_ms is None else now_ms
        return len(await self._run(_PURGE, now))


def parse_settings(env: Mapping[str, str]) -> tuple[int, int]:
    """(ttl_s, lease_s) from `TOLLWAY_IDEMPOTENCY_TTL_S` (default 86400) and
    `TOLLWAY_IDEMPOTENCY_LEASE_S` (default 60); ValueError naming a bad one."""

    def read(name: str, default: int, lo: int, hi: int) -> int:
        text = (env.get(name) or "").strip()
        if not text:
            return default
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{name} must be a whole number of seconds, not {text!r}") from None
        if not lo <= value <= hi:
            raise ValueError(f"{name} must be from {lo} to {hi} seconds, not {value}")
        return value

    return read("TOLLWAY_IDEMPOTENCY_TTL_S", DEFAULT_TTL_S, 60, 30 * 86_400), read(
        "TOLLWAY_IDEMPOTENCY_LEASE_S", DEFAULT_LEASE_S, 1, 3600
    )


__all__ = [
    "HEADER",
    "IDEMPOTENCY_TABLES",
    "Begin",
    "IdempotencyRecord",
    "IdempotencyStore",
    "check_key",
    "hash_body",
    "missing_key",
    "parse_settings",
    "record_id",
]
