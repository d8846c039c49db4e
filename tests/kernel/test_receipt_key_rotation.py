"""Rotating the receipt signing key (docs/deploy.md, "Rotating keys"): processes started
with a new TOLLWAY_RECEIPT_KEY on the same database publish it beside the old one, the
newest key is the active one whichever process starts last (an old process restarting
during a rolling restart does not take the flag back), and receipts signed with the old
key still verify against GET /v1/receipts/keys, in code and with `tollway receipts verify`."""

from __future__ import annotations

import base64
import json

from tests.support.echo_plugin import EchoPlugin
from tollway._core.receipts.receipt_signing import ReceiptSigner, b64url_decode, verify_receipt
from tollway._runtime.cli import main as cli
from tollway.testing import credits_session, http_client

SEED_A, SEED_B = b"\x0a" * 32, b"\x0b" * 32
KEY_A, KEY_B = ReceiptSigner(SEED_A).key_id, ReceiptSigner(SEED_B).key_id


async def kernel_with_key(kernel_factory, seed: bytes):
    """A process of the service started with receipt key `seed`, on the test's one database."""
    return await kernel_factory(
        plugins=[("echo", EchoPlugin())], env={"TOLLWAY_RECEIPT_KEY": base64.b64encode(seed).decode()}
    )


async def paid_receipt(kernel) -> tuple[dict, dict]:
    """A receipt of a paid call through `kernel`, as served, and the auth headers of its owner."""
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        paid = await client.post("/v1/tools/test/echo", json={"text": "rotate"}, headers=auth)
        assert paid.status_code == 200, paid.text
        receipt_id = paid.json()["data"]["receipt_id"]
        return (await client.get(f"/v1/receipts/{receipt_id}", headers=auth)).json(), auth


async def published(kernel) -> dict:
    async with http_client(kernel) as client:
        return (await client.get("/v1/receipts/keys")).json()


def active_of(keys: dict) -> dict[str, bool]:
    return {k["key_id"]: k["active"] for k in keys["keys"]}


async def test_a_new_key_is_published_beside_the_old_and_old_receipts_still_verify(kernel_factory, tmp_path):
    old = await kernel_with_key(kernel_factory, SEED_A)
    old_receipt, owner = await paid_receipt(old)
    assert old_receipt["key_id"] == KEY_A and active_of(await published(old)) == {KEY_A: True}

    new = await kernel_with_key(kernel_factory, SEED_B)  # the first process restarted with the new key
    keys = await published(new)
    assert active_of(keys) == {KEY_A: False, KEY_B: True}
    new_receipt, _ = await paid_receipt(new)
    assert new_receipt["key_id"] == KEY_B

    # An old process that restarts before it has the new key still signs with the old
    # one, but the flag stays on the newest key (it no longer follows the last start).
    restarted_old = await kernel_with_key(kernel_factory, SEED_A)
    assert active_of(await published(restarted_old)) == {KEY_A: False, KEY_B: True}
    async with http_client(new) as client:  # served by a new process, signed by the old key
        served_old = (await client.get(f"/v1/receipts/{old_receipt['receipt_id']}", headers=owner)).json()
    assert served_old == old_receipt

    public = {k["key_id"]: b64url_decode(k["public_key"]) for k in keys["keys"]}
    assert verify_receipt(old_receipt, public) == (True, "valid")
    assert verify_receipt(new_receipt, public) == (True, "valid")
    assert verify_receipt(old_receipt, {KEY_B: public[KEY_B]}) == (False, f"unknown key_id {KEY_A!r}")

    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(keys))
    for receipt in (old_receipt, new_receipt):
        receipt_file = tmp_path / f"{receipt['key_id']}.json"
        receipt_file.write_text(json.dumps(receipt))
        assert cli(["receipts", "verify", str(receipt_file), "--keys", str(keys_file)]) == 0
