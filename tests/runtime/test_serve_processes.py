"""`tollway serve --processes N`: N API processes on one port, sharing the database."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from eth_account import Account

from tests.support.serve_process import run_cli, tollway_serve
from tollway.testing import settings_for


def serving_children(pid: int) -> list[str]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]


@pytest.mark.postgres
async def test_two_processes_serve_one_port_over_one_database(tmp_path):
    settings = settings_for(tmp_path, "postgres")
    env = {
        "TOLLWAY_HOME": str(tmp_path / "home"),
        "TOLLWAY_DATABASE_URL": settings.database_url,
        "TOLLWAY_RECEIPT_KEY": settings.env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OFFLINE": "1",
    }  # no operator token: the parent writes one into the home before the processes start
    address = Account.create().address
    async with tollway_serve(env, cwd=tmp_path, args=("--processes", "2")) as served:
        assert len(serving_children(served.proc.pid)) == 2
        token = (tmp_path / "home" / "operator_token").read_text().strip()
        op = {"Authorization": f"Bearer {token}"}
        for _ in range(6):  # a connection each: whichever process takes it, the ledger is the one database
            async with httpx.AsyncClient() as http:
                resp = await http.post(
                    f"{served.url}/v1/tools/internal/chain/fund", json={"address": address, "amount": "0.5"}, headers=op
                )
                assert resp.status_code == 200, resp.text
        async with httpx.AsyncClient() as http:
            balance = (await http.get(f"{served.url}/v1/balance", headers={"X-Agent-ID": address})).json()
    assert balance["on_chain_balance"] == "3.000000"


async def test_processes_below_one_are_refused(tmp_path):
    code, _, err = await run_cli(
        "serve", "--processes", "0", env={"TOLLWAY_HOME": str(tmp_path / "home")}, cwd=tmp_path
    )
    assert code == 2 and "--processes must be 1 or more" in err
