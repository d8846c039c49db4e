"""A bare `X-Agent-ID` proves nothing: it is rate-limited by client IP, never makes an
agent row, never changes state on a read, and cannot lock the named wallet out.
Only a valid proof, an access token or a signed payment gets its own count."""

from __future__ import annotations

import time

import pytest
from eth_account import Account

import tollway._core.auth.auth
from tests.support.echo_plugin import EchoPlugin
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.auth.tables import Agent
from tollway._core.jobs import notifications
from tollway._core.messages.tables import Notification
from tollway.testing import credits_session, http_client, pay_402

OPERATOR = {"Authorization": "Bearer test-operator-token"}
DAY = 86_400  # a day-long window: a test cannot straddle a window boundary
CHAIN_ID = 84532  # the local network's


async def token_session(client, *, wallet: str | None = None) -> tuple[str, dict[str, str]]:
    """Register an agent (optionally with a wallet) and issue it an access token; no credits."""
    body = {"wallet_address": wallet} if wallet else {}
    agent = (await client.post("/v1/tools/internal/agents/register", json=body, headers=OPERATOR)).json()
    token = (
        await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR)
    ).json()["token"]
    return agent["agent_id"], {"Authorization": f"Bearer {token}"}


def read_proof(account, path: str, *, scope: str = "read", method: str = "GET", body: bytes = b"") -> dict[str, str]:
    proof = make_agent_proof(
        account, chain_id=CHAIN_ID, scope=scope, method=method, path=path, body=body, now=int(time.time())
    )
    return {"X-Agent-ID": account.address, "X-Agent-Proof": proof}


async def test_rotating_bare_agent_ids_stays_in_the_ip_count_and_makes_no_agents(kernel_factory):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())], env={"TOLLWAY_RATE_LIMIT_FREE_READ": f"5/{DAY}"})
    async with http_client(kernel) as client:
        reads = [await client.get("/v1/balance", headers={"X-Agent-ID": Account.create().address}) for _ in range(6)]
        other_routes = [
            await client.get(path, headers={"X-Agent-ID": Account.create().address})
            for path in ("/v1/analytics/receipts", "/v1/tools/notifications", "/v1/analytics/spend/breakdown")
        ]
        # a paid tool named by a bare wallet quotes, and makes no agent either
        quote = await client.post(
            "/v1/tools/test/echo", json={"text": "hi"}, headers={"X-Agent-ID": Account.create().address}
        )
    assert [r.status_code for r in reads] == [200] * 5 + [429]
    assert [r.headers["RateLimit-Remaining"] for r in reads[:5]] == ["4", "3", "2", "1", "0"]
    assert reads[0].json()["agent_id"] is None and reads[0].json()["credits_balance"] == "0.000000"
    assert [r.status_code for r in other_routes] == [429] * 3
    assert quote.status_code == 402
    assert await Agent.count() == 0


async def test_a_bare_read_of_an_unknown_wallet_answers_empty_and_inserts_nothing(kernel_factory):
    kernel = await kernel_factory()
    wallet = {"X-Agent-ID": Account.create().address}
    async with http_client(kernel) as client:
        receipts = await client.get("/v1/analytics/receipts", headers=wallet)
        listed = await client.get("/v1/tools/notifications", headers=wallet)
        job = await client.get("/v1/requests/req_nothing", headers=wallet)
    assert receipts.status_code == 200 and receipts.json()["receipts"] == []
    assert listed.status_code == 200 and listed.json() == {"notifications": [], "count": 0}
    assert job.status_code == 404
    assert await Agent.count() == 0


async def test_a_victim_with_a_token_or_a_proof_is_not_locked_out_by_its_wallet_in_a_bare_header(kernel_factory):
    kernel = await kernel_factory(env={"TOLLWAY_RATE_LIMIT_FREE_READ": f"3/{DAY}"})
    victim = Account.create()
    async with http_client(kernel) as client:
        agent_id, token = await token_session(client, wallet=victim.address)
        attack = [await client.get("/v1/balance", headers={"X-Agent-ID": victim.address}) for _ in range(4)]
        # a proof that does not verify is no identity either: still the attacker's IP count
        forged = await client.get(
            "/v1/balance", headers={"X-Agent-ID": victim.address, "X-Agent-Proof": "bm90LWEtcHJvb2Y"}
        )
        with_token = await client.get("/v1/balance", headers=token)
        with_proof = await client.get("/v1/balance", headers=read_proof(victim, "/v1/balance"))
    assert [a.status_code for a in attack] == [200, 200, 200, 429]
    assert forged.status_code == 429
    assert with_token.status_code == 200 and with_token.json()["agent_id"] == agent_id
    assert with_token.headers["RateLimit-Remaining"] == "2"  # the attacker's requests never counted here
    # token and proof are the same wallet: one count
    assert with_proof.status_code == 200 and with_proof.json()["agent_id"] == agent_id
    assert with_proof.headers["RateLimit-Remaining"] == "1"


