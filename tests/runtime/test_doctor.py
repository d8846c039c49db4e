"""`tollway doctor` on healthy configurations and on broken ones: each problem is a `fail`
finding naming what to fix, and the command exits 1 (0 when nothing must be fixed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from email.utils import formatdate

import pytest
from eth_account import Account

from tests.support.facilitator_server import running_facilitator
from tollway._runtime.cli import main as cli
from tollway._runtime.doctor import Doctor, Finding
from tollway._runtime.service import build_kernel
from tollway.testing import settings_for

PAYOUT = Account.from_key("0x" + "4" * 64)


def failures(findings: list[Finding]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in findings:
        if f.status == "fail":
            found.setdefault(f.check, []).append(f"{f.detail} | fix: {f.fix}")
    return found


def statuses(findings: list[Finding]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in findings:
        found.setdefault(f.check, set()).add(f.status)
    return found


async def start_once(settings) -> None:
    """What `tollway serve` does first: migrate (every installed plugin too) and record
    the shared settings' fingerprints."""
    kernel = build_kernel(settings)
    await kernel.start()
    await kernel.stop()


def production_env(facilitator_url: str, network: str = "base-sepolia", **more: str) -> dict[str, str]:
    return {
        "TOLLWAY_NETWORK": network,
        "TOLLWAY_PAY_TO": PAYOUT.address,
        "TOLLWAY_PAYOUT_KEY": PAYOUT.key.hex(),
        "TOLLWAY_FACILITATOR_URL": facilitator_url,
        "TOLLWAY_CHAIN_RPC_URL": f"{facilitator_url}/rpc",
        **more,
    }


async def test_a_healthy_embedded_configuration(tmp_path, db_kind):
    settings = settings_for(tmp_path, db_kind)
    await start_once(settings)
    findings = await Doctor(settings.env).run()
    assert not failures(findings), findings
    seen = statuses(findings)
    assert seen["database"] == {"ok"} and seen["deployment"] == {"ok"} and "providers" in seen
    if db_kind == "postgres":
        assert seen["clock"] == {"ok"}  # against the database server's clock


@pytest.mark.postgres
async def test_a_healthy_production_configuration(tmp_path):
    async with running_facilitator("base-sepolia") as facilitator:
        settings = settings_for(tmp_path, "postgres", **production_env(facilitator.url))
        await start_once(settings)
        findings = await Doctor(settings.env, providers=False).run()
    assert not failures(findings), findings
    seen = statuses(findings)
    for check in ("settings", "database", "deployment", "facilitator", "chain", "clock"):
        assert seen[check] == {"ok"}, (check, findings)
    assert ("supported", {}) in facilitator.requests


async def test_missing_production_settings_are_each_named(tmp_path):
    findings = await Doctor({"TOLLWAY_HOME": str(tmp_path / "home"), "TOLLWAY_NETWORK": "base"}).run()
    fixes = " ".join(failures(findings)["settings"])
    for name in (
        "TOLLWAY_PAY_TO",
        "TOLLWAY_FACILITATOR_URL",
        "TOLLWAY_CHAIN_RPC_URL",
        "TOLLWAY_RECEIPT_KEY",
        "TOLLWAY_OPERATOR_TOKEN",
    ):
        assert f"fix: set {name}" in fixes
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").iterdir())  # nothing written


async def test_an_unreachable_database(tmp_path):
    env = {**settings_for(tmp_path, "sqlite").env, "TOLLWAY_DATABASE_URL": "postgres://postgres@127.0.0.1:9/gone"}
    found = failures(await Doctor(env, providers=False, timeout_s=3).run())
    assert list(found) == ["database"]
    assert "127.0.0.1:9/gone unreachable" in found["database"][0] and "TOLLWAY_DATABASE_URL" in found["database"][0]


