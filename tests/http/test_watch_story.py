"""Watches end to end over HTTP, on SQLite and PostgreSQL, with in-process workers doing
the deliveries and sending the webhooks:

- the full story on real data: the OFAC SDN list of January 2019 is loaded, three real
  entries are watched (one that changes by July 2021, one removed by then, one unchanged),
  the lists switch to July 2021 and the operator polls: the two changes arrive, each with
  one charge, one receipt, one notification and one signed webhook; nothing for the third;
  and Changes reads the changed entry's history;
- the cap: a watch whose cap pays two changes meets five: two delivered, paused `cap`, the
  owner told once; raising the cap delivers the three held changes in order;
- the credits: credits running out pause the watch; a grant resumes it automatically and
  the held changes are delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from pathlib import Path

from eth_account import Account

from tests.support.feed_plugin import FEED, FeedPlugin
from tests.support.webhook_receiver import receiving
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.credits.ledger_check import check_ledger
from tollway._core.receipts.receipt_signing import ReceiptSigner, verify_receipt
from tollway._core.webhooks.signing import verify
from tollway._runtime.service import Background
from tollway.testing import OPERATOR, http_client

OFAC = Path(__file__).resolve().parents[2] / "plugins" / "sanctions" / "tests" / "fixtures" / "ofac"  # real OFAC files
CHANGED, REMOVED, UNCHANGED = (
    "2674",
    "1544",
    "173",
)  # ABBAS, Abu; NAVIERA MARITIMA DE AROSA, S.A.; ANGLO-CARIBBEAN CO., LTD.
INSECURE = {"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"}  # the receiver is plain HTTP on 127.0.0.1


def use_lists(folder: Path, sdn: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for source in (OFAC / sdn, OFAC / "consolidated_non_sdn_2025-12"):
        for f in source.glob("*.csv"):
            shutil.copyfile(f, folder / f.name)


class Agent:
    """A wallet-holding agent that signs an agent proof for every request."""

    def __init__(self, client, chain_id: int) -> None:
        self.client, self.chain_id, self.wallet = client, chain_id, Account.create()

    def headers(self, scope: str, method: str, path: str, body: bytes = b"") -> dict[str, str]:
        proof = make_agent_proof(
            self.wallet, chain_id=self.chain_id, scope=scope, method=method, path=path, body=body, now=int(time.time())
        )
        return {"X-Agent-ID": self.wallet.address, "X-Agent-Proof": proof, "content-type": "application/json"}

    async def register(self, credits: str) -> None:
        await self.client.post(
            "/v1/tools/internal/agents/register", json={"wallet_address": self.wallet.address}, headers=OPERATOR
        )
        await self.grant(credits)

    async def grant(self, amount: str) -> None:
        answer = await self.client.post(
            "/v1/tools/internal/credits/grant",
            json={"agent_id": self.wallet.address, "amount": amount},
            headers=OPERATOR,
        )
        assert answer.status_code == 200, answer.text

    async def send(self, method: str, path: str, payload: dict | None = None, scope: str = "write"):
        body = json.dumps(payload).encode() if payload is not None else b""
        return await self.client.request(
            method, path, content=body or None, headers=self.headers(scope, method, path, body)
        )

    async def watches(self) -> dict[str, dict]:
        listed = await self.send("GET", "/v1/tools/watch", scope="read")
        assert listed.status_code == 200, listed.text
        return {w["key"]: w for w in listed.json()["data"]["watches"]}

    async def notifications(self, type_: str) -> list[dict]:
        listed = await self.send("GET", "/v1/tools/notifications", scope="read")
        return [n for n in listed.json()["notifications"] if n["type"] == type_]


async def until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


async def poll(client, attribute: str) -> dict:
    answer = await client.post(f"/v1/tools/internal/watch-sources/{attribute}/poll", headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_the_full_story_on_two_real_sanctions_lists(kernel_factory, tmp_path) -> None:
    folder = tmp_path / "ofac-mirror"
    use_lists(folder, "sdn_2019-01")
    kernel = await kernel_factory(
        installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": folder.as_uri(), **INSECURE}
    )
    background = Background(kernel, workers=1)
    await background.start()
    try:
        async with http_client(kernel) as client, receiving([200]) as receiver:
            assert (await poll(client, "us_treasury_sanctions"))["changes_detected"] == 0  # the baseline
            agent = Agent(client, kernel.network.chain_id)
            await agent.register("1")
            secrets: dict[str, str] = {}
            for key, entity_type in ((CHANGED, "person"), (REMOVED, "company"), (UNCHANGED, "company")):
                made = await agent.send(
                    "POST",
                    "/v1/tools/watch",
                    {
                        "entity_type": entity_type,
                        "attribute": "us_treasury_sanctions",
                        "key": key,
                        "max_spend": 1,
                        "webhook_url": receiver.url,
                    },
                )
                assert made.status_code == 201, made.text
                secrets[made.json()["data"]["id"]] = made.json()["data"]["webhook_secret"]
            use_lists(folder, "sdn_2021-07")
            polled = await poll(client, "us_treasury_sanctions")
            assert (
                polled["attribute"] == "us_treasury_sanctions" and polled["changes_detected"] == 2960
            )  # every change between the lists
            await until(lambda: _count(receiver, 2))
            await asyncio.sleep(0.3)  # nothing more arrives
            watches = await agent.watches()
            changes = await agent.notifications("watch_change")
            paid = await agent.send(
                "POST",
                "/v1/tools/changes",
                {"attribute": "us_treasury_sanctions", "key": CHANGED, "since": "2020-01-01"},
            )
    finally:
        await background.stop()
    assert len(receiver.requests) == 2
    bodies = {}
    receiver_of_the_docs = docs_receiver()
    handled: set[str] = set()
    for request in receiver.requests:
        body = json.loads(request.body)
        secret = secrets[body["watch_id"]]
        assert verify(secret, request.body, request.headers["x-service-signature"])
        assert request.headers["webhook-id"] == body["delivery_id"]
        assert receiver_of_the_docs(secret, request.headers, request.body, handled) == body
        assert receiver_of_the_docs(secret, request.headers, request.body, handled) is None  # a repeat
        assert receiver_of_the_docs(secret, request.headers, request.body + b" ", set()) is None  # tampered
        bodies[body["key"]] = body
    assert set(bodies) == {CHANGED, REMOVED}
    assert (
        bodies[CHANGED]["change"]["field"],
        bodies[CHANGED]["change"]["before"],
        bodies[CHANGED]["change"]["after"],
    ) == ("programs[0]", "SDT", "SDGT")
    assert (bodies[REMOVED]["change"]["field"], bodies[REMOVED]["change"]["after"]) == ("$entity", "not_listed")
    assert all(
        b["type"] == "watch.change" and b["charged"] == 0.02 and b["attribute"] == "us_treasury_sanctions"
        for b in bodies.values()
    )
    assert {k: (w["changes_delivered"], w["spent"]) for k, w in watches.items()} == {
        CHANGED: (1, 0.02),
        REMOVED: (1, 0.02),
        UNCHANGED: (0, 0),
    }
    assert sorted(n["metadata"]["key"] for n in changes) == [REMOVED, CHANGED]
    signer = ReceiptSigner(kernel.config.receipt_seed)
    for body in bodies.values():
        receipt = await kernel.receipts.get(body["receipt_id"])
        assert verify_receipt(receipt, {signer.key_id: signer.public_key}) == (True, "valid")
        assert (receipt["subcategory"], receipt["job_id"], receipt["amount_usdc"]) == (
            "watch",
            body["delivery_id"],
            "0.020000",
        )
    assert paid.status_code == 200, paid.text
    [row] = paid.json()["data"]["changes"]
    assert (row["field"], row["before"], row["after"], row["source"]) == ("programs[0]", "SDT", "SDGT", "OFAC")
    assert await check_ledger() == []


def docs_receiver():
    """The receiver snippet of docs/watches.md, run as written."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "watches.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(code, "docs/watches.md", "exec"), scope)
    return scope["watch_change"]


