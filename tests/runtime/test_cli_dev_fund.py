"""`tollway dev fund` acts on the running service (its operator route
`POST /v1/tools/internal/chain/fund`), from any folder, and refuses clearly when
no service answers: it never writes a `./.tollway` of the folder it runs in."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from eth_account import Account

from tests.support.serve_process import free_port, run_cli, tollway_serve
from tests.support.serving import serve_app
from tollway._runtime.cli import main as cli
from tollway._runtime.service import http_app
from tollway.testing import settings_for


async def on_chain(url: str, address: str) -> str:
    async with httpx.AsyncClient() as http:
        resp = await http.get(f"{url}/v1/balance", headers={"X-Agent-ID": address})
    assert resp.status_code == 200, resp.text
    return resp.json()["on_chain_balance"]


async def test_dev_fund_from_another_folder_funds_the_running_service(tmp_path, db_kind):
    server_dir, elsewhere, other = tmp_path / "server", tmp_path / "elsewhere", tmp_path / "other"
    for d in (server_dir, elsewhere, other):
        d.mkdir()
    settings = settings_for(server_dir, db_kind)  # the database of this test run (SQLite file or PostgreSQL)
    env = {
        "TOLLWAY_HOME": str(server_dir / "home"),
        "TOLLWAY_DATABASE_URL": settings.database_url,
        "TOLLWAY_RECEIPT_KEY": settings.env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OFFLINE": "1",
    }  # no TOLLWAY_OPERATOR_TOKEN: the service generates one into its home
    address = Account.create().address
    async with tollway_serve(env, cwd=server_dir) as served:
        token = (server_dir / "home" / "operator_token").read_text().strip()
        # from a folder of its own, naming the service's home (token file) and port
        by_home = await run_cli(
            "dev",
            "fund",
            address,
            "2.5",
            env={"TOLLWAY_HOME": env["TOLLWAY_HOME"], "TOLLWAY_PORT": str(served.port)},
            cwd=elsewhere,
        )
        # from another folder with neither home nor database: the token and the URL only
        by_url = await run_cli(
            "dev", "fund", address, "0.5", env={"TOLLWAY_OPERATOR_TOKEN": token, "TOLLWAY_URL": served.url}, cwd=other
        )
        by_flag = await run_cli(
            "dev", "fund", address, "1", "--url", served.url, env={"TOLLWAY_OPERATOR_TOKEN": token}, cwd=other
        )
        balance = await on_chain(served.url, address)
    assert by_home[0] == 0, by_home
    assert json.loads(by_home[1]) == {"address": address, "on_chain_balance": "2.500000"}
    assert by_url[0] == 0, by_url
    assert json.loads(by_url[1]) == {"address": address, "on_chain_balance": "3.000000"}
    assert by_flag[0] == 0 and json.loads(by_flag[1])["on_chain_balance"] == "4.000000", by_flag
    assert balance == "4.000000"
    assert not (elsewhere / ".tollway").exists() and not (other / ".tollway").exists()


async def test_dev_fund_refuses_when_no_service_answers(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = await run_cli(
        "dev",
        "fund",
        Account.create().address,
        "1",
        env={"TOLLWAY_OPERATOR_TOKEN": "tw_op_x", "TOLLWAY_URL": url},
        cwd=tmp_path,
    )
    assert code == 1 and out == ""
    assert f"no Tollway service answered at {url}" in err and "tollway serve" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / ".tollway").exists()


async def test_dev_fund_default_url_is_the_local_port(tmp_path):
    port = free_port()
    code, _, err = await run_cli(
        "dev",
        "fund",
        Account.create().address,
        "1",
        env={"TOLLWAY_OPERATOR_TOKEN": "tw_op_x", "TOLLWAY_PORT": str(port)},
        cwd=tmp_path,
    )
    assert code == 1 and f"http://127.0.0.1:{port}" in err


async def test_dev_fund_without_an_operator_token_says_where_it_looked(tmp_path):
    code, _, err = await run_cli(
        "dev", "fund", Account.create().address, "1", env={"TOLLWAY_HOME": str(tmp_path / "nowhere")}, cwd=tmp_path
    )
    assert code == 2
    assert (
        "no operator token" in err
        and "TOLLWAY_OPERATOR_TOKEN" in err
        and str(tmp_path / "nowhere" / "operator_token") in err
    )
    assert not (tmp_path / "nowhere").exists()


@pytest.fixture
def client_env(monkeypatch):
    for var in ("TOLLWAY_HOME", "TOLLWAY_URL", "TOLLWAY_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TOLLWAY_OPERATOR_TOKEN", "test-operator-token")
    return monkeypatch


async def test_dev_fund_amounts_tokens_and_networks(kernel_factory, client_env, capsys):
    address = Account.create().address
    local = await kernel_factory()
    async with serve_app(http_app(local, manage_kernel=False)) as url:
        client_env.setenv("TOLLWAY_URL", url)
        assert await asyncio.to_thread(cli, ["dev", "fund", address, "2.5"]) == 0
        assert json.loads(capsys.readouterr().out) == {"address": address, "on_chain_balance": "2.500000"}
        assert await asyncio.to_thread(cli, ["dev", "fund", address, "0.0000001"]) == 2  # refused before any request
        assert "decimal" in capsys.readouterr().err
        assert await asyncio.to_thread(cli, ["dev", "fund", "not-an-address", "1"]) == 2
        assert "address must be a 0x address" in capsys.readouterr().err
        client_env.setenv("TOLLWAY_OPERATOR_TOKEN", "wrong")
        assert await asyncio.to_thread(cli, ["dev", "fund", address, "1"]) == 2
        assert "answered 401: the operator token from TOLLWAY_OPERATOR_TOKEN was refused" in capsys.readouterr().err
    assert await local.backend.on_chain_balance(address) == 2_500_000
    remote = await kernel_factory(
        env={"TOLLWAY_NETWORK": "base-sepolia", "TOLLWAY_FACILITATOR_URL": "http://127.0.0.1:9"}
    )
    client_env.setenv("TOLLWAY_OPERATOR_TOKEN", "test-operator-token")
    async with serve_app(http_app(remote, manage_kernel=False)) as url:
        client_env.setenv("TOLLWAY_URL", url)
        assert await asyncio.to_thread(cli, ["dev", "fund", address, "1"]) == 2
    assert "local test network" in capsys.readouterr().err
