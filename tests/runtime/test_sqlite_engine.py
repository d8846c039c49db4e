"""The embedded SQLite engine: reads outside a transaction never wait for the writer,
transactions stay whole and serial, concurrent ones share a commit (group commit), and
the WAL is checkpointed off the request path."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tollway._core.auth.tables import Agent
from tollway._core.storage import sql
from tollway._runtime.database import Database


async def open_db(tmp_path: Path, **engine: float) -> Database:
    db = Database(f"sqlite:///{tmp_path / 'tollway.db'}")
    for key, value in engine.items():
        setattr(db.engine, key, value)
    await db.connect()
    await db.migrate()
    return db


async def test_a_read_outside_a_transaction_does_not_wait_for_an_open_one(tmp_path: Path) -> None:
    db = await open_db(tmp_path)
    try:
        await sql.fetch(
            "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, NULL, 'a', 5, 0)", "a1"
        )
        inside = asyncio.Event()
        release = asyncio.Event()

        async def writer() -> None:
            async with db.transaction():
                await sql.fetch("UPDATE tw_agents SET credits = 7 WHERE id = {}", "a1")
                inside.set()
                await release.wait()  # the transaction stays open across an await

        task = asyncio.create_task(writer())
        await inside.wait()
        # the writer's lock is held: the read still answers at once, with the committed value
        seen = await asyncio.wait_for(sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", "a1"), 1)
        assert seen["credits"] == 5
        release.set()
        await task
        assert (await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", "a1"))["credits"] == 7
    finally:
        await db.close()


async def test_writes_outside_a_transaction_wait_for_the_open_one_and_nothing_is_lost(tmp_path: Path) -> None:
    db = await open_db(tmp_path)
    try:
        await sql.fetch(
            "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, NULL, 'a', 0, 0)", "a1"
        )

        async def add_in_transaction(i: int) -> None:
            async with db.transaction():
                row = await sql.fetch_one("SELECT credits FROM tw_agents WHERE id = {}", "a1")
                await asyncio.sleep(0)  # let others run between the read and the write
                await sql.fetch("UPDATE tw_agents SET credits = {} WHERE id = {}", row["credits"] + 1, "a1")

        async def add_alone(i: int) -> None:
            await sql.fetch("UPDATE tw_agents SET credits = credits + 1 WHERE id = {}", "a1")

        await asyncio.gather(*[add_in_transaction(i) for i in range(50)], *[add_alone(i) for i in range(50)])
        assert (await Agent.select(Agent.credits).where(Agent.id == "a1").first())["credits"] == 100
    finally:
        await db.close()


async def test_the_wal_is_checkpointed_by_the_background_thread(tmp_path: Path) -> None:
    db = await open_db(tmp_path, checkpoint_every_s=0.05)
    path = str(tmp_path / "tollway.db")
    try:
        for i in range(200):
            await sql.fetch(
                "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, NULL, 'a', 0, 0)",
                f"a{i}",
            )
        await asyncio.sleep(0.3)
        other = sqlite3.connect(path)
        try:  # a passive checkpoint now finds every frame of the log already in the file
            busy, frames, done = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            other.close()
        assert busy == 0 and frames == done
        # the commits themselves never checkpoint
        assert db.engine.raw_connection().execute("PRAGMA wal_autocheckpoint").fetchone()["wal_autocheckpoint"] == 0
    finally:
        await db.close()
    assert os.path.exists(path)
    reopened = sqlite3.connect(path)
    assert reopened.execute("SELECT count(*) FROM tw_agents").fetchone()[0] == 200
    reopened.close()


class Refused(Exception):
    """A member's own failure, after it wrote."""


def count_commits(db: Database) -> list[str]:
    """The writer's COMMIT statements from now on (sqlite3's trace of what it runs)."""
    seen: list[str] = []
    db.engine.raw_connection().set_trace_callback(lambda text: seen.append(text) if text == "COMMIT" else None)
    return seen


async def member(db: Database, i: int, fails: bool, pauses: int, path: str, visible: dict[int, bool]) -> None:
    """One transaction writing agent `m<i>` (and failing after it wrote when `fails`); when
    it returns, another connection is asked at once whether its row is committed."""
    try:
        async with db.transaction():
            await sql.fetch(
                "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, NULL, 'm', {}, 0)",
                f"m{i}",
                i,
            )
            for _ in range(pauses):
                await asyncio.sleep(0)  # others queue for the writer meanwhile
            if fails:
                raise Refused(i)
    except Refused:
        return
    other = sqlite3.connect(path)
    try:
        visible[i] = other.execute("SELECT count(*) FROM tw_agents WHERE id = ?", (f"m{i}",)).fetchone()[0] == 1
    finally:
        other.close()