async def test_a_signed_payment_counts_under_its_payer_and_a_garbled_one_under_the_ip(kernel_factory):
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())], env={"TOLLWAY_RATE_LIMIT_LOOKUP": f"2/{DAY}"})
    payer = Account.create()  # unfunded: its payment is refused, but it is its own count
    async with http_client(kernel) as client:
        quotes = [await client.post("/v1/tools/test/echo", json={"text": "hi"}) for _ in range(2)]
        garbled = await client.post(
            "/v1/tools/test/echo", json={"text": "hi"}, headers={"payment-signature": "bm90LWEtcGF5bWVudA=="}
        )
        signed = pay_402(payer, quotes[0].headers["PAYMENT-REQUIRED"])
        paid = await client.post("/v1/tools/test/echo", json={"text": "hi"}, headers={"payment-signature": signed})
    assert [q.status_code for q in quotes] == [402, 402]
    assert garbled.status_code == 429
    assert paid.status_code == 402 and paid.json()["error"] == "payment_verification_failed"
    assert paid.headers["RateLimit-Remaining"] == "1"


async def test_a_proof_is_verified_once_per_request(kernel_factory, monkeypatch):
    """The limiter learns the identity from the same verification the route uses."""
    kernel = await kernel_factory(plugins=[("echo", EchoPlugin())])
    account = Account.create()
    calls: list[str] = []
    real = tollway._core.auth.auth.verify_agent_proof

    def counting(*args, **kwargs):
        calls.append(kwargs["path"])
        return real(*args, **kwargs)

    monkeypatch.setattr(tollway._core.auth.auth, "verify_agent_proof", counting)
    body = b'{"text": "hi"}'
    async with http_client(kernel) as client:
        await credits_session(client, "1", wallet=account.address)
        paid = await client.post(
            "/v1/tools/test/echo",
            content=body,
            headers={
                "content-type": "application/json",
                **read_proof(account, "/v1/tools/test/echo", scope="write", method="POST", body=body),
            },
        )
        read = await client.get("/v1/balance", headers=read_proof(account, "/v1/balance"))
    assert paid.status_code == 200, paid.text
    assert read.status_code == 200
    assert calls == ["/v1/tools/test/echo", "/v1/balance"]


# -- reads change nothing for an unproven caller ------------------------------------------
async def _agent_with_notifications(client, kernel, wallet: str) -> tuple[str, dict[str, str]]:
    agent_id, token = await token_session(client, wallet=wallet)
    for i in range(3):
        await notifications.notify(agent_id, "job_completed", f"n{i}", None, {"i": i})
    return agent_id, token


async def test_listing_notifications_with_a_bare_agent_id_marks_nothing_read(kernel_factory):
    kernel = await kernel_factory()
    victim = Account.create()
    async with http_client(kernel) as client:
        agent_id, token = await _agent_with_notifications(client, kernel, victim.address)
        bare = await client.get("/v1/tools/notifications", headers={"X-Agent-ID": victim.address})
        by_uuid = await client.get("/v1/tools/notifications", headers={"X-Agent-ID": agent_id})
        still_unread = await client.get("/v1/tools/notifications", params={"unread": "true"}, headers=token)
        after_token = await client.get("/v1/tools/notifications", params={"unread": "true"}, headers=token)
    assert bare.status_code == 200 and bare.json()["count"] == 3
    assert not any(n["read"] for n in bare.json()["notifications"])
    assert by_uuid.json()["count"] == 3
    assert still_unread.json()["count"] == 3  # the bare reads marked nothing
    assert after_token.json()["count"] == 0  # the token's listing did
    assert await Notification.count().where(Notification.read == False) == 0  # noqa: E712


async def test_listing_notifications_with_a_valid_read_proof_marks_them_read(kernel_factory):
    kernel = await kernel_factory()
    owner = Account.create()
    async with http_client(kernel) as client:
        await _agent_with_notifications(client, kernel, owner.address)
        # a proof that does not verify falls back to a bare read (log-only): it marks nothing
        bad = await client.get(
            "/v1/tools/notifications", headers={"X-Agent-ID": owner.address, "X-Agent-Proof": "bm90LWEtcHJvb2Y"}
        )
        unread_after_bad = await Notification.count().where(Notification.read == False)  # noqa: E712
        proven = await client.get("/v1/tools/notifications", headers=read_proof(owner, "/v1/tools/notifications"))
    assert bad.status_code == 200 and unread_after_bad == 3
    assert proven.status_code == 200 and proven.json()["count"] == 3
    assert await Notification.count().where(Notification.read == False) == 0  # noqa: E712


async def test_enforced_proofs_close_bare_reads(kernel_factory):
    kernel = await kernel_factory(env={"TOLLWAY_PROOF_ENFORCEMENT": "enforce"})
    owner = Account.create()
    async with http_client(kernel) as client:
        await _agent_with_notifications(client, kernel, owner.address)
        bare = await client.get("/v1/tools/notifications", headers={"X-Agent-ID": owner.address})
        proven = await client.get("/v1/tools/notifications", headers=read_proof(owner, "/v1/tools/notifications"))
    assert bare.status_code == 401 and bare.json()["details"]["reason"] == "missing"
    assert proven.status_code == 200 and proven.json()["count"] == 3


@pytest.mark.parametrize("db_kind", ["sqlite"], indirect=True)
async def test_a_known_wallet_is_still_readable_by_its_bare_agent_id(kernel_factory):
    """Log-only reads keep working for agents that exist (the free reads documented in docs/auth.md)."""
    kernel = await kernel_factory()
    owner = Account.create()
    async with http_client(kernel) as client:
        agent_id, _ = await credits_session(client, "0.5", wallet=owner.address)
        balance = await client.get("/v1/balance", headers={"X-Agent-ID": owner.address})
    assert balance.json()["agent_id"] == agent_id and balance.json()["credits_balance"] == "0.500000"