async def _count(receiver, n: int) -> bool:
    return len(receiver.requests) >= n


@contextlib.asynccontextmanager
async def feed_watch(kernel_factory, *, credits: str, max_spend: float, changes: int):
    """A kernel with the test feed and an in-process worker; an agent with `credits` whose
    watch on ITEM-1 (cap `max_spend`) then meets `changes` changes, one poll each.
    Yields (agent, watch id)."""
    FEED.clear()
    FEED["ITEM-1"] = {"n": 0}
    kernel = await kernel_factory(plugins=[("feed", FeedPlugin())])
    background = Background(kernel, workers=1)
    await background.start()
    try:
        async with http_client(kernel) as client:
            await poll(client, "test_feed")
            agent = Agent(client, kernel.network.chain_id)
            await agent.register(credits)
            made = await agent.send(
                "POST",
                "/v1/tools/watch",
                {"entity_type": "item", "attribute": "test_feed", "key": "ITEM-1", "max_spend": max_spend},
            )
            assert made.status_code == 201, made.text
            for n in range(1, changes + 1):
                FEED["ITEM-1"] = {"n": n}
                await poll(client, "test_feed")
            await until(lambda: _watch_is(agent, "ITEM-1", status="paused"))
            yield agent, made.json()["data"]["id"]
    finally:
        await background.stop()


