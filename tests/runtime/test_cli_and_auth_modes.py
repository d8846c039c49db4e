"""The `tollway` CLI on a real TOLLWAY_HOME, and proof enforcement on read routes."""

from __future__ import annotations

import base64
import time

import pytest
from eth_account import Account

from tests.support.installed import write_plugins_site
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._runtime.cli import main as cli
from tollway.testing import http_client, settings_for


@pytest.fixture
def home_env(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("TOLLWAY_HOME", str(home))
    monkeypatch.setenv("TOLLWAY_DATABASE_URL", f"sqlite:///{home / 'tollway.db'}")
    monkeypatch.setenv("TOLLWAY_RECEIPT_KEY", base64.b64encode(b"\x05" * 32).decode())
    monkeypatch.delenv("TOLLWAY_NETWORK", raising=False)
    monkeypatch.setenv("TOLLWAY_OFFLINE", "1")  # tests never reach the internet
    return home


def test_plugins_lists_installed_tools_with_prices(home_env, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(write_plugins_site(tmp_path / "site")))  # the test plugins, installed
    assert cli(["plugins"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert rows["lookup_word"] == ["0.005000", "POST", "/v1/tools/test/lookup", "(lookup)"]
    assert rows["flaky"] == ["0.010000", "POST", "/v1/tools/test/flaky", "(echo)"]
    assert rows["echo_words"] == ["by", "input", "POST", "/v1/tools/test/echo", "(echo)"]  # priced from the input


def test_first_start_generates_home_files(home_env):
    settings = settings_for(home_env.parent, "sqlite", TOLLWAY_OPERATOR_TOKEN="", TOLLWAY_RECEIPT_KEY="")
    assert settings.operator_token_generated is True
    assert (settings.home / "operator_token").read_text().strip() == settings.operator_token
    assert len(base64.b64decode((settings.home / "receipt_key.seed").read_text())) == 32
    again = settings_for(home_env.parent, "sqlite", TOLLWAY_OPERATOR_TOKEN="", TOLLWAY_RECEIPT_KEY="")
    assert again.operator_token == settings.operator_token and again.pay_to == settings.pay_to
    assert again.operator_token_generated is False


async def test_enforced_read_proofs(kernel_factory):
    kernel = await kernel_factory(env={"TOLLWAY_PROOF_ENFORCEMENT": "enforce"})
    wallet = Account.create()
    async with http_client(kernel) as client:
        bare = await client.get("/v1/balance", headers={"X-Agent-ID": wallet.address})
        proof = make_agent_proof(
            wallet, chain_id=84532, scope="read", method="GET", path="/v1/balance", body=b"", now=int(time.time())
        )
        proved = await client.get("/v1/balance", headers={"X-Agent-ID": wallet.address, "X-Agent-Proof": proof})
        wrong_path = await client.get(
            "/v1/analytics/receipts", headers={"X-Agent-ID": wallet.address, "X-Agent-Proof": proof}
        )
    assert bare.status_code == 401 and bare.json()["error"] == "invalid_agent_proof"
    assert proved.status_code == 200 and proved.json()["address"] == wallet.address
    assert wrong_path.status_code == 401 and wrong_path.json()["details"]["reason"] == "path_mismatch"


async def test_logged_read_proofs_fall_back_to_the_agent_id(kernel_factory):
    kernel = await kernel_factory()
    wallet = Account.create()
    async with http_client(kernel) as client:
        bare = await client.get("/v1/balance", headers={"X-Agent-ID": wallet.address})
        bad = await client.get("/v1/balance", headers={"X-Agent-ID": wallet.address, "X-Agent-Proof": "garbage"})
    assert bare.status_code == 200 and bad.status_code == 200


def test_data_refresh_loads_the_sanctions_lists_from_a_folder(home_env, tmp_path, capsys, monkeypatch):
    """`tollway data refresh sanctions` with the lists URL pointing at a folder
    of the real OFAC files (plugins/sanctions/tests/fixtures/ofac): loaded, progress reported."""
    from pathlib import Path

    from tests.support.replay import recorded_file

    folder = tmp_path / "ofac"
    folder.mkdir()
    for part in ("sdn_sample_small", "consolidated_non_sdn_2025-12"):
        for f in recorded_file("sanctions", "ofac", part).iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
    monkeypatch.setenv("TOLLWAY_SANCTIONS_LISTS_URL", folder.resolve().as_uri())
    monkeypatch.setenv("TOLLWAY_OFFLINE", "1")
    assert cli(["data", "refresh", "sanctions"]) == 0
    err = capsys.readouterr().err
    assert "sanctions: loaded" in err and "sdn.csv" in err
    assert (Path(home_env) / "sanctions").is_dir()
    assert cli(["data", "refresh", "nothing-like-this"]) == 2
    assert "no data source 'nothing-like-this'" in capsys.readouterr().err
