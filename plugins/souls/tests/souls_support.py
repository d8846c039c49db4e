"""Helpers of the souls tests: a started kernel with the plugin, a soul registered by a
wallet's write proof, receipts verified offline, polling a job."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from typing import Any

import rfc8785
from nacl.signing import VerifyKey

from tollway.testing import proof_headers, wait_for_job

PLUGIN = {"tollway_souls"}
ENV = {"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"}
OPERATOR = {"Authorization": "Bearer test-operator-token"}

LINGUA = {
    "slug": "lingua",
    "name": "Lingua",
    "display_name": "Lingua, the translator",
    "category": "language",
    "soul_md": "# Lingua\n\nI turn English into French. <script>alert(1)</script> [site](javascript:alert(2))",
    "avatar_url": "https://example.com/lingua.png?size=96' onerror='alert(3)",
    "services": [
        {
            "slug": "translate",
            "title": "Translation to French",
            "description": "Any English text up to 5,000 words, translated.",
            "price_usdc": "1.25",
            "category": "language",
        },
        {
            "slug": "proofread",
            "title": "Proofreading",
            "description": "French text checked for grammar and style.",
            "price_usdc": "0.40",
            "category": "language",
        },
    ],
}


async def register(client: Any, account: Any, body: dict[str, Any]) -> Any:
    return await post_with_proof(client, account, "/v1/soul/register", body)


async def post_with_proof(client: Any, account: Any, path: str, body: dict[str, Any]) -> Any:
    raw = json.dumps(body).encode()
    headers = {
        **proof_headers(account, scope="write", method="POST", path=path, body=raw),
        "content-type": "application/json",
    }
    return await client.post(path, content=raw, headers=headers)


def soul_auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def finished(client, request_id: str, headers: dict[str, str]) -> dict:
    """The job once it completed or failed (polled every 20 ms, up to 10 s)."""
    return await wait_for_job(client, request_id, headers, tries=500, every_s=0.02)


async def parked(client: Any, job_id: str, headers: dict[str, str]) -> dict[str, Any]:
    """The job once a worker handed it to the seller (processing, with the waiting message)."""
    job: dict[str, Any] = {}
    for _ in range(500):
        job = (await client.get(f"/v1/requests/{job_id}", headers=headers)).json()
        if job.get("message", "").startswith("waiting for the seller"):
            return job
        await asyncio.sleep(0.02)
    raise AssertionError(f"job {job_id} was not handed to the seller: {job}")


def verify_offline(receipt: dict[str, Any], keys: dict[str, Any]) -> bool:
    """Check a served receipt with nothing but its published key: RFC 8785 of the receipt
    minus digest and signature, SHA-256, Ed25519 over the digest bytes."""
    public = {k["key_id"]: k["public_key"] for k in keys["keys"]}[receipt["key_id"]]
    signed = {k: v for k, v in receipt.items() if k not in ("digest", "signature")}
    digest = hashlib.sha256(rfc8785.dumps(signed)).hexdigest()
    if digest != receipt["digest"]:
        return False
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    try:
        VerifyKey(base64.urlsafe_b64decode(pad(public))).verify(
            bytes.fromhex(digest), base64.urlsafe_b64decode(pad(receipt["signature"]))
        )
    except Exception:
        return False
    return True
