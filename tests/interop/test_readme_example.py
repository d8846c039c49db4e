"""The README's 20-line eth-account client really pays for a recall lookup.

The app is served by uvicorn on 127.0.0.1; NHTSA is replayed from the recorded
Honda Accord 2021 response (tests/support/replay.py), so nothing reaches the internet.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from eth_account import Account

from tests.support.replay import nhtsa_honda_accord_2021
from tests.support.serving import serve_app
from tollway._core.basics.money import to_micro
from tollway._runtime.service import http_app

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pay_recall.py"


async def test_readme_client_pays_for_a_recall_lookup(kernel_factory):
    assert len(SCRIPT.read_text().splitlines()) <= 20
    assert SCRIPT.read_text() in (Path(__file__).resolve().parents[2] / "README.md").read_text()
    kernel = await kernel_factory(installed={"tollway_vehicles"}, transport=nhtsa_honda_accord_2021())
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, to_micro("1"))
    async with serve_app(http_app(kernel, manage_kernel=False)) as url:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SCRIPT),
            payer.key.hex(),
            env={**os.environ, "TOLLWAY_URL": url},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    status, _, body = out.decode().partition(" ")
    assert status == "200", out.decode()
    data = json.loads(body)["data"]
    assert data["tool"] == "vehicle_recalls" and data["status"] == "completed"
    assert data["result"]["make"] == "Honda" and data["result"]["recalls"]
    receipt = await kernel.receipts.get(data["receipt_id"])
    assert receipt["status"] == "settled" and receipt["amount_usdc"] == "0.005000"
