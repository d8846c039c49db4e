"""The Watch resource over HTTP (docs/watches.md): create, list, change, delete; who
may change watches (write proof, signed-in token; never an operator-issued token);
every refusal; the state rules of an owner's change; deliveries dropped with a
deleted watch; the delivery wake-up published when a watch runs again. Real
proofs, real storage (SQLite and PostgreSQL), through the HTTP app."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from eth_account import Account

from tests.support.feed_plugin import ATTRIBUTE, FeedPlugin
from tollway._core.auth.auth_proof import make_agent_proof
from tollway._core.basics.events import WATCH_DELIVERIES
from tollway._core.storage import sql
from tollway.testing import OPERATOR, http_client

PATH = "/v1/tools/watch"
CHAIN = 84532


def new_watch(**over: Any) -> dict[str, Any]:
    return {"entity_type": "item", "attribute": ATTRIBUTE, "key": "ITEM-7", "max_spend": 1, **over}


class Agent:
    """A wallet that signs a fresh proof for each request it sends."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.account = Account.create()
        self.address = self.account.address

    def headers(self, method: str, path: str, raw: bytes, scope: str = "write") -> dict[str, str]:
        proof = make_agent_proof(
            self.account, chain_id=CHAIN, scope=scope, method=method, path=path, body=raw, now=int(time.time())
        )
        return {"X-Agent-ID": self.address, "X-Agent-Proof": proof, "content-type": "application/json"}

    async def send(self, method: str, path: str, body: Any = None, *, scope: str = "write") -> Any:
        raw = json.dumps(body).encode() if body is not None else b""
        return await self.client.request(method, path, content=raw, headers=self.headers(method, path, raw, scope))

    async def create(self, **over: Any) -> dict[str, Any]:
        r = await self.send("POST", PATH, new_watch(**over))
        assert r.status_code == 201, r.text
        return r.json()["data"]

    async def patch(self, watch_id: str, body: Any) -> Any:
        return await self.send("PATCH", f"{PATH}/{watch_id}", body)

    async def watches(self) -> list[dict[str, Any]]:
        r = await self.send("GET", PATH, scope="read")
        assert r.status_code == 200, r.text
        assert r.json()["success"] is True
        return r.json()["data"]["watches"]


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("feed", FeedPlugin())])


async def sign_in(client: Any, agent: Agent) -> dict[str, str]:
    r = await client.post("/v1/auth/sign-in", content=b"", headers=agent.headers("POST", "/v1/auth/sign-in", b""))
    assert r.status_code == 200, r.text
    assert r.json()["agent_id"] and r.json()["expires_at"]
    return {"Authorization": f"Bearer {r.json()['token']}"}


async def operator_token(client: Any, agent_ref: str) -> dict[str, str]:
    r = await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent_ref}, headers=OPERATOR)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


async def row(watch_id: str) -> dict[str, Any]:
    return dict(await sql.fetch_one("SELECT * FROM tw_watches WHERE id = {}", watch_id))


