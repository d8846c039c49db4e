"""The running service the client tests call (clients/testing/serve.py), and its operator's help."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from eth_account import Account

CLIENTS = Path(__file__).resolve().parents[1]


@dataclass
class Service:
    url: str
    cutting_url: str  # the same service, every WebSocket cut (after its first frame, then at once)
    operator_token: str

    def operator(self, path: str, body: dict) -> dict:
        answer = httpx.post(
            self.url + path, json=body, headers={"Authorization": f"Bearer {self.operator_token}"}, timeout=30
        )
        assert answer.status_code in (200, 201), answer.text
        return answer.json()

    def funded_wallet(self, usdc: str = "1") -> str:
        """A new wallet's private key, with `usdc` test USDC on the local network."""
        account = Account.create()
        self.operator("/v1/tools/internal/chain/fund", {"address": account.address, "amount": usdc})
        return account.key.hex()

    def token_with_credits(self, usdc: str = "1") -> str:
        agent = self.operator("/v1/tools/internal/agents/register", {})["agent_id"]
        self.operator("/v1/tools/internal/credits/grant", {"agent_id": agent, "amount": usdc})
        return self.operator("/v1/tools/internal/access-tokens", {"agent_id": agent})["token"]


@pytest.fixture(scope="session")
def service() -> Iterator[Service]:
    proc = subprocess.Popen(
        [sys.executable, str(CLIENTS / "testing" / "serve.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    assert line, "clients/testing/serve.py did not start"
    try:
        yield Service(**json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(60)
