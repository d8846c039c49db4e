"""The README's payment examples really pay for a recall lookup: the 20-line
eth-account client (docs/examples/pay_recall.py) and the official x402 SDK's, whose
code block is taken from README.md itself so the README cannot drift from what works.

The app is served by uvicorn on 127.0.0.1; NHTSA is replayed from the recorded
Honda Accord 2021 response (tests/support/replay.py), so nothing reaches the internet.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import httpx
from eth_account import Account

from tests.support.replay import nhtsa_honda_accord_2021
from tests.support.serving import serve_app
from tollway._core.basics.money import to_micro
from tollway._runtime.service import http_app

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "pay_recall.py"
README = ROOT / "README.md"
OPERATOR = {"Authorization": "Bearer test-operator-token"}
# What a reader replaces in the README's x402 example: where the service is, whose key pays.
BASE_URL_PLACEHOLDER = "http://127.0.0.1:8402"
KEY_PLACEHOLDER = "0xYourPrivateKey"
RECALL_INPUT = {"make": "Honda", "model": "Accord", "model_year": 2021}


def readme_x402_example() -> str:
    """The README's one Python block that pays with the official x402 package."""
    blocks = re.findall(r"^```python\n(.*?)^```$", README.read_text(), flags=re.S | re.M)
    sdk = [b for b in blocks if "from x402 " in b]
    assert len(sdk) == 1, f"expected one README block importing x402, found {len(sdk)}"
    return sdk[0]


async def run_python(args: list[str], url: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env={**os.environ, "TOLLWAY_URL": url},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return await proc.wait(), out.decode(), err.decode()


async def paid_recall_receipt(kernel: Any, run: tuple[int, str, str]) -> dict:
    """The receipt of the recall lookup a README example printed as `<status> <JSON body>`."""
    returncode, out, err = run
    assert returncode == 0, err
    status, _, body = out.partition(" ")
    assert status == "200", out
    data = json.loads(body)["data"]
    assert data["tool"] == "vehicle_recalls" and data["status"] == "completed"
    assert data["result"]["make"] == "Honda" and data["result"]["recalls"]
    return await kernel.receipts.get(data["receipt_id"])


async def test_readme_client_pays_for_a_recall_lookup(kernel_factory):
    assert len(SCRIPT.read_text().splitlines()) <= 20
    assert SCRIPT.read_text() in README.read_text()
    kernel = await kernel_factory(installed={"tollway_vehicles"}, transport=nhtsa_honda_accord_2021())
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, to_micro("1"))
    async with serve_app(http_app(kernel, manage_kernel=False)) as url:
        receipt = await paid_recall_receipt(kernel, await run_python([str(SCRIPT), payer.key.hex()], url))
    assert receipt["status"] == "settled" and receipt["amount_usdc"] == "0.005000"


async def test_readme_x402_sdk_example_pays_for_a_recall_lookup(kernel_factory):
    code = readme_x402_example()
    assert code.count(BASE_URL_PLACEHOLDER) == 1 and code.count(KEY_PLACEHOLDER) == 1
    kernel = await kernel_factory(installed={"tollway_vehicles"}, transport=nhtsa_honda_accord_2021())
    payer = Account.create()
    async with serve_app(http_app(kernel, manage_kernel=False)) as url:
        async with httpx.AsyncClient(base_url=url) as plain:  # what `tollway dev fund` asks
            funded = await plain.post(
                "/v1/tools/internal/chain/fund", json={"address": payer.address, "amount": "1"}, headers=OPERATOR
            )
            assert funded.status_code == 200, funded.text
            quote = await plain.post("/v1/tools/lookup/vehicle-recalls", json=RECALL_INPUT)
        assert quote.status_code == 402
        price = int(json.loads(base64.b64decode(quote.headers["PAYMENT-REQUIRED"]))["accepts"][0]["amount"])
        before = await kernel.backend.on_chain_balance(payer.address)
        assert before == to_micro("1")
        key = "0x" + payer.key.hex().removeprefix("0x")
        runnable = code.replace(BASE_URL_PLACEHOLDER, url).replace(KEY_PLACEHOLDER, key)
        receipt = await paid_recall_receipt(kernel, await run_python(["-c", runnable], url))
    assert receipt["status"] == "settled" and receipt["payment_method"] == "x402"
    assert to_micro(receipt["amount_usdc"]) == price == to_micro("0.005")
    assert await kernel.backend.on_chain_balance(payer.address) == before - price
