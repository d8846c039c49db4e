"""`tollway.storage` on SQLite and PostgreSQL: bound `{}` placeholders, FOR UPDATE only on
PostgreSQL, RETURNING, JSON text columns round-tripped, and a transaction that rolls back."""

from __future__ import annotations

import asyncio

import pytest
from piccolo.columns import BigInt, Text, Varchar
from piccolo.table import Table

from tollway import storage


class Probe(Table, tablename="storage_kit_probe"):
    id = Varchar(length=64, primary_key=True)
    body = Text()
    n = BigInt()


DROP = storage.statement("DROP TABLE IF EXISTS storage_kit_probe")
CREATE = storage.statement(
    "CREATE TABLE storage_kit_probe (id VARCHAR(64) PRIMARY KEY, body TEXT NOT NULL, n BIGINT NOT NULL)"
)
ADD = storage.statement(
    "INSERT INTO storage_kit_probe (id, body, n) VALUES ({}, {}, {}) ON CONFLICT (id) DO NOTHING RETURNING id, n"
)
BUMP = storage.statement("UPDATE storage_kit_probe SET n = n + {} WHERE id = {} RETURNING n")
ONE = storage.statement("SELECT id, body, n FROM storage_kit_probe WHERE id = {}")
LOCKED = storage.statement("SELECT n FROM storage_kit_probe WHERE id = {}", for_update=True)
ALL = storage.statement("SELECT id FROM storage_kit_probe ORDER BY id")


@pytest.fixture
async def probe(kernel_factory, db_kind):
    await kernel_factory()
    Probe._meta.db = storage.engine()
    await DROP.execute()
    await CREATE.execute()
    yield db_kind
    await DROP.execute()


async def test_placeholders_are_bound_in_order_and_rows_are_dicts(probe) -> None:
    awkward = "it's {} ; DROP TABLE storage_kit_probe; --"
    assert await ADD.row("a", awkward, 7) == {"id": "a", "n": 7}
    found = await ONE.row("a")
    assert type(found) is dict and found == {"id": "a", "body": awkward, "n": 7}
    assert await ONE.row("missing") is None
    assert await ONE.rows("missing") == []


async def test_returning_and_on_conflict(probe) -> None:
    assert await ADD.row("a", "x", 1) == {"id": "a", "n": 1}
    assert await ADD.row("a", "y", 2) is None  # the conflict inserted nothing, so nothing came back
    assert await BUMP.row(5, "a") == {"n": 6}
    assert await BUMP.rows(5, "nobody") == []
    claimed = await Probe.update({Probe.n: Probe.n + 1}).where(Probe.id == "a").returning(Probe.n)
    assert claimed == [{"n": 7}]


async def test_for_update_only_on_postgres(probe) -> None:
    on_pg = probe == "postgres"
    assert storage.on_postgres() is on_pg
    assert storage.for_update() == (" FOR UPDATE" if on_pg else "")
    assert LOCKED.text("postgres") == "SELECT n FROM storage_kit_probe WHERE id = $1 FOR UPDATE"
    assert LOCKED.text("sqlite") == "SELECT n FROM storage_kit_probe WHERE id = ?"
    assert "FOR UPDATE" not in ONE.text("postgres")
    query = storage.lock_rows(Probe.select(Probe.n).where(Probe.id == "a"))
    assert ("FOR UPDATE" in str(query)) is on_pg
    await ADD.execute("a", "x", 1)
    async with storage.transaction():
        assert await LOCKED.row("a") == {"n": 1}
        assert await query.first() == {"n": 1}


async def test_a_lock_makes_a_second_transaction_wait_on_postgres(probe) -> None:
    """Two read-modify-write transactions on one row: with the lock neither loses the other's
    write (on PostgreSQL by the row lock, on SQLite by its single writer)."""
    await ADD.execute("a", "x", 0)

    async def add_one() -> None:
        async with storage.transaction():
            n = (await LOCKED.row("a"))["n"]
            await asyncio.sleep(0.05)
            await Probe.update({Probe.n: n + 1}).where(Probe.id == "a")

    await asyncio.gather(*(add_one() for _ in range(4)))
    assert await ONE.row("a") == {"id": "a", "body": "x", "n": 4}


async def test_json_columns_round_trip(probe) -> None:
    value = {"b": [1, 2.5, None, True], "a": "é ✓", "nested": {"k": []}}
    await Probe.insert(Probe(id="j", body=storage.dumps(value), n=0))
    text = (await Probe.select(Probe.body).where(Probe.id == "j").first())["body"]
    assert text == '{"b":[1,2.5,null,true],"a":"é ✓","nested":{"k":[]}}'
    assert storage.loads(text) == value
    assert storage.loads(None) is None


async def test_a_transaction_rolls_back_as_a_whole(probe) -> None:
    with pytest.raises(RuntimeError):
        async with storage.transaction():
            await ADD.execute("a", "x", 1)
            await Probe.insert(Probe(id="b", body="y", n=2))
            assert [r["id"] for r in await ALL.rows()] == ["a", "b"]  # seen inside
            raise RuntimeError("abandon")
    assert await ALL.rows() == []
    async with storage.transaction():
        await ADD.execute("c", "z", 3)
    assert await ALL.rows() == [{"id": "c"}]


async def test_one_off_statements_bind_their_values_too(probe) -> None:
    await storage.execute(
        "INSERT INTO storage_kit_probe (id, body, n) VALUES ({}, {}, {})", "o", "{not a placeholder in a value}", 9
    )
    assert await storage.row("SELECT body, n FROM storage_kit_probe WHERE id = {}", "o") == {
        "body": "{not a placeholder in a value}",
        "n": 9,
    }
    assert await storage.rows("SELECT id FROM storage_kit_probe WHERE n > {}", 9) == []


def test_a_statement_has_no_braces_but_its_placeholders() -> None:
    with pytest.raises(ValueError):
        storage.statement("SELECT * FROM t WHERE id = {id}")
    assert storage.statement("SELECT {} , {}").text("postgres") == "SELECT $1 , $2"
    assert storage.statement("SELECT {} , {}").text("sqlite") == "SELECT ? , ?"


async def test_statements_go_to_the_driver_in_the_callers_transaction(probe, monkeypatch) -> None:
    """On the service's engines a statement skips Piccolo's query wrapper, inside a transaction
    (its own uncommitted rows seen, rolled back with it) and outside one (reads and writes)."""
    engine = storage.engine()
    wrapped: list[str] = []

    async def through_piccolo(querystring, *args, **kwargs):
        wrapped.append(str(querystring))
        raise AssertionError("a storage-kit statement went through run_querystring")

    monkeypatch.setattr(engine, "run_querystring", through_piccolo)
    await ADD.execute("a", "x", 1)
    with pytest.raises(RuntimeError):
        async with storage.transaction():
            assert await BUMP.row(1, "a") == {"n": 2}
            await ADD.execute("b", "y", 5)
            assert await ALL.rows() == [{"id": "a"}, {"id": "b"}]
            raise RuntimeError("abandon")
    assert await ALL.rows() == [{"id": "a"}]
    assert await ONE.row("a") == {"id": "a", "body": "x", "n": 1}
    assert wrapped == []
