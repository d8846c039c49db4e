"""Receipts (keys, offline verification, revisions) and the analytics routes."""

from __future__ import annotations

import json

import pytest
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.echo_plugin import EchoPlugin
from tollway._core.receipts.receipt_signing import ReceiptSigner, b64url_decode, verify_receipt
from tollway._core.receipts.tables import Receipt
from tollway._runtime.cli import main as cli
from tollway.testing import credits_session, http_client

OPERATOR = {"Authorization": "Bearer test-operator-token"}


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def _agent_with_credits(client, amount="1"):
    return await credits_session(client, amount)


async def test_keys_published_and_receipt_verifies_offline(kernel, tmp_path, monkeypatch):
    async with http_client(kernel) as client:
        agent_id, auth = await _agent_with_credits(client)
        paid = await client.post("/v1/tools/test/echo", json={"text": "hello", "memo": "note"}, headers=auth)
        receipt_id = paid.json()["data"]["receipt_id"]
        receipt = (await client.get(f"/v1/receipts/{receipt_id}", headers=auth)).json()
        keys = (await client.get("/v1/receipts/keys")).json()
        other = await client.get(f"/v1/receipts/{receipt_id}", headers={"X-Agent-ID": Account.create().address})
    assert other.status_code == 404
    (key,) = keys["keys"]
    assert key["alg"] == "Ed25519" and key["active"] is True and len(b64url_decode(key["public_key"])) == 32
    assert receipt["key_id"] == key["key_id"] and receipt["alg"] == "Ed25519"
    assert receipt["receipt_id"].startswith("rcpt_") and receipt["agent_id"] == agent_id
    for field in (
        "soul_agent_id",
        "category",
        "subcategory",
        "amount_usdc",
        "service_fee",
        "status",
        "execution_status",
        "goal_id",
        "revision",
        "signature",
        "digest",
        "settlement_tx",
        "memo",
        "decisionContext",
        "value_tag",
        "job_id",
        "created_at",
        "settled_at",
    ):
        assert field in receipt, field
    assert "provider_cost" not in receipt

    receipt_file = tmp_path / "receipt.json"
    keys_file = tmp_path / "keys.json"
    receipt_file.write_text(json.dumps(receipt))
    keys_file.write_text(json.dumps(keys))
    assert cli(["receipts", "verify", str(receipt_file), "--keys", str(keys_file)]) == 0
    receipt_file.write_text(json.dumps({**receipt, "memo": "changed"}))
    assert cli(["receipts", "verify", str(receipt_file), "--keys", str(keys_file)]) == 1


@settings(max_examples=60, deadline=None)
@given(
    body=st.dictionaries(
        st.text(min_size=1, max_size=12),
        st.recursive(
            st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=30),
            lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
            max_leaves=12,
        ),
        max_size=8,
    ),
    tamper=st.text(min_size=1, max_size=10),
)
def test_any_receipt_body_signs_and_any_change_breaks_it(body, tamper):
    signer = ReceiptSigner(b"\x01" * 32)
    body = {k: v for k, v in body.items() if k not in ("signature", "digest", "key_id", "alg")}
    signed = signer.sign(body)
    keys = {signer.key_id: signer.public_key}
    assert verify_receipt(signed, keys) == (True, "valid")
    changed = {**signed, "memo": (signed.get("memo") or "") + tamper}
    assert verify_receipt(changed, keys)[0] is False
    assert verify_receipt(signed, {signer.key_id: ReceiptSigner(b"\x02" * 32).public_key})[0] is False


async def test_decision_context_that_cannot_be_signed_is_refused_before_payment(kernel):
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/test/echo", json={"text": "x", "decisionContext": {"n": 2**60}})
    assert resp.status_code == 400
    assert resp.json()["details"][0]["field"] == "decisionContext"


