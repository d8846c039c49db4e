"""The one-commit component floor of a credits call: its parts measured alone, in one process.

A credits-paid lookup cannot cost the serving process less than the sum of:
  sql_us    the SQL statements a real call ran (captured from one, with their values),
            replayed on the raw driver (sqlite3, or asyncpg with prepared statements) in
            one transaction with one commit per call, fresh primary keys each time: the
            same rows into the same tables and indexes, none of the service's glue;
  sign_us   the receipt's signature: canonical JSON (RFC 8785), SHA-256 and Ed25519 over
            a receipt the service issued;
  tool_us   the tool's own run through the kernel's tool runner, its upstream answer cached
            (the NHTSA replay), no payment, no receipt, no facts;
and the bare framework's request (measured by the caller as `framework_cpu_us`). Each part
is the CPU time of this process per call (`time.process_time`), the least of three runs of
`n` calls (the least disturbed).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from tollway._core.storage.sql import Bound, compiled
from tollway._core.storage.tables import BoundEngine

RUNS = 3


def _writes(text: str) -> bool:
    """Whether a statement writes (its own commit when run outside a transaction)."""
    words = text.split(None, 1)
    first = words[0].upper() if words else ""
    if first in ("INSERT", "UPDATE", "DELETE"):
        return True
    return first == "WITH" and any(w in text.upper() for w in ("INSERT ", "UPDATE ", "DELETE "))


class StatementLog:
    """What an engine runs while `on`, the rate limiter's counter aside (not the payment's):
    each statement as (template, values) (a statement of the storage kit run on the driver,
    `run_sql`, as its compiled text: replayed as it is), an ORM query as (its text, None), and
    the start of each outermost transaction as (TRANSACTION, None); `commits` counts the
    outermost transactions and the writes run outside any (each its own commit)."""

    TRANSACTION = "-- transaction"

    def __init__(self) -> None:
        self.on = False
        self.entries: list[tuple[str, tuple[Any, ...] | None]] = []
        self.commits = 0

    def install(self, engine: Any) -> Callable[[], None]:
        """Start logging what `engine` runs; returns what stops it."""
        base = type(engine)
        log = self

        class Logged(base):  # type: ignore[misc, valid-type]
            __slots__ = ()

            async def run_querystring(self, querystring: Any, *args: Any, **kwargs: Any) -> Any:
                if log.on and "tw_rate_counters" not in str(querystring):
                    if isinstance(querystring, Bound):
                        log.entries.append((querystring.template, querystring.args))
                    else:
                        log.entries.append((" ".join(str(querystring).split()), None))
                    if self.current_transaction.get() is None and _writes(log.entries[-1][0]):
                        log.commits += 1
                return await base.run_querystring(self, querystring, *args, **kwargs)

            async def run_sql(self, query: str, args: tuple[Any, ...]) -> Any:
                if log.on and "tw_rate_counters" not in query:
                    log.entries.append((query, tuple(args)))
                    if self.current_transaction.get() is None and _writes(query):
                        log.commits += 1
                return await base.run_sql(self, query, args)  # type: ignore[attr-defined]

            def transaction(self, *args: Any, **kwargs: Any) -> Any:
                if log.on and self.current_transaction.get() is None:
                    log.entries.append((log.TRANSACTION, None))
                    log.commits += 1
                return base.transaction(self, *args, **kwargs)

        engine.__class__ = Logged

        def uninstall() -> None:
            engine.__class__ = base

        return uninstall

    def lines(self) -> list[str]:
        """Each entry's text (a statement's first 110 characters)."""
        return [" ".join(text.split())[:110] for text, _ in self.entries]

    def statements(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The named statements with their values (what can be replayed)."""
        return [(text, args) for text, args in self.entries if args is not None]


ID = re.compile(r"^([a-z]+_)[0-9a-f]{16,32}$")


def _fresh(args: tuple[Any, ...], keep: str) -> tuple[Any, ...]:
    """A statement's values with every generated id (ledger entry, receipt, request) new, the
    paying agent's kept: the replay inserts new rows where the call inserted its own."""

    def fresh(value: Any) -> Any:
        if isinstance(value, str) and value != keep and (match := ID.match(value)):
            return match.group(1) + uuid.uuid4().hex[: len(value) - len(match.group(1))]
        return value

    return tuple(fresh(v) for v in args)


async def _least(n: int, one: Callable[[], Awaitable[None]]) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.process_time()
        for _ in range(n):
            await one()
        best = min(best, (time.process_time() - start) / n * 1e6)
    return round(best, 1)


async def sql_floor(statements: list[tuple[str, tuple[Any, ...]]], agent_id: str, n: int) -> float:
    """The captured statements in one transaction per call on the raw driver of the bound engine."""
    engine = BoundEngine.current
    if engine.engine_type == "sqlite":
        conn = engine.raw_connection()
        texts = [(compiled(t, "sqlite"), a) for t, a in statements]

        async def one() -> None:
            conn.execute("BEGIN IMMEDIATE")
            for text, args in texts:
                conn.execute(text, _fresh(args, agent_id)).fetchall()
            conn.execute("COMMIT")

        return await _least(n, one)
    import asyncpg

    where = {k: v for k, v in engine.config.items() if k in ("host", "port", "user", "password", "database")}
    pg = await asyncpg.connect(**where)
    try:
        texts = [(compiled(t, "postgres"), a) for t, a in statements]

        async def one_pg() -> None:
            async with pg.transaction():
                for text, args in texts:
                    await pg.fetch(text, *_fresh(args, agent_id))

        return await _least(n, one_pg)
    finally:
        await pg.close()


async def component_floor(
    kernel: Any, one_call: Callable[[], Awaitable[None]], agent_id: str, lookup: dict[str, Any], n: int
) -> dict:
    """The parts of one credits call of `agent_id` for the vehicle recall `lookup` (`one_call`
    makes one through the app)."""
    from tollway._core.storage import sql

    log = StatementLog()
    uninstall = log.install(BoundEngine.current)
    try:
        log.on = True
        await one_call()
    finally:
        log.on = False
        uninstall()
    # the captured debit must keep succeeding: a balance no replay can spend
    await sql.fetch("UPDATE tw_agents SET credits = {} WHERE id = {}", 10**15, agent_id)
    out: dict[str, Any] = {
        "floor_statements": len(log.statements()),
        "floor_sql_us": await sql_floor(log.statements(), agent_id, n),
    }
    row = await sql.fetch_one("SELECT body FROM tw_receipts ORDER BY created_ms DESC LIMIT 1")
    receipt = msgspec.json.decode(row["body"]) if isinstance(row["body"], (str, bytes)) else dict(row["body"])
    signer = kernel.receipts.signer

    async def sign() -> None:
        signer.sign(receipt)

    out["floor_sign_us"] = await _least(n, sign)
    tool = kernel.registry.tools["vehicle_recalls"]
    value = msgspec.convert(lookup, tool.input_type)

    async def run_tool() -> None:
        await kernel.tool_runner.run(tool, value, request_id="req_floor", agent_id=agent_id)

    out["floor_tool_us"] = await _least(n, run_tool)
    return out
