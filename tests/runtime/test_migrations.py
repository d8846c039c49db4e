"""Versioned, forward-only migrations on SQLite and PostgreSQL: the first migration
makes the schema the release before migrations made; a database of that release
is adopted and upgraded in place with every row kept (at start and by `tollway db
migrate`) and serves paid calls after; a plugin's app applies its migrations in
order and each once; processes starting together apply each migration once."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pluggy
import pytest

from tests.support.echo_plugin import EchoPlugin
from tests.support.jobs_plugin import JobsPlugin
from tests.support.notes_plugin import MIGRATIONS, Note, NotesPlugin, notes_app
from tests.support.old_release import (
    fixture,
    index_names,
    make_old_database,
    normalized,
    rows_of,
    schema_of,
    tables_of,
    without_rowid,
)
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.plugin_api import hookspecs
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt
from tollway._core.schema import KERNEL_APPS, KERNEL_TABLES, LEGACY_APP
from tollway._runtime import cli
from tollway._runtime.database import Database, MigrationError
from tollway._runtime.database.migrations import Migrator, load_steps
from tollway._runtime.service import build_kernel
from tollway.testing import _pg_admin_url, _pg_create, _pg_drop, http_client, settings_for

# A new database: each area's migrations. A database of an earlier release: the frozen
# `kernel` app's first (LEGACY), then the areas'.
KERNEL = [f"{s.app}:{s.id}" for app in KERNEL_APPS for s in load_steps(app)]
LEGACY = [f"kernel:{s.id}" for s in load_steps(LEGACY_APP)]
NOTES_IDS = [s.id for s in load_steps(notes_app())]
# the tables SQLite keeps WITHOUT ROWID (docs/performance.md, "Pages a credits call writes")
REBUILT = {"tw_agents", "tw_ledger", "tw_quotes"}


@pytest.fixture
async def new_database(tmp_path: Path, db_kind: str):
    """`await new_database(name)` -> the URL of an empty database of this test's own
    (a new SQLite file, or a new PostgreSQL database dropped after the test)."""
    made: list[str] = []

    async def make(name: str = "db") -> str:
        if db_kind == "sqlite":
            return f"sqlite:///{tmp_path / f'{name}.sqlite'}"
        made.append(await _pg_create(_pg_admin_url()))
        return made[-1]

    yield make
    for url in made:
        await _pg_drop(_pg_admin_url(), url)


def plugin_manager(*plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for plugin in plugins:
        pm.register(plugin)
    return pm


def filled(receipt: dict) -> dict:
    """An old receipt's row after the upgrade: the figure columns filled from its body
    (kernel_receipts 2026-11-28T06:00:04), no run time (it was never measured)."""
    body = json.loads(receipt["body"])
    return {
        **receipt,
        "payment_method": body["payment_method"],
        "execution_status": body["execution_status"],
        "duration_ms": None,
    }


async def migrate(url: str, *plugins: object) -> list[str]:
    db = Database.from_url(url)
    await db.connect()
    try:
        return [f"{s.app}:{s.id}" for s in await db.migrate(plugin_manager(*plugins))]
    finally:
        await db.close()


async def recorded(url: str) -> list[str]:
    """The migration records, in the order they were written."""
    return [f"{r['app_name']}:{r['name']}" for r in sorted(await rows_of(url, "migration"), key=lambda r: r["id"])]


async def test_the_kernel_migrations_describe_its_table_classes() -> None:
    """Piccolo's own differ sees no change between the migrations and core's tables:
    a table edited without a new migration fails here, with the statements it needs."""
    from piccolo.apps.migrations.commands.new import AutoMigrationManager

    for app in KERNEL_APPS:
        found = await AutoMigrationManager().get_alter_statements(app_config=app)
        statements = [s for group in found for s in group.statements]
        assert statements == [], (
            f"the tables of {app.app_name} changed without a migration; add one in its migrations/ with:\n"
            + "\n".join(statements)
        )
    assert len(KERNEL_TABLES) == len({t._meta.tablename for t in KERNEL_TABLES}) == 29


async def test_migrations_make_the_schema_the_release_before_them_made(new_database) -> None:
    fresh, old = await new_database("fresh"), await new_database("old")
    assert await migrate(fresh) == KERNEL
    await make_old_database(old, with_rows=False)
    new_tables = {
        "tw_facts",
        "tw_fact_heads",
        "tw_fact_numbers",
        "tw_watches",
        "tw_watch_deliveries",
        "tw_webhooks",
        "tw_webhook_attempts",
        "tw_payouts",
        "tw_shared_settings",
        "tw_receipt_days",
        "tw_receipt_day_marks",
        "tw_job_events",
    }
    assert await tables_of(fresh) == await tables_of(old) | {"migration"} | new_tables
    fresh_schema, old_schema = await schema_of(fresh), await schema_of(old)
    assert len(fresh_schema) == 29 and all(s["columns"] for s in fresh_schema.values())
    changed = {
        "tw_access_tokens",
        "tw_jobs",
        "tw_receipts",
        "tw_ledger",
        "tw_credit_holds",
        "tw_agents",
        "tw_notifications",
    }  # a column added since, or indexes changed (the ledger, the holds, the agents' wallets)
    assert {t: s for t, s in fresh_schema.items() if t not in new_tables | changed} == {
        t: s for t, s in old_schema.items() if t not in changed
    }
    assert await migrate(old) == LEGACY + KERNEL  # the old release's database, upgraded: the same schema
    assert await schema_of(old) == fresh_schema
    assert await recorded(fresh) == KERNEL


async def test_tables_an_old_database_lacks_are_created_and_the_others_kept(new_database) -> None:
    partial, fresh = await new_database("partial"), await new_database("fresh")
    await make_old_database(partial, skip_tables=("tw_top_up_attempts", "tw_idempotency"))
    agents = await rows_of(partial, "tw_agents")
    assert "tw_idempotency" not in await tables_of(partial)
    assert await migrate(partial) == LEGACY + KERNEL
    await migrate(fresh)
    assert await schema_of(partial) == await schema_of(fresh)
    assert await rows_of(partial, "tw_agents") == agents and len(agents) == 2
    assert await rows_of(partial, "tw_idempotency") == []


async def test_a_database_of_the_one_kernel_app_moves_to_the_area_apps(new_database) -> None:
    """A database the releases with one `kernel` app made (its migrations recorded): each
    area adopts its tables as they are, rows kept, and the schema is a new database's."""
    old, fresh = await new_database("old"), await new_database("fresh")
    await make_old_database(old)
    db = Database.from_url(old)
    await db.connect()
    try:  # what those releases did at start: the one kernel app's migrations
        done = await Migrator(db.engine, db.kind, [LEGACY_APP]).migrate()
    finally:
        await db.close()
    assert [f"kernel:{s.id}" for s in done] == LEGACY
    rows = {t: await rows_of(old, t) for t in ("tw_agents", "tw_ledger", "tw_receipts", "tw_jobs")}
    assert all(rows.values())
    assert await migrate(old) == KERNEL  # adopted: nothing of the legacy app runs again
    assert await migrate(old) == []
    await migrate(fresh)
    assert await schema_of(old) == await schema_of(fresh)
    assert {t: await rows_of(old, t) for t in rows} == {**rows, "tw_receipts": [filled(r) for r in rows["tw_receipts"]]}
    assert await recorded(old) == LEGACY + KERNEL


