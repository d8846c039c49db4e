"""The soul key's life, on SQLite and PostgreSQL: rotated (the new key shown once, the old one
refused at once) and revoked, each only with the soul's wallet write proof (never the soul
key, an access token or a bare X-Agent-ID); for 24 hours after a rotation a payout to an
address this soul never paid out to is refused (403 new_payout_address_held, nothing
withdrawn) unless the request also carries the wallet's write proof (another wallet's proof
does not count; a failed one is refused 401), while an address paid before and the soul's
own wallet still pass. Real sale, real payouts on the local network."""

from __future__ import annotations

import json

from eth_account import Account
from souls_support import ENV, LINGUA, OPERATOR, PLUGIN, parked, register, soul_auth

from tollway.testing import http_client, ledger_problems, pay_402, proof_headers, worker_for
from tollway_souls.tables import SoulAgent

KEY, PAYOUTS = "/v1/soul/key", "/v1/soul/payouts"
BUY = {"soul": "lingua", "service": "translate", "price_usdc": "1.25", "request": {"text": "Good morning"}}


def signed(account, method: str, path: str, raw: bytes = b"", scope: str = "write") -> dict[str, str]:
    return {
        **proof_headers(account, scope=scope, method=method, path=path, body=raw),
        "content-type": "application/json",
    }


async def rotate(client, account, **extra: str):
    return await client.post(f"{KEY}/rotate", headers={**signed(account, "POST", f"{KEY}/rotate"), **extra})