# -- create and list ------------------------------------------------------------------------
async def test_create_answers_201_with_the_secret_once_and_the_list_never_shows_it(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        r = await agent.send("POST", PATH, new_watch(max_spend=1.5, webhook_url="https://hooks.example.com/watch"))
        assert r.status_code == 201, r.text
        assert r.json()["success"] is True
        watch = r.json()["data"]
        secret = watch.pop("webhook_secret")
        assert secret.startswith("whsec_") and len(secret) > 40
        assert set(watch) == {
            "id",
            "entity_type",
            "attribute",
            "key",
            "max_spend",
            "spent",
            "changes_delivered",
            "status",
            "pause_reason",
            "webhook_url",
            "price_per_change",
            "last_delivery_at",
            "created_at",
            "updated_at",
        }
        assert watch["max_spend"] == 1.5 and watch["spent"] == 0 and watch["price_per_change"] == 0.02
        assert (watch["status"], watch["pause_reason"], watch["changes_delivered"]) == ("running", None, 0)
        assert watch["key"] == "ITEM-7" and watch["webhook_url"] == "https://hooks.example.com/watch"
        assert watch["created_at"].endswith("Z") and watch["last_delivery_at"] is None
        stored = await row(watch["id"])
        assert (
            stored["webhook_secret"] == secret
            and stored["max_spend"] == 1_500_000
            and stored["price_per_change"] == 20_000
        )

        without_url = await agent.create(key="ITEM-8")
        assert "webhook_secret" not in without_url and without_url["webhook_url"] is None

        listed = await agent.watches()
        assert [w["id"] for w in listed] == [without_url["id"], watch["id"]]  # newest first
        assert all("webhook_secret" not in w for w in listed)
        assert listed[1] == watch
        # another agent sees none of them
        assert await Agent(client).watches() == []


async def test_amounts_are_exact_dollars_and_the_cap_is_checked_at_both_ends(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        assert (await agent.create(max_spend=0.02))["max_spend"] == 0.02  # one change
        assert (await agent.create(max_spend=100))["max_spend"] == 100
        assert (await agent.create(max_spend=12.345678))["max_spend"] == 12.345678
        for bad, says in (
            (0.019999, "at least 0.02"),
            (100.000001, "at most 100"),
            (0, "at least 0.02"),
            (1.0000001, "6 decimals"),
            ("1", "number"),
            (True, "number"),
            (None, "number"),
        ):
            r = await agent.send("POST", PATH, new_watch(max_spend=bad))
            assert r.status_code == 400, (bad, r.text)
            assert r.json()["error"] == "invalid_request"
            (detail,) = r.json()["details"]
            assert detail["field"] == "max_spend" and says in detail["message"], (bad, detail)
        assert len(await agent.watches()) == 3


async def test_a_non_watchable_pair_is_refused_naming_what_can_be_watched(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        r = await agent.send("POST", PATH, new_watch(attribute="us_treasury_sanctions", entity_type="company"))
        assert r.status_code == 400 and r.json()["error"] == "invalid_input"
        body = r.json()
        assert body["details"]["watchable"] == [{"entity_type": "item", "attribute": ATTRIBUTE}]
        assert body["details"]["fields"] == [
            {
                "field": "attribute",
                "message": "entity_type 'company' with attribute 'us_treasury_sanctions' cannot be watched",
            }
        ]
        assert "item test_feed" in body["message"]
        # a watchable attribute with an entity type it does not have; every other failing field is named too
        r = await agent.send(
            "POST", PATH, new_watch(entity_type="vessel", max_spend=500, webhook_url="ftp://x.example")
        )
        body = r.json()
        assert r.status_code == 400 and body["error"] == "invalid_input"
        assert [f["field"] for f in body["details"]["fields"]] == ["entity_type", "max_spend", "webhook_url"]
        assert body["details"]["watchable"] == [{"entity_type": "item", "attribute": ATTRIBUTE}]
        assert await agent.watches() == []


async def test_the_watchable_list_is_every_pair_of_every_source_sorted(kernel_factory):
    from tollway import Snapshot, WatchSource, hookimpl

    async def nothing(services, keys):
        return Snapshot(values={}, complete=False)

    class Two:
        @hookimpl
        def register_watch_sources(self, register):
            register(WatchSource(attribute="b_list", entity_types=("vessel", "company"), source="b", poll=nothing))

    kernel = await kernel_factory(plugins=[("feed", FeedPlugin()), ("two", Two())])
    async with http_client(kernel) as client:
        r = await Agent(client).send("POST", PATH, new_watch(attribute="nothing_here"))
    assert r.json()["details"]["watchable"] == [
        {"entity_type": "company", "attribute": "b_list"},
        {"entity_type": "item", "attribute": ATTRIBUTE},
        {"entity_type": "vessel", "attribute": "b_list"},
    ]


async def test_the_key_the_url_and_the_shape_are_checked_and_every_failing_field_named(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        r = await agent.send("POST", PATH, new_watch(key="item 7"))
        assert r.status_code == 400 and r.json()["error"] == "invalid_input"
        assert r.json()["details"] == [{"field": "key", "message": "must look like ITEM-<digits> (e.g. ITEM-42)"}]
        assert (
            r.json()["message"] == "key must look like ITEM-<digits> (e.g. ITEM-42)."
        )  # a sentence after the field's name
        for url in (
            "http://hooks.example.com/w",
            "https://127.0.0.1/w",
            "https://localhost/w",
            "not a url",
            "https://user:pw@hooks.example.com/",
            5,
        ):
            r = await agent.send("POST", PATH, new_watch(webhook_url=url))
            assert r.status_code == 400 and r.json()["error"] == "invalid_request", (url, r.text)
            assert [d["field"] for d in r.json()["details"]] == ["webhook_url"], url
        r = await agent.send(
            "POST",
            PATH,
            {
                "entity_type": "item",
                "attribute": ATTRIBUTE,
                "key": "bad key",
                "max_spend": 0.001,
                "webhook_url": "http://plain.example.com",
                "colour": "red",
            },
        )
        assert r.status_code == 400 and r.json()["error"] == "invalid_request"
        assert [d["field"] for d in r.json()["details"]] == ["colour", "key", "max_spend", "webhook_url"]
        r = await agent.send("POST", PATH, {})
        assert sorted(d["field"] for d in r.json()["details"]) == ["attribute", "entity_type", "key", "max_spend"]
        assert await agent.watches() == []


async def test_insecure_webhooks_are_allowed_only_by_the_setting(kernel_factory):
    kernel = await kernel_factory(plugins=[("feed", FeedPlugin())], env={"TOLLWAY_WEBHOOKS_ALLOW_INSECURE": "1"})
    async with http_client(kernel) as client:
        watch = await Agent(client).create(webhook_url="http://127.0.0.1:9999/hook")
    assert watch["webhook_url"] == "http://127.0.0.1:9999/hook" and watch["webhook_secret"].startswith("whsec_")


async def test_the_101st_watch_is_refused_until_one_is_deleted(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        token = await sign_in(client, agent)
        ids = []
        for i in range(97):
            r = await client.post(PATH, json=new_watch(key=f"ITEM-{i}"), headers=token)
            assert r.status_code == 201, r.text
            ids.append(r.json()["data"]["id"])
        # creations racing for the last places: exactly as many as are left get one
        raced = await asyncio.gather(
            *(client.post(PATH, json=new_watch(key=f"ITEM-{97 + i}"), headers=token) for i in range(6))
        )
        assert sorted(r.status_code for r in raced) == [201, 201, 201, 409, 409, 409]
        r = await client.post(PATH, json=new_watch(key="ITEM-100"), headers=token)
        assert r.status_code == 409 and r.json()["error"] == "watch_limit_reached", r.text
        assert "100" in r.json()["message"]
        assert (await client.delete(f"{PATH}/{ids[0]}", headers=token)).status_code == 200
        assert (await client.post(PATH, json=new_watch(key="ITEM-100"), headers=token)).status_code == 201
        assert len((await client.get(PATH, headers=token)).json()["data"]["watches"]) == 100
        # the limit is per agent
        await Agent(client).create()


# -- who may ----------------------------------------------------------------------------------
async def test_an_operator_token_may_list_but_never_change_watches(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create()
        token = await operator_token(client, agent.address)
        listed = await client.get(PATH, headers=token)
        assert listed.status_code == 200 and [w["id"] for w in listed.json()["data"]["watches"]] == [watch["id"]]
        for method, path, body in (
            ("POST", PATH, new_watch()),
            ("PATCH", f"{PATH}/{watch['id']}", {"paused": True}),
            ("DELETE", f"{PATH}/{watch['id']}", None),
        ):
            r = await client.request(method, path, json=body, headers=token)
            assert r.status_code == 403, (method, r.text)
            assert r.json()["error"] == "token_cannot_change_watches" and "sign in" in r.json()["message"].lower()
        stored = await row(watch["id"])
        assert (stored["status"], stored["deleted_ms"]) == ("running", None)
        assert len(await agent.watches()) == 1
        origins = {r["origin"] for r in await sql.fetch("SELECT origin FROM tw_access_tokens")}
        assert origins == {"operator"}


async def test_a_signed_in_token_changes_watches(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        token = await sign_in(client, agent)
        (stored,) = await sql.fetch("SELECT origin, agent_id FROM tw_access_tokens")
        assert stored["origin"] == "sign_in"
        r = await client.post(PATH, json=new_watch(), headers=token)
        assert r.status_code == 201, r.text
        watch_id = r.json()["data"]["id"]
        assert stored["agent_id"] == (await row(watch_id))["agent_id"]
        r = await client.patch(f"{PATH}/{watch_id}", json={"paused": True}, headers=token)
        assert r.status_code == 200 and r.json()["data"]["pause_reason"] == "agent"
        assert [w["id"] for w in await agent.watches()] == [watch_id]  # the wallet's own watch
        assert (await client.delete(f"{PATH}/{watch_id}", headers=token)).status_code == 200


async def test_sign_in_needs_a_write_proof(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        token = await operator_token(
            client,
            (
                await client.post(
                    "/v1/tools/internal/agents/register", json={"wallet_address": agent.address}, headers=OPERATOR
                )
            ).json()["agent_id"],
        )
        r = await client.post("/v1/auth/sign-in", headers=token)
        assert r.status_code == 403 and r.json()["error"] == "sign_in_needs_proof"
        r = await client.post("/v1/auth/sign-in", headers={"X-Agent-ID": agent.address})
        assert r.status_code == 401 and r.json()["details"]["reason"] == "missing"
        r = await client.post(
            "/v1/auth/sign-in", content=b"", headers=agent.headers("POST", "/v1/auth/sign-in", b"", scope="read")
        )
        assert r.status_code == 401 and r.json()["details"]["reason"] == "scope_mismatch"
        assert (await client.post("/v1/auth/sign-in")).status_code == 401
        assert {r["origin"] for r in await sql.fetch("SELECT origin FROM tw_access_tokens")} == {"operator"}


async def test_writes_without_a_valid_write_proof_are_refused_401(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create()
        raw = json.dumps(new_watch()).encode()
        cases = {
            "nothing": await client.post(PATH, content=raw),
            "bare id": await client.post(PATH, content=raw, headers={"X-Agent-ID": agent.address}),
            "read proof": await agent.send("POST", PATH, new_watch(), scope="read"),
            "other body": await client.post(
                PATH, content=raw.replace(b"ITEM-7", b"ITEM-9"), headers=agent.headers("POST", PATH, raw)
            ),
            "other path": await client.patch(
                f"{PATH}/{watch['id']}",
                content=b'{"paused":true}',
                headers=agent.headers("PATCH", PATH, b'{"paused":true}'),
            ),
            "bare delete": await client.delete(f"{PATH}/{watch['id']}", headers={"X-Agent-ID": agent.address}),
        }
        for name, r in cases.items():
            assert r.status_code == 401, (name, r.text)
        assert cases["nothing"].json()["error"] == "unauthorized"
        assert cases["bare id"].json()["details"]["reason"] == "missing"
        assert cases["read proof"].json()["details"]["reason"] == "scope_mismatch"
        assert cases["other body"].json()["details"]["reason"] == "body_mismatch"
        assert cases["other path"].json()["details"]["reason"] == "path_mismatch"
        # a write proof is single use
        headers = agent.headers("POST", PATH, raw)
        assert (await client.post(PATH, content=raw, headers=headers)).status_code == 201
        again = await client.post(PATH, content=raw, headers=headers)
        assert again.status_code == 401 and again.json()["details"]["reason"] == "nonce_reused"
        assert len(await agent.watches()) == 2
        assert (await row(watch["id"]))["status"] == "running"


async def test_another_agents_watch_is_not_found(kernel):
    async with http_client(kernel) as client:
        owner, other = Agent(client), Agent(client)
        watch = await owner.create()
        for r in (
            await other.patch(watch["id"], {"paused": True}),
            await other.send("DELETE", f"{PATH}/{watch['id']}"),
            await other.patch("not-a-watch", {"paused": True}),
        ):
            assert r.status_code == 404 and r.json()["error"] == "not_found", r.text
        assert (await row(watch["id"]))["status"] == "running" and (await row(watch["id"]))["deleted_ms"] is None


@pytest.mark.parametrize("mode", ["log", "enforce"])
async def test_the_list_shows_webhook_urls_so_it_needs_a_proof_in_every_mode(kernel_factory, mode):
    kernel = await kernel_factory(plugins=[("feed", FeedPlugin())], env={"TOLLWAY_PROOF_ENFORCEMENT": mode})
    hook = "https://hooks.example.com/private-path-7f3a"
    async with http_client(kernel) as client:
        agent = Agent(client)
        await agent.create(webhook_url=hook)
        assert [w["webhook_url"] for w in await agent.watches()] == [hook]
        bare = await client.get(PATH, headers={"X-Agent-ID": agent.address})
        assert (
            bare.status_code == 401
            and bare.json()["error"] == "invalid_agent_proof"
            and bare.json()["details"]["reason"] == "missing"
        )
        failed = await client.get(PATH, headers=agent.headers("GET", "/v1/tools/other", b"", scope="read"))
        assert failed.status_code == 401 and failed.json()["details"]["reason"] == "path_mismatch"
        assert all("hooks.example.com" not in r.text for r in (bare, failed))
        assert (await client.get(PATH)).status_code == 401


# -- changes ---------------------------------------------------------------------------------
async def test_the_owner_pauses_and_resumes(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create()
        paused = (await agent.patch(watch["id"], {"paused": True})).json()["data"]
        assert (paused["status"], paused["pause_reason"]) == ("paused", "agent")
        assert paused["updated_at"] >= watch["updated_at"] and "webhook_secret" not in paused
        again = (await agent.patch(watch["id"], {"paused": True})).json()["data"]
        assert (again["status"], again["pause_reason"]) == ("paused", "agent")
        resumed = (await agent.patch(watch["id"], {"paused": False})).json()["data"]
        assert (resumed["status"], resumed["pause_reason"]) == ("running", None)
        still = (await agent.patch(watch["id"], {"paused": False})).json()["data"]
        assert (still["status"], still["pause_reason"]) == ("running", None)
        assert [(w["status"], w["pause_reason"]) for w in await agent.watches()] == [("running", None)]


async def test_a_cap_pause_ends_when_the_new_cap_leaves_room_for_the_next_change(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create(max_spend=0.1)
        # the delivery engine paused it at its cap (set here in SQL, as the engine would): 0.10 spent of 0.10
        await sql.fetch(
            "UPDATE tw_watches SET status = 'paused', pause_reason = 'cap', pause_notified = {}, spent = 100000, changes_delivered = 5 WHERE id = {}",
            True,
            watch["id"],
        )
        r = await agent.patch(watch["id"], {"paused": False})
        assert (r.json()["data"]["status"], r.json()["data"]["pause_reason"]) == (
            "paused",
            "cap",
        )  # paused=false does not lift a cap
        r = await agent.patch(watch["id"], {"max_spend": 0.11})  # 0.10 + 0.02 > 0.11: still no room
        assert (r.json()["data"]["status"], r.json()["data"]["pause_reason"], r.json()["data"]["max_spend"]) == (
            "paused",
            "cap",
            0.11,
        )
        r = await agent.patch(watch["id"], {"max_spend": 0.12})
        data = r.json()["data"]
        assert (data["status"], data["pause_reason"], data["max_spend"], data["spent"]) == ("running", None, 0.12, 0.1)
        stored = await row(watch["id"])
        assert stored["pause_notified"] in (True, 1)  # never touched here: the engine owns it
        assert stored["changes_delivered"] == 5


async def test_paused_true_wins_and_a_credits_pause_stays(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create(max_spend=0.1)
        await sql.fetch("UPDATE tw_watches SET status = 'paused', pause_reason = 'credits' WHERE id = {}", watch["id"])
        for body in ({"paused": False}, {"max_spend": 50}):
            data = (await agent.patch(watch["id"], body)).json()["data"]
            assert (data["status"], data["pause_reason"]) == ("paused", "credits"), body
        await sql.fetch(
            "UPDATE tw_watches SET status = 'paused', pause_reason = 'cap', spent = 100000 WHERE id = {}", watch["id"]
        )
        data = (await agent.patch(watch["id"], {"max_spend": 90, "paused": True})).json()["data"]
        assert (data["status"], data["pause_reason"], data["max_spend"]) == ("paused", "agent", 90)
        data = (await agent.patch(watch["id"], {"paused": False})).json()["data"]
        assert (data["status"], data["pause_reason"]) == ("running", None)


async def test_a_new_webhook_url_gets_a_new_secret_once_and_null_stops_sending(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create(webhook_url="https://one.example.com/hook")
        first = watch["webhook_secret"]
        data = (await agent.patch(watch["id"], {"webhook_url": "https://two.example.com/hook"})).json()["data"]
        assert data["webhook_url"] == "https://two.example.com/hook"
        assert data["webhook_secret"].startswith("whsec_") and data["webhook_secret"] != first
        assert (await row(watch["id"]))["webhook_secret"] == data["webhook_secret"]
        # a change that leaves the URL alone shows no secret and keeps it
        kept = (await agent.patch(watch["id"], {"max_spend": 2})).json()["data"]
        assert "webhook_secret" not in kept and (await row(watch["id"]))["webhook_secret"] == data["webhook_secret"]
        assert all("webhook_secret" not in w for w in await agent.watches())
        cleared = (await agent.patch(watch["id"], {"webhook_url": None})).json()["data"]
        assert cleared["webhook_url"] is None and "webhook_secret" not in cleared
        stored = await row(watch["id"])
        assert stored["webhook_url"] is None and stored["webhook_secret"] is None
        # a watch without a URL gets one (and its secret) by a change
        set_again = (await agent.patch(watch["id"], {"webhook_url": "https://three.example.com/"})).json()["data"]
        assert set_again["webhook_secret"].startswith("whsec_")


async def test_change_bodies_are_checked(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create()
        for body, fields in (
            ({}, ["$"]),
            ({"paused": "yes"}, ["paused"]),
            ({"max_spend": 101, "webhook_url": "http://x.example"}, ["max_spend", "webhook_url"]),
            ({"status": "running"}, ["status"]),
            ({"max_spend": 0.01}, ["max_spend"]),
        ):
            r = await agent.patch(watch["id"], body)
            assert r.status_code == 400 and r.json()["error"] == "invalid_request", (body, r.text)
            assert [d["field"] for d in r.json()["details"]] == fields, body
        stored = await row(watch["id"])
        assert (stored["max_spend"], stored["status"]) == (1_000_000, "running")


# -- delete ------------------------------------------------------------------------------------
async def test_delete_drops_the_pending_deliveries_and_nothing_else(kernel):
    async with http_client(kernel) as client:
        agent = Agent(client)
        watch, other = await agent.create(), await agent.create(key="ITEM-8")
        # changes the detection engine queued (written here in SQL as it would): two pending, one delivered
        for i, (wid, state) in enumerate(
            ((watch["id"], "pending"), (watch["id"], "pending"), (watch["id"], "delivered"), (other["id"], "pending"))
        ):
            await sql.fetch(
                "INSERT INTO tw_watch_deliveries (id, watch_id, change_ref, seq, change, state, detected_ms) VALUES ({}, {}, {}, {}, {}, {}, {})",
                f"wdl_{i}",
                wid,
                f"fact:{i}",
                i,
                "{}",
                state,
                1,
            )
        r = await agent.send("DELETE", f"{PATH}/{watch['id']}")
        assert r.status_code == 200 and r.json() == {"success": True, "data": {"id": watch["id"], "deleted": True}}
        states = {r["id"]: r["state"] for r in await sql.fetch("SELECT id, state FROM tw_watch_deliveries")}
        assert states == {"wdl_0": "dropped", "wdl_1": "dropped", "wdl_2": "delivered", "wdl_3": "pending"}
        assert (await row(watch["id"]))["deleted_ms"] is not None
        assert [w["id"] for w in await agent.watches()] == [other["id"]]
        for r in (
            await agent.send("DELETE", f"{PATH}/{watch['id']}"),
            await agent.patch(watch["id"], {"paused": True}),
        ):
            assert r.status_code == 404 and r.json()["error"] == "not_found"


# -- the delivery wake-up --------------------------------------------------------------------
async def test_a_watch_that_runs_again_wakes_the_delivery_engine(kernel):
    seen: list[str] = []
    arrived = asyncio.Event()

    def on_event(payload: str) -> None:
        seen.append(payload)
        arrived.set()

    kernel.events.subscribe(WATCH_DELIVERIES, on_event)
    for _ in range(100):  # the bus listens (PostgreSQL: LISTEN) once a probe comes back
        await kernel.events.publish(WATCH_DELIVERIES, "probe")
        try:
            await asyncio.wait_for(arrived.wait(), 0.1)
            break
        except TimeoutError:
            continue
    assert "probe" in seen

    async def events_after(action: Any) -> list[str]:
        seen.clear()
        arrived.clear()
        await action
        await kernel.events.publish(WATCH_DELIVERIES, "marker")  # everything before it has arrived once it does
        while "marker" not in seen:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 5)
        return [p for p in seen if p not in ("marker", "probe")]

    async with http_client(kernel) as client:
        agent = Agent(client)
        watch = await agent.create()
        assert await events_after(agent.patch(watch["id"], {"paused": True})) == []
        assert await events_after(agent.patch(watch["id"], {"paused": False})) == [watch["id"]]
        assert await events_after(agent.patch(watch["id"], {"paused": False})) == []  # already running
        await sql.fetch(
            "UPDATE tw_watches SET status = 'paused', pause_reason = 'cap', spent = 1000000 WHERE id = {}", watch["id"]
        )
        assert await events_after(agent.patch(watch["id"], {"max_spend": 1.01})) == []
        assert await events_after(agent.patch(watch["id"], {"max_spend": 1.02})) == [watch["id"]]