async def test_the_frozen_peer_group_migration_fills_the_numbers_already_kept(new_database) -> None:
    """Kernel migration 7 gives each number kept before it the peer group of its
    (attribute, field, source), values bound: a quote in a name changes nothing."""
    from piccolo.querystring import QueryString

    from tollway._core.history.declare import peer_group

    url = await new_database()
    await make_old_database(url, with_rows=False)
    steps = load_steps(LEGACY_APP)
    fill_at = next(n for n, s in enumerate(steps) if s.id == "2026-11-24T00:00:04:000000")
    series = [("price", "amount", "o'brien feed"), ("price", "amount", "registry"), ("size", "bytes", "registry")]
    db = Database.from_url(url)
    await db.connect()
    try:
        before = Migrator(db.engine, db.kind, [LEGACY_APP])
        before.steps = steps[:fill_at]  # the release that had the column but had not filled it
        assert [s.id for s in await before.migrate()] == [s.id for s in steps[:fill_at]]
        for n, (attribute, field, source) in enumerate(series * 2):
            await db.engine.run_querystring(
                QueryString(
                    "INSERT INTO tw_fact_numbers (attribute, source, entity_key, field, number, peer_group, updated_ms)"
                    " VALUES ({}, {}, {}, {}, {}, 0, {})",
                    attribute,
                    source,
                    f"entity-{n}",
                    field,
                    float(n),
                    1_000 + n,
                )
            )
        assert [s.id for s in await Migrator(db.engine, db.kind, [LEGACY_APP]).migrate()] == [
            s.id for s in steps[fill_at:]
        ]
    finally:
        await db.close()
    rows = await rows_of(url, "tw_fact_numbers")
    assert len(rows) == 6
    for row in rows:
        assert row["peer_group"] == peer_group(row["attribute"], row["field"], row["source"]) != 0
    assert len({row["peer_group"] for row in rows}) == 3
    assert "tw_fact_numbers_group_p1" in index_names(await schema_of(url), "tw_fact_numbers")


