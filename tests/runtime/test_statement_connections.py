"""Single statements on PostgreSQL run on pooled connections kept borrowed between them
(runtime/database/statement_connections.py): one connection serves statements in turn, no
more than `most` are kept, a connection left unused for `idle_s`, a statement failed or was
cancelled on, or one the server ended, goes back to the pool."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from tollway._runtime.database.statement_connections import StatementConnections

pytestmark = pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)
PID = "SELECT pg_backend_pid() AS pid"


@pytest.fixture
async def pool(kernel_factory):
    kernel = await kernel_factory()
    assert kernel.db.engine.statements is not None  # the service's engine keeps some
    return kernel.db.engine.pool


async def pid(kept: StatementConnections) -> int:
    return (await kept.fetch(PID, ()))[0]["pid"]


async def test_statements_in_turn_share_one_kept_connection(pool):
    kept = StatementConnections(pool, most=2)
    pids = {await pid(kept) for _ in range(5)}
    assert len(pids) == 1 and kept.borrowed == 1 and len(kept.idle) == 1
    await kept.close()
    assert kept.borrowed == 0 and kept.idle == []
    await pid(kept)  # after close, through the pool
    assert kept.borrowed == 0 and kept.idle == []


async def test_statements_beyond_the_kept_connections_go_through_the_pool(pool):
    kept = StatementConnections(pool, most=2)
    rows = await asyncio.gather(*[kept.fetch("SELECT pg_sleep(0.1), pg_backend_pid() AS pid", ()) for _ in range(6)])
    assert len({r[0]["pid"] for r in rows}) > 2  # the four beyond the two kept ran on other connections
    assert kept.borrowed == 2 and len(kept.idle) == 2
    await kept.close()


async def test_a_failed_or_cancelled_statement_gives_its_connection_back(pool):
    kept = StatementConnections(pool, most=1)
    with pytest.raises(asyncpg.DivisionByZeroError):
        await kept.fetch("SELECT 1 / 0", ())
    assert kept.borrowed == 0 and kept.idle == []
    slow = asyncio.create_task(kept.fetch("SELECT pg_sleep(5)", ()))
    await asyncio.sleep(0.2)
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert kept.borrowed == 0 and kept.idle == []
    async with asyncio.timeout(2):  # the pool waited out the cancellation: the next statement runs at once
        await pid(kept)
    assert kept.borrowed == 1
    await kept.close()


async def test_a_kept_connection_the_server_ended_is_replaced(pool):
    kept = StatementConnections(pool, most=1)
    first = await pid(kept)
    await pool.fetch("SELECT pg_terminate_backend($1)", first)
    await asyncio.sleep(0.5)  # the client sees its socket closed (asyncpg gives the connection back to the pool)
    second = await pid(kept)
    assert second != first and kept.borrowed == 1
    await kept.close()


async def test_a_connection_kept_unused_goes_back_to_the_pool(pool):
    kept = StatementConnections(pool, most=2, idle_s=0.4)
    await asyncio.gather(*[kept.fetch("SELECT pg_sleep(0.1)", ()) for _ in range(2)])
    assert kept.borrowed == 2 and len(kept.idle) == 2
    idle_in_pool = pool.get_idle_size()
    for _ in range(4):  # one connection keeps serving; the other waits unused
        await asyncio.sleep(0.15)
        await pid(kept)
    assert kept.borrowed == 1 and len(kept.idle) == 1
    assert pool.get_idle_size() == idle_in_pool + 1
    await asyncio.sleep(0.6)  # now nothing runs: the last one goes back too
    assert kept.borrowed == 0 and kept.idle == []
    await pid(kept)  # and the next statement borrows again
    assert kept.borrowed == 1
    await kept.close()
    assert kept.borrowed == 0 and kept._sweep is None