async def test_the_cap_holds_changes_and_raising_it_delivers_them_in_order(kernel_factory) -> None:
    async with feed_watch(kernel_factory, credits="1", max_spend=0.04, changes=5) as (agent, wid):
        paused = (await agent.watches())["ITEM-1"]
        told = await agent.notifications("watch_paused")
        raised = await agent.send("PATCH", f"/v1/tools/watch/{wid}", {"max_spend": 1})
        assert raised.status_code == 200, raised.text
        await until(lambda: _watch_is(agent, "ITEM-1", changes_delivered=5))
        delivered = [n["metadata"]["change"]["after"] for n in reversed(await agent.notifications("watch_change"))]
        final = (await agent.watches())["ITEM-1"]
    assert (paused["status"], paused["pause_reason"], paused["changes_delivered"], paused["spent"]) == (
        "paused",
        "cap",
        2,
        0.04,
    )
    assert len(told) == 1 and told[0]["metadata"]["reason"] == "cap"
    assert raised.json()["data"]["status"] == "running"
    assert delivered == [1, 2, 3, 4, 5]
    assert (final["status"], final["spent"], final["changes_delivered"]) == ("running", 0.1, 5)
    assert await check_ledger() == []


async def test_credits_running_out_pause_and_a_grant_resumes_the_watch(kernel_factory) -> None:
    async with feed_watch(kernel_factory, credits="0.04", max_spend=5, changes=4) as (
        agent,
        _,
    ):  # credits for two changes
        paused = (await agent.watches())["ITEM-1"]
        await agent.grant("1")
        await until(lambda: _watch_is(agent, "ITEM-1", changes_delivered=4))
        told = await agent.notifications("watch_paused")
        delivered = [n["metadata"]["change"]["after"] for n in reversed(await agent.notifications("watch_change"))]
        balance = (await agent.client.get("/v1/balance", headers={"X-Agent-ID": agent.wallet.address})).json()
    assert (paused["status"], paused["pause_reason"], paused["changes_delivered"]) == ("paused", "credits", 2)
    assert len(told) == 1 and told[0]["metadata"]["reason"] == "credits"
    assert delivered == [1, 2, 3, 4]
    assert balance["credits_balance"] == "0.960000"
    assert await check_ledger() == []


async def _watch_is(agent: Agent, key: str, **want) -> bool:
    watch = (await agent.watches()).get(key, {})
    return all(watch.get(k) == v for k, v in want.items())