async def test_a_new_database_never_runs_the_frozen_kernel_app(new_database) -> None:
    url = await new_database()
    assert await migrate(url) == KERNEL
    assert not [r for r in await recorded(url) if r.startswith("kernel:")]


ID = "<a token id>"


async def upgraded_rows(url: str, table: str) -> list[dict]:
    """A table's rows; an access token's id (random, given by the migration that added it) is
    checked for its shape and then read as `ID`."""
    rows = await rows_of(url, table)
    if table != "tw_access_tokens":
        return rows
    assert all(re.fullmatch(r"at_[0-9a-f]{16}", str(row["token_id"])) for row in rows if "token_id" in row)
    return normalized([{**row, "token_id": ID} if "token_id" in row else row for row in rows])


@pytest.mark.parametrize("how", ["start", "cli"])
async def test_a_database_of_the_release_before_migrations_upgrades_in_place(
    tmp_path, db_kind, new_database, how, monkeypatch, capsys
) -> None:
    url = await new_database("old")
    await make_old_database(url)
    history = fixture()
    meta, expected = history["meta"], history["rows"]
    # what the old rows are after the upgrade: columns added since, at their defaults
    upgraded = {t: normalized(rows) for t, rows in expected.items()}
    upgraded["tw_access_tokens"] = normalized(
        [{**row, "origin": "operator", "token_id": ID, "revoked_ms": None} for row in upgraded["tw_access_tokens"]]
    )
    upgraded["tw_jobs"] = [{**row, "message": None, "waiting_for": None} for row in upgraded["tw_jobs"]]
    upgraded["tw_receipts"] = [filled(row) for row in upgraded["tw_receipts"]]
    assert "migration" not in await tables_of(url)
    if how == "cli":
        for name, value in {
            "TOLLWAY_HOME": str(tmp_path / "cli-home"),
            "TOLLWAY_DATABASE_URL": url,
            "TOLLWAY_OFFLINE": "1",
        }.items():
            monkeypatch.setenv(name, value)
        assert await asyncio.to_thread(cli.main, ["db", "migrate"]) == 0
        out = capsys.readouterr().out
        # the kernel's migrations, then those of the installed plugins' apps (e.g. goals)
        applied = [line for line in out.splitlines() if line.startswith("applied ")]
        assert f"applied kernel {LEGACY[0].split(':', 1)[1]}" in out
        assert f"up to date ({len(applied)} migrations applied)" in out
        kernel_lines = [":".join(line.split()[1:3]) for line in applied if line.split()[1].startswith("kernel")]
        assert kernel_lines == LEGACY + KERNEL
        assert await asyncio.to_thread(cli.main, ["db", "migrate"]) == 0  # again: nothing left to do
        assert "up to date (0 migrations applied)" in capsys.readouterr().out
    assert {t: await upgraded_rows(url, t) for t in expected} == (
        upgraded if how == "cli" else {t: normalized(rows) for t, rows in expected.items()}
    )

    settings = settings_for(tmp_path, db_kind, TOLLWAY_DATABASE_URL=url)
    kernel = build_kernel(
        settings, plugins=[("echo", EchoPlugin()), ("jobs", JobsPlugin())], load_installed=False, strict_plugins=True
    )
    await kernel.start()
    try:
        kernel_recorded = [
            r for r in await recorded(url) if r.startswith("kernel")
        ]  # (the CLI also migrated installed plugins' apps)
        assert kernel_recorded == LEGACY + KERNEL  # adopted once, whoever migrated
        assert {t: await upgraded_rows(url, t) for t in expected} == upgraded
        assert await without_rowid(url) == (REBUILT if db_kind == "sqlite" else set())  # rebuilt, rows kept
        assert await check_ledger() == []
        auth = {"Authorization": f"Bearer {meta['access_token']}"}
        async with http_client(kernel) as client:
            before = (await client.get("/v1/balance", headers=auth)).json()
            paid = await client.post("/v1/tools/test/echo", json={"text": "after the upgrade"}, headers=auth)
            after = (await client.get("/v1/balance", headers=auth)).json()
            replay = await client.post(
                "/v1/tools/test/echo-keyed", json={"text": "once"}, headers={**auth, "Idempotency-Key": "old-key-1"}
            )
            job = (await client.get(f"/v1/requests/{meta['job_id']}", headers=auth)).json()
            payer = (await client.get("/v1/balance", headers={"X-Agent-ID": meta["payer"]})).json()
        assert before["credits_balance"] == meta["agent_credits_balance"] == "0.996000"
        assert paid.status_code == 200, paid.text
        assert after["credits_balance"] == "0.995000"
        assert replay.status_code == 200 and replay.json()["data"]["receipt_id"] == meta["keyed_receipt_id"]
        assert job["status"] == "completed" and job["result"]["sum"] == 42
        assert payer["credits_balance"] == meta["payer_balance"]["credits_balance"] == "1.500000"
        assert payer["on_chain_balance"] == meta["payer_balance"]["on_chain_balance"]
        old_receipt = await kernel.receipts.get(meta["x402_receipt_id"])
        signer = ReceiptSigner(kernel.config.receipt_seed)
        assert verify_receipt(old_receipt, {signer.key_id: signer.public_key}) == (True, "valid")
        assert len(await rows_of(url, "tw_receipts")) == len(expected["tw_receipts"]) + 1
        assert await check_ledger() == []
    finally:
        await kernel.stop()