async def test_concurrent_transactions_share_a_commit_and_answer_after_it(tmp_path: Path) -> None:
    db = await open_db(tmp_path)
    path = str(tmp_path / "tollway.db")
    try:
        commits = count_commits(db)
        visible: dict[int, bool] = {}
        await asyncio.gather(*[member(db, i, False, 1, path, visible) for i in range(40)])
        # every member's row was committed before its `async with` returned
        assert visible == {i: True for i in range(40)}
        assert 1 <= len(commits) < 40 / 4  # forty transactions, a handful of commits
    finally:
        await db.close()


async def test_one_at_a_time_each_transaction_commits_on_its_own(tmp_path: Path) -> None:
    db = await open_db(tmp_path)
    path = str(tmp_path / "tollway.db")
    try:
        commits = count_commits(db)
        visible: dict[int, bool] = {}
        for i in range(5):
            await member(db, i, False, 1, path, visible)
        assert visible == {i: True for i in range(5)} and len(commits) == 5
    finally:
        await db.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=30))
def test_a_failed_member_rolls_back_alone(tmp_path_factory, plan: list[tuple[bool, int]]) -> None:
    """Any mix of members that fail after writing and members that pause inside: exactly
    the rows of those that succeeded are there, each committed when its member returned."""

    async def run() -> None:
        folder = tmp_path_factory.mktemp("group")
        db = await open_db(folder)
        try:
            visible: dict[int, bool] = {}
            await asyncio.gather(
                *[
                    member(db, i, fails, pauses, str(folder / "tollway.db"), visible)
                    for i, (fails, pauses) in enumerate(plan)
                ]
            )
            kept = {i for i, (fails, _) in enumerate(plan) if not fails}
            assert visible == {i: True for i in kept}
            rows = await sql.fetch("SELECT id FROM tw_agents WHERE name = 'm'")
            assert {r["id"] for r in rows} == {f"m{i}" for i in kept}
            assert db.engine.group is None  # nothing left open
        finally:
            await db.close()

    asyncio.run(run())


async def test_a_failed_commit_fails_every_member_of_its_group(tmp_path: Path) -> None:
    """When the shared COMMIT itself fails, no member answers as if its work were kept."""
    db = await open_db(tmp_path)
    try:
        writer = db.engine.raw_connection()
        real = writer.execute
        failing = {"on": True}

        class Flaky:
            """The writer connection with its next COMMIT refused (as a full disk would)."""

            def __getattr__(self, name):
                return getattr(writer, name)

            def execute(self, text, *args):
                if text == "COMMIT" and failing["on"]:
                    failing["on"] = False
                    raise sqlite3.OperationalError("disk I/O error")
                return real(text, *args)

        db.engine._conn = Flaky()  # type: ignore[assignment]
        outcomes = await asyncio.gather(
            *[member(db, i, False, 1, str(tmp_path / "tollway.db"), {}) for i in range(10)], return_exceptions=True
        )
        failed = [o for o in outcomes if isinstance(o, sqlite3.OperationalError)]
        kept = await sql.fetch("SELECT id FROM tw_agents WHERE name = 'm'")
        # the members of the failed group raised; those of later groups (if any) kept their rows
        assert failed and len(failed) + len(kept) == 10
        assert db.engine.group is None
    finally:
        db.engine._conn = writer
        await db.close()


async def test_writes_outside_transactions_join_the_group_and_fail_alone(tmp_path: Path) -> None:
    """Statements run outside any transaction (a quote, a claim) share commits too; one that
    breaks a constraint raises to its caller alone, and each returns once it is committed."""
    db = await open_db(tmp_path)
    path = str(tmp_path / "tollway.db")
    try:
        commits = count_commits(db)
        insert = "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, NULL, 'w', 0, 0)"
        seen: dict[str, bool] = {}

        async def write(agent: str) -> None:
            await sql.fetch(insert, agent)
            other = sqlite3.connect(path)
            try:
                seen[agent] = other.execute("SELECT count(*) FROM tw_agents WHERE id = ?", (agent,)).fetchone()[0] == 1
            finally:
                other.close()

        outcomes = await asyncio.gather(*[write(f"w{i % 30}") for i in range(31)], return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, Exception)]
        assert len(failed) == 1 and isinstance(failed[0], sqlite3.IntegrityError)  # w0 twice
        assert seen == {f"w{i}": True for i in range(30)}
        assert len(commits) < 10
    finally:
        await db.close()