async def test_the_wallet_rotates_and_revokes_the_soul_key(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    seller, stranger = Account.create(), Account.create()
    async with http_client(kernel) as client:
        first = (await register(client, seller, LINGUA)).json()["soul_key"]
        soul = await SoulAgent.select(SoulAgent.agent_id).where(SoulAgent.slug == "lingua").first()
        token = (
            await client.post("/v1/tools/internal/access-tokens", json={"agent_id": soul["agent_id"]}, headers=OPERATOR)
        ).json()["token"]
        refused = [
            await client.post(f"{KEY}/rotate", headers=soul_auth(first)),
            await client.post(f"{KEY}/rotate", headers={"Authorization": f"Bearer {token}"}),
            await client.post(f"{KEY}/rotate", headers={"X-Agent-ID": seller.address}),
            await client.post(f"{KEY}/rotate", headers=signed(seller, "POST", f"{KEY}/rotate", scope="read")),
            await client.delete(KEY, headers=soul_auth(first)),
            await client.delete(KEY, headers={"Authorization": f"Bearer {token}"}),
        ]
        strangers = await rotate(client, stranger)
        still = await client.get("/v1/soul/dashboard", headers=soul_auth(first))
        rotated = await rotate(client, seller)
        second = rotated.json()["soul_key"]
        old = await client.get("/v1/soul/dashboard", headers=soul_auth(first))
        new = await client.get("/v1/soul/dashboard", headers=soul_auth(second))
        stored = await SoulAgent.select()
        revoked = await client.delete(KEY, headers=signed(seller, "DELETE", KEY))
        after = [
            await client.get(path, headers=soul_auth(second))
            for path in ("/v1/soul/dashboard", "/v1/soul/earnings", "/v1/soul/webhook")
        ]
        again = await rotate(client, seller)
        third = await client.get("/v1/soul/dashboard", headers=soul_auth(again.json()["soul_key"]))
    assert [r.status_code for r in refused] == [401] * 6
    assert [r.json()["error"] for r in refused] == [
        "invalid_access_token",
        "invalid_agent_proof",
        "invalid_agent_proof",
        "invalid_agent_proof",
        "invalid_access_token",
        "invalid_agent_proof",
    ], [r.text for r in refused]
    assert strangers.status_code == 404 and strangers.json()["error"] == "not_found"
    assert still.status_code == 200  # nothing refused changed the key
    assert rotated.status_code == 200, rotated.text
    body = rotated.json()
    assert set(body) == {"soul_agent_id", "soul_key", "rotated_at", "new_address_payouts_held_until"}
    assert (
        second.startswith("soul_") and second != first and body["new_address_payouts_held_until"] > body["rotated_at"]
    )
    assert old.status_code == 401 and old.json()["error"] == "invalid_soul_key"
    assert new.status_code == 200 and new.json()["slug"] == "lingua" and second not in new.text
    assert not any(second in json.dumps(row, default=str) for row in stored)  # only its hash is kept
    assert (
        revoked.status_code == 200
        and revoked.json()["revoked"] is True
        and revoked.json()["soul_agent_id"] == body["soul_agent_id"]
    )
    assert all(r.status_code == 401 and r.json()["error"] == "invalid_soul_key" for r in after)
    assert again.status_code == 200 and third.status_code == 200  # the wallet issues a new key after a revocation


async def _earn(client, kernel, seller) -> str:
    """Register `seller`'s soul, sell one translation to a buyer paying x402 on chain (the
    service's wallet holds the USDC) and fulfil it: the soul earns 1.00. Returns the soul key."""
    key = (await register(client, seller, LINGUA)).json()["soul_key"]
    buyer = Account.create()
    await client.post("/v1/tools/internal/chain/fund", json={"address": buyer.address, "amount": "5"}, headers=OPERATOR)
    quote = await client.post("/v1/tools/souls/buy", json=BUY)
    paid = {
        "payment-signature": pay_402(buyer, quote.headers["PAYMENT-REQUIRED"]),
        "X-Quote-ID": quote.json()["quote_id"],
    }
    job_id = (await client.post("/v1/tools/souls/buy", json=BUY, headers=paid)).json()["request_id"]
    worker = worker_for(kernel)
    worker.start()
    try:
        await parked(client, job_id, {"X-Agent-ID": buyer.address})
    finally:
        await worker.stop()
    done = await client.post(
        f"/v1/soul/orders/{job_id}/fulfil", json={"result": {"text": "Bonjour"}}, headers=soul_auth(key)
    )
    assert done.status_code == 200, done.text
    return key


async def test_after_a_rotation_a_new_payout_address_needs_the_wallets_proof(kernel_factory) -> None:
    kernel = await kernel_factory(installed=PLUGIN, env=ENV)
    seller, stranger = Account.create(), Account.create()
    known, fresh, later = (Account.create().address for _ in range(3))

    async def pay(key: str, to: str | None, proved_by=None):
        raw = json.dumps({"amount_usdc": "0.1", **({"to_address": to} if to else {})}).encode()
        proof = signed(proved_by, "POST", PAYOUTS, raw) if proved_by else {"content-type": "application/json"}
        return await client.post(PAYOUTS, content=raw, headers={**soul_auth(key), **proof})

    async with http_client(kernel) as client:
        key = await _earn(client, kernel, seller)
        before = await pay(key, fresh)  # no rotation yet: any address
        key = (await rotate(client, seller)).json()["soul_key"]
        held = await pay(key, known)
        wrong_proof = await pay(key, known, proved_by=stranger)
        raw = json.dumps({"amount_usdc": "0.1", "to_address": known}).encode()
        forged = await client.post(
            PAYOUTS, content=raw, headers={**soul_auth(key), **signed(seller, "POST", PAYOUTS, b"{}")}
        )
        listed = (await client.get(PAYOUTS, headers=soul_auth(key))).json()
        paid_before = await pay(key, fresh)
        own_wallet = await pay(key, None)
        proved = await pay(key, known, proved_by=seller)
        await SoulAgent.update({SoulAgent.key_rotated_ms: SoulAgent.key_rotated_ms - 24 * 3600 * 1000}).where(
            SoulAgent.slug == "lingua"
        )
        day_later = await pay(key, later)
        earnings = (await client.get("/v1/soul/earnings", headers=soul_auth(key))).json()
    assert before.status_code == 201 and before.json()["status"] == "paid", before.text
    assert held.status_code == 403 and held.json()["error"] == "new_payout_address_held", held.text
    assert held.json()["details"]["to_address"].lower() == known.lower() and held.json()["details"]["held_until"]
    assert wrong_proof.status_code == 403 and wrong_proof.json()["error"] == "new_payout_address_held"
    assert (
        forged.status_code == 401 and forged.json()["details"]["reason"] == "body_mismatch"
    )  # a sent proof is never ignored
    assert listed["count"] == 1  # nothing was withdrawn by the refusals
    assert [r.status_code for r in (paid_before, own_wallet, proved, day_later)] == [201] * 4
    assert (
        own_wallet.json()["to_address"].lower() == seller.address.lower()
        and proved.json()["to_address"].lower() == known.lower()
    )
    assert earnings["paid_out_usdc"] == "0.500000" and earnings["credits_balance"] == "0.500000"
    assert await ledger_problems() == []