async def test_a_plugin_app_applies_its_migrations_in_order_and_each_once(tmp_path, new_database) -> None:
    url = await new_database()
    folder = tmp_path / "notes_migrations"
    folder.mkdir()
    first_two, third = sorted(MIGRATIONS.glob("notes_*.py"))[:2], sorted(MIGRATIONS.glob("notes_*.py"))[2]
    for path in first_two:  # the plugin's release 1: two migrations
        shutil.copy(path, folder)
    plugin = NotesPlugin(folder)

    assert await migrate(url, plugin) == [
        *KERNEL,
        f"notes:{NOTES_IDS[0]}",
        f"notes:{NOTES_IDS[1]}",
    ]
    assert await migrate(url, plugin) == []  # applied once: a second start changes nothing
    db = Database.from_url(url)
    await db.connect()
    try:
        await db.migrate(plugin_manager(plugin))  # binds Note to this database
        await Note.insert(Note(id="n1", body="written in release 1"))
    finally:
        await db.close()

    shutil.copy(third, folder)  # the plugin's release 2 adds a data migration
    assert await migrate(url, plugin) == [f"notes:{NOTES_IDS[2]}"]
    db = Database.from_url(url)
    await db.connect()
    try:
        assert await db.migrate(plugin_manager(plugin)) == []
        await Note.insert(Note(id="n2", body="written in release 2"))
        assert await migrate(url, plugin) == []  # the data migration does not run again
        notes = await Note.select(Note.id, Note.tag).order_by(Note.id)
    finally:
        await db.close()
    assert notes == [{"id": "n1", "tag": "early"}, {"id": "n2", "tag": None}]
    assert await recorded(url) == [*KERNEL, *(f"notes:{i}" for i in NOTES_IDS)]
    assert "tw_test_notes_tag" in index_names(await schema_of(url), "tw_test_notes")


