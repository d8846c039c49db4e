"""The embedded SQLite engine: reads outside a transaction never wait for the writer,
transactions stay whole and serial, and the WAL is checkpointed off the request path."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

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