async def test_a_group_waiting_for_a_slow_transaction_does_not_spin(tmp_path: Path) -> None:
    """A finished member waits for the commit while another transaction holds the writer
    across a slow await: nothing polls meanwhile (the commit is asked for when the writer is
    let go), and the member's row is committed when it returns."""
    db = await open_db(tmp_path)
    path = str(tmp_path / "tollway.db")
    try:
        inside = asyncio.Event()

        async def slow() -> None:
            async with db.transaction():
                await sql.fetch(
                    "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ('s', NULL, 's', 0, 0)"
                )
                inside.set()
                await asyncio.sleep(0.5)

        visible: dict[int, bool] = {}
        first = asyncio.create_task(member(db, 0, False, 3, path, visible))
        await asyncio.sleep(0)  # the member is inside its transaction: the slow one queues for the writer
        slow_task = asyncio.create_task(slow())
        started = time.process_time()
        await inside.wait()
        await asyncio.gather(first, slow_task)
        assert visible == {0: True}
        assert time.process_time() - started < 0.15  # half a second of waiting, not of polling
    finally:
        await db.close()


async def test_a_member_cancelled_while_it_waits_for_the_commit_leaves_the_others_whole(tmp_path: Path) -> None:
    """A member that ended its transaction and is cancelled while it waits for the group's
    commit (a client gone) raises CancelledError alone: its row is still committed with the
    others (it was released into the group), and the others answer as usual."""
    db = await open_db(tmp_path)
    path = str(tmp_path / "tollway.db")
    try:
        commits = count_commits(db)
        visible: dict[int, bool] = {}
        waiting = asyncio.Event()
        hold = asyncio.Event()

        async def slow() -> None:
            """Holds the writer after the others finished, so that they wait for the commit."""
            await waiting.wait()
            async with db.transaction():
                await hold.wait()

        async def first() -> None:
            await member(db, 0, False, 0, path, visible)

        cancelled = asyncio.create_task(first())
        others = [asyncio.create_task(member(db, i, False, 1, path, visible)) for i in range(1, 4)]
        holder = asyncio.create_task(slow())
        for _ in range(5):
            await asyncio.sleep(0)
        assert db.engine.group is not None and db.engine.group.members >= 1  # ended, waiting for the commit
        waiting.set()
        await asyncio.sleep(0)
        cancelled.cancel()
        hold.set()
        await asyncio.gather(holder, *others)
        assert (await asyncio.gather(cancelled, return_exceptions=True))[0].__class__ is asyncio.CancelledError
        assert visible == {1: True, 2: True, 3: True}
        rows = await sql.fetch("SELECT id FROM tw_agents WHERE name = 'm'")
        assert {r["id"] for r in rows} == {"m0", "m1", "m2", "m3"}
        assert commits and db.engine.group is None
    finally:
        await db.close()


def _outcome(convert: Callable[[Any], Any], value: bytes | str) -> tuple[Any, ...]:
    """A converter's answer (with its type), or the kind of error it refused the value with."""
    try:
        answer = convert(value)
    except Exception as exc:  # the refusal's kind is what must match
        return ("raised", type(exc))
    return ("answered", type(answer), answer)


_TEXTS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1", "0", "", " 7 ", "1_000", "+3", "-0", "1e3", "1.5", "٣", "true", "\x00"]),
    st.text(max_size=8),
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_TEXTS.map(lambda text: text.encode("utf-8", "surrogatepass")), _TEXTS, st.binary(max_size=6)))
def test_the_integer_and_boolean_converters_answer_as_piccolos(value: bytes | str) -> None:
    """The engine's INTEGER and BOOLEAN converters (a fast path first) give what Piccolo's
    give for any value, or refuse it with the same kind of error."""
    from piccolo.engine.sqlite import convert_boolean_out, convert_int_out

    from tollway._runtime.database.sqlite_engine import boolean_out, int_out

    assert _outcome(int_out, value) == _outcome(convert_int_out, value)
    assert _outcome(boolean_out, value) == _outcome(convert_boolean_out, value)