async def test_the_sqlite_rebuilds_keep_rows_and_constraints_and_do_nothing_twice(new_database, db_kind) -> None:
    """`WITHOUT ROWID` on SQLite (tw_agents, tw_ledger, tw_quotes): the rows written before
    a rebuild are there after it, the primary keys and the unique wallet still refuse a
    second row, and a rebuild that runs again (its record gone) finds the table done and
    leaves it alone. PostgreSQL's tables are not touched."""
    url = await new_database()
    db = Database.from_url(url)
    await db.connect()
    try:
        await db.migrate(plugin_manager())
        assert await without_rowid(url) == (REBUILT if db_kind == "sqlite" else set())
        run = db.engine.run_ddl
        await run("INSERT INTO tw_agents (id, wallet_address, credits, created_ms) VALUES ('a1', '0xabc', 5, 1)")
        await run(
            "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, created_ms) VALUES ('t1', 'credits:a1', 5, 5, 'grant', 1)"
        )
        await run(
            "INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, created_ms) VALUES ('q1', 't', 'h', 1, 'p', 'n', 9, 1)"
        )
        before = {t: await rows_of(url, t) for t in REBUILT}
        again = [s for s in KERNEL if s.split(":", 1)[1].startswith("2026-11-28T09:00:0")]
        assert len(again) == 3
        for step in again:
            app, mid = step.split(":", 1)
            await run(f"DELETE FROM migration WHERE app_name = '{app}' AND name = '{mid}'")
        assert [f"{s.app}:{s.id}" for s in await db.migrate(plugin_manager())] == again
        assert {t: await rows_of(url, t) for t in REBUILT} == before
        assert await without_rowid(url) == (REBUILT if db_kind == "sqlite" else set())
        for duplicate in (
            "INSERT INTO tw_agents (id, credits, created_ms) VALUES ('a1', 0, 2)",
            "INSERT INTO tw_agents (id, wallet_address, credits, created_ms) VALUES ('a2', '0xabc', 0, 2)",
            "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, created_ms) VALUES ('t1', 'x', 0, 0, 'grant', 2)",
            "INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, created_ms) VALUES ('q1', 't', 'h', 1, 'p', 'n', 9, 2)",
        ):
            with pytest.raises(Exception, match="(?i)unique"):
                await run(duplicate)
    finally:
        await db.close()


async def test_two_apps_of_one_name_stop_the_migration(new_database) -> None:
    class Twin(NotesPlugin):
        pass

    with pytest.raises(MigrationError, match="two migration apps are named 'notes'"):
        await migrate(await new_database(), NotesPlugin(), Twin())


@pytest.mark.postgres
async def test_processes_starting_together_apply_each_migration_once() -> None:
    admin = _pg_admin_url()
    assert admin, "TOLLWAY_TEST_DATABASE_URL must name the machine's PostgreSQL"
    url = await _pg_create(admin)
    dbs = [Database.from_url(url) for _ in range(4)]
    try:
        for db in dbs:
            await db.connect()
        results = await asyncio.gather(*(db.migrate(plugin_manager(NotesPlugin())) for db in dbs))
    finally:
        for db in dbs:
            await db.close()
    try:
        applied = sorted(f"{s.app}:{s.id}" for steps in results for s in steps)
        expected = sorted([*KERNEL, *(f"notes:{i}" for i in NOTES_IDS)])
        assert applied == expected  # each migration by exactly one of the four
        assert sorted(await recorded(url)) == expected
    finally:
        await _pg_drop(admin, url)


def test_the_peer_group_a_migration_fills_is_the_one_the_fact_store_writes() -> None:
    """Migration 7 keeps its own frozen copy of the peer group: it must name the same groups."""
    import importlib

    from tollway._core.history.declare import peer_group

    frozen = importlib.import_module("tollway._core.storage.kernel_history.kernel_2026_11_24t00_00_04_000000")._group
    for names in (
        ("vehicle_complaints", "total", "NHTSA"),
        ("place_disasters", "total", "FEMA"),
        ("a'b", "f", "s\x1f"),
    ):
        assert frozen(*names) == peer_group(*names)