async def test_a_database_not_migrated(tmp_path):
    settings = settings_for(tmp_path, "sqlite")
    path = settings.database_url.removeprefix("sqlite://")
    sqlite3.connect(path).close()  # an empty database file: nothing applied
    found = failures(await Doctor(settings.env, providers=False).run())
    assert list(found) == ["database"] and "`tollway db migrate`" in found["database"][0]


async def test_an_unreachable_facilitator(tmp_path):
    async with running_facilitator("base-sepolia") as facilitator:
        rpc = f"{facilitator.url}/rpc"
    env = settings_for(
        tmp_path, "sqlite", **production_env("http://127.0.0.1:9", TOLLWAY_CHAIN_RPC_URL=rpc)
    ).env  # the RPC is gone too: both are reported
    found = failures(await Doctor(env, providers=False, timeout_s=3).run())
    assert "http://127.0.0.1:9/supported did not answer" in found["facilitator"][0]
    assert "did not answer eth_chainId" in found["chain"][0]


async def test_a_facilitator_and_chain_of_another_network(tmp_path):
    async with running_facilitator("base-sepolia") as facilitator:
        env = settings_for(tmp_path, "sqlite", **production_env(facilitator.url, network="base")).env
        found = failures(await Doctor(env, providers=False).run())
    assert "does not settle the exact scheme on eip155:8453" in found["facilitator"][0]
    assert "is chain 84532, not base's 8453" in found["chain"][0]


async def test_settings_another_process_started_with_differ(tmp_path):
    """Another machine started on this database with another operator token and receipt key."""
    other = settings_for(tmp_path / "other", "sqlite", TOLLWAY_OPERATOR_TOKEN="tw_op_other")
    await start_once(other)
    ours = settings_for(
        tmp_path / "other", "sqlite", TOLLWAY_RECEIPT_KEY="CgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgo="
    )
    found = failures(await Doctor(ours.env, providers=False).run())
    assert list(found) == ["deployment"]
    named = " ".join(found["deployment"])
    assert "TOLLWAY_OPERATOR_TOKEN differs" in named and "TOLLWAY_RECEIPT_KEY differs" in named
    assert "TOLLWAY_PAY_TO" not in named  # the same home: the same generated wallet
    assert "tw_op_other" not in named and "test-operator-token" not in named  # never a secret


@contextlib.asynccontextmanager
async def facilitator_with_clock(offset_s: float) -> AsyncIterator[str]:
    """An HTTP server answering /supported for base-sepolia, its Date header `offset_s` off."""
    body = json.dumps({"kinds": [{"x402Version": 2, "scheme": "exact", "network": "eip155:84532"}]}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = (
            f"HTTP/1.1 200 OK\r\nDate: {formatdate(time.time() + offset_s, usegmt=True)}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


async def test_a_clock_off_from_the_facilitators(tmp_path):
    async with facilitator_with_clock(-120) as url:
        env = settings_for(tmp_path, "sqlite", **production_env(url, TOLLWAY_CHAIN_RPC_URL="")).env
        findings = await Doctor(env, providers=False).run()
    found = failures(findings)
    assert list(found) == ["clock"] and "+1" in found["clock"][0] and "NTP" in found["clock"][0]
    assert statuses(findings)["facilitator"] == {"ok"}


def test_the_command_exits_by_what_it_found(tmp_path, monkeypatch, capsys):
    settings = settings_for(tmp_path, "sqlite")
    asyncio.run(start_once(settings))
    for name, value in settings.env.items():
        if name.startswith("TOLLWAY_"):
            monkeypatch.setenv(name, value)
    assert cli(["doctor", "--skip-providers"]) == 0
    out = capsys.readouterr().out
    assert "0 to fix" in out and "reachable and migrated" in out
    monkeypatch.setenv("TOLLWAY_NETWORK", "base")
    assert cli(["doctor", "--skip-providers", "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert {f["check"] for f in findings if f["status"] == "fail"} == {"settings", "deployment"}
    shared = [f["detail"] for f in findings if f["check"] == "deployment"]
    assert len(shared) == 1 and shared[0].startswith("TOLLWAY_NETWORK differs")  # the service ran on local
