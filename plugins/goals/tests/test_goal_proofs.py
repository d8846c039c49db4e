"""The goal routes with signed agent proofs (both databases): a wallet pays a goal from its
credits with a write proof, sends events with write proofs and reads its cases with read
proofs; a read proof cannot send an event, a reused write proof is refused, and another
wallet's proof finds nothing (404). Goal records are private: the owner's wallet named in a
bare X-Agent-ID (public on chain) reads nothing of them, even with proofs log-only."""

from __future__ import annotations

import json

from eth_account import Account
from goal_support import goals_kernel

from tollway.testing import credits_session, http_client, proof_headers


async def test_the_goal_routes_with_agent_proofs(kernel_factory) -> None:
    kernel = await goals_kernel(kernel_factory)
    owner, stranger = Account.create(), Account.create()
    async with http_client(kernel) as client:
        await credits_session(client, "10", wallet=owner.address)
        await credits_session(client, "1", wallet=stranger.address)
        body = json.dumps({"goal": "Watch the invoices."}).encode()
        created = await client.post(
            "/v1/compute",
            content=body,
            headers={
                "content-type": "application/json",
                **proof_headers(owner, scope="write", method="POST", path="/v1/compute", body=body),
            },
        )
        assert created.status_code == 202, created.text
        gid = created.json()["goal_id"]
        events = f"/v1/compute/{gid}/events"
        event = json.dumps({"event_id": "e1", "case_key": "inv-1", "task": "Chase invoice 1"}).encode()
        write = proof_headers(owner, scope="write", method="POST", path=events, body=event)
        sent = await client.post(events, content=event, headers={"content-type": "application/json", **write})
        replayed = await client.post(events, content=event, headers={"content-type": "application/json", **write})
        read_only = await client.post(
            events,
            content=event,
            headers={
                "content-type": "application/json",
                **proof_headers(owner, scope="read", method="POST", path=events, body=event),
            },
        )
        cases = f"/v1/compute/{gid}/cases"
        listing = await client.get(cases, headers=proof_headers(owner, scope="read", method="GET", path=cases))
        strangers = await client.get(cases, headers=proof_headers(stranger, scope="read", method="GET", path=cases))
        record = await client.get(
            f"{cases}/inv-1", headers=proof_headers(owner, scope="read", method="GET", path=f"{cases}/inv-1")
        )
        goal = await client.get(
            f"/v1/compute/{gid}", headers=proof_headers(owner, scope="read", method="GET", path=f"/v1/compute/{gid}")
        )
        private = (f"/v1/compute/{gid}", cases, f"{cases}/inv-1", f"/v1/compute/{gid}/result-webhook")
        bare = [await client.get(path, headers={"X-Agent-ID": owner.address}) for path in private]
    assert sent.status_code == 202 and sent.json()["outcome"] == "created"
    assert replayed.status_code == 401  # a write proof's nonce is single use
    assert read_only.status_code == 401
    assert listing.status_code == 200 and [c["key"] for c in listing.json()["data"]] == ["inv-1"]
    assert strangers.status_code == 404
    assert record.status_code == 200 and record.json()["data"]["task"] == "Chase invoice 1"
    assert goal.status_code == 200 and goal.json()["data"]
    assert [r.status_code for r in bare] == [401] * 4
    assert all(r.json()["error"] == "invalid_agent_proof" and r.json()["details"]["reason"] == "missing" for r in bare)
    assert not any("inv-1" in r.text or "invoice" in r.text.lower() or "whsec_" in r.text for r in bare)