async def test_analytics_receipts_filters_and_paging(kernel):
    async with http_client(kernel) as client:
        agent_id, auth = await _agent_with_credits(client)
        for i in range(5):
            assert (await client.post("/v1/tools/test/echo", json={"text": f"t{i}"}, headers=auth)).status_code == 200
        for i in range(3):
            assert (await client.post("/v1/tools/test/flaky", json={"text": f"f{i}"}, headers=auth)).status_code == 200
        page = (await client.get("/v1/analytics/receipts", params={"limit": 3}, headers=auth)).json()
        rest = (await client.get("/v1/analytics/receipts", params={"limit": 3, "offset": 6}, headers=auth)).json()
        verification = (
            await client.get("/v1/analytics/receipts", params={"category": "verification"}, headers=auth)
        ).json()
        clamped = (await client.get("/v1/analytics/receipts", params={"limit": 500}, headers=auth)).json()
        future = (await client.get("/v1/analytics/receipts", params={"since": "2999-01-01"}, headers=auth)).json()
        bad_cat = await client.get("/v1/analytics/receipts", params={"category": "snacks"}, headers=auth)
        bad_period = await client.get("/v1/analytics/receipts", params={"period": 366}, headers=auth)
        breakdown = (await client.get("/v1/analytics/spend/breakdown", headers=auth)).json()
        stranger = (await client.get("/v1/analytics/receipts", headers={"X-Agent-ID": Account.create().address})).json()
    assert page["count"] == 3 and page["has_more"] is True
    assert rest["count"] == 2 and rest["has_more"] is False
    assert verification["count"] == 3 and all(r["category"] == "verification" for r in verification["receipts"])
    assert clamped["count"] == 8 and clamped["has_more"] is False
    assert future["count"] == 0
    assert bad_cat.status_code == 400 and bad_cat.json()["details"][0]["field"] == "category"
    assert bad_period.status_code == 400 and bad_period.json()["error"] == "invalid_request"
    assert stranger["count"] == 0
    assert breakdown["period_days"] == 30
    # echo costs 0.001 each (5 calls), flaky 0.010 each (3 calls)
    assert breakdown["total"] == "0.035000"
    cats = {c["category"]: c for c in breakdown["categories"]}
    assert cats["verification"] == {"category": "verification", "total": "0.030000", "count": 3, "pct": 85.71}
    assert cats["data"] == {"category": "data", "total": "0.005000", "count": 5, "pct": 14.29}
    assert await Receipt.count() == 8


async def test_agent_proof_pays_from_credits_and_write_nonce_is_single_use(kernel):
    import time

    from tollway._core.auth.auth_proof import make_agent_proof

    wallet = Account.create()
    async with http_client(kernel) as client:
        await client.post(
            "/v1/tools/internal/agents/register", json={"wallet_address": wallet.address}, headers=OPERATOR
        )
        await client.post(
            "/v1/tools/internal/credits/grant", json={"agent_id": wallet.address, "amount": "0.01"}, headers=OPERATOR
        )
        body = json.dumps({"text": "proof"}).encode()
        proof = make_agent_proof(
            wallet,
            chain_id=84532,
            scope="write",
            method="POST",
            path="/v1/tools/test/echo",
            body=body,
            now=int(time.time()),
        )
        headers = {"X-Agent-ID": wallet.address, "X-Agent-Proof": proof, "content-type": "application/json"}
        paid = await client.post("/v1/tools/test/echo", content=body, headers=headers)
        replay = await client.post("/v1/tools/test/echo", content=body, headers=headers)
        bare = await client.post(
            "/v1/tools/test/echo",
            content=body,
            headers={"X-Agent-ID": wallet.address, "content-type": "application/json"},
        )
        other_body = await client.post(
            "/v1/tools/test/echo",
            json={"text": "other"},
            headers={
                "X-Agent-ID": wallet.address,
                "X-Agent-Proof": make_agent_proof(
                    wallet,
                    chain_id=84532,
                    scope="write",
                    method="POST",
                    path="/v1/tools/test/echo",
                    body=body,
                    now=int(time.time()),
                ),
            },
        )
        balance = (await client.get("/v1/balance", headers={"X-Agent-ID": wallet.address})).json()
    assert paid.status_code == 200, paid.text
    assert replay.status_code == 401 and replay.json()["details"]["reason"] == "nonce_reused"
    assert bare.status_code == 402  # X-Agent-ID alone never spends credits
    assert other_body.status_code == 401 and other_body.json()["details"]["reason"] == "body_mismatch"
    assert balance["credits_balance"] == "0.009000"
