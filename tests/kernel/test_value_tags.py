"""Value tags on receipts and return on spend (both databases): a tag re-signs the newest
receipt of the caller's job once per change, the refusals name every failing field, and
return on spend counts only confirmed value on charged receipts; both are MCP tools too."""

from __future__ import annotations

import asyncio
import json

import pytest
from eth_account import Account
from mcp import Client

from tests.support.echo_plugin import EchoPlugin
from tollway._core.receipts.receipt_signing import b64url_decode, verify_receipt
from tollway._core.receipts.receipts import ReceiptDraft
from tollway._core.receipts.tables import Receipt
from tollway.testing import credits_session, http_client, mcp_server_for

TAG = "/v1/analytics/value-tags"
ROS = "/v1/analytics/return-on-spend"


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(plugins=[("echo", EchoPlugin())])


async def _paid(client, auth, path: str = "/v1/tools/test/echo", text: str = "hello") -> dict:
    resp = await client.post(path, json={"text": text}, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def _keys(client) -> dict[str, bytes]:
    keys = (await client.get("/v1/receipts/keys")).json()["keys"]
    return {k["key_id"]: b64url_decode(k["public_key"]) for k in keys}


async def _later_receipt_of(kernel, agent_id: str, job_id: str, after: str) -> str:
    """A second receipt of the same job (as a job's later step would leave), created after `after`."""
    later = await kernel.receipts.issue(
        ReceiptDraft(
            agent_id=agent_id,
            category="data",
            subcategory=None,
            amount=0,
            status="not_charged",
            execution_status="completed",
            settlement_tx=None,
            payment_method="credits",
            tool="echo_words",
            request_id=job_id,
        )
    )
    first = await Receipt.select(Receipt.created_ms).where(Receipt.receipt_id == after).first()
    await Receipt.update({Receipt.created_ms: first["created_ms"] + 1000}).where(
        Receipt.receipt_id == later["receipt_id"]
    )
    return later["receipt_id"]


def _fields(resp) -> set[str]:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["error"] == "invalid_request"
    return {d["field"] for d in body["details"]}


# -- tagging -----------------------------------------------------------------------------------
async def test_a_tag_resigns_the_newest_receipt_of_the_job_once_per_change(kernel):
    async with http_client(kernel) as client:
        agent_id, auth = await credits_session(client)
        paid = await _paid(client, auth)
        job = paid["request_id"]
        newest = await _later_receipt_of(kernel, agent_id, job, after=paid["receipt_id"])
        by_request = await client.post(
            TAG,
            json={"request_id": job, "status": "proposed", "value_usdc": "2.5", "note": "saved a lookup"},
            headers=auth,
        )
        again = await client.post(
            TAG,
            json={"request_id": job, "status": "proposed", "value_usdc": "2.500000", "note": "saved a lookup"},
            headers=auth,
        )
        by_job = await client.post(TAG, json={"job_id": job, "status": "confirmed", "value_usdc": "3"}, headers=auth)
        served = (await client.get(f"/v1/receipts/{newest}", headers=auth)).json()
        keys = await _keys(client)
    assert by_request.status_code == 200, by_request.text
    first = by_request.json()
    assert first["receipt_id"] == newest and first["job_id"] == job and first["revision"] == 2
    tag = first["value_tag"]
    assert {k: tag[k] for k in ("status", "value_usdc", "note")} == {
        "status": "proposed",
        "value_usdc": "2.500000",
        "note": "saved a lookup",
    }
    assert tag["tagged_at"].endswith("Z") and tag["tagged_at"][:4].isdigit()
    assert verify_receipt(first, keys) == (True, "valid")
    assert again.status_code == 200 and again.json() == first  # the same tag: no new revision
    second = by_job.json()
    assert by_job.status_code == 200 and second["receipt_id"] == newest and second["revision"] == 3
    assert (
        second["value_tag"]["status"] == "confirmed"
        and second["value_tag"]["value_usdc"] == "3.000000"
        and second["value_tag"]["note"] is None
    )
    assert verify_receipt(second, keys) == (True, "valid")
    assert served == second
    assert [r["revision"] for r in await kernel.receipts.revisions(newest)] == [1, 2, 3]
    older = await kernel.receipts.get(paid["receipt_id"])
    assert older["revision"] == 1 and older["value_tag"] is None


async def test_concurrent_identical_tags_make_one_revision(kernel):
    async with http_client(kernel) as client:
        _agent_id, auth = await credits_session(client)
        paid = await _paid(client, auth)
        body = {"request_id": paid["request_id"], "status": "confirmed", "value_usdc": "1.5"}
        answers = await asyncio.gather(*[client.post(TAG, json=body, headers=auth) for _ in range(5)])
    assert [a.status_code for a in answers] == [200] * 5
    assert len({json.dumps(a.json(), sort_keys=True) for a in answers}) == 1
    assert [r["revision"] for r in await kernel.receipts.revisions(paid["receipt_id"])] == [1, 2]


async def test_a_tagged_receipt_verifies_with_the_cli(kernel, tmp_path):
    from tollway._runtime.cli import main as cli

    async with http_client(kernel) as client:
        _agent_id, auth = await credits_session(client)
        paid = await _paid(client, auth)
        tagged = (
            await client.post(
                TAG, json={"job_id": paid["request_id"], "status": "confirmed", "value_usdc": "0.25"}, headers=auth
            )
        ).json()
        keys = (await client.get("/v1/receipts/keys")).json()
    (tmp_path / "receipt.json").write_text(json.dumps(tagged))
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    assert cli(["receipts", "verify", str(tmp_path / "receipt.json"), "--keys", str(tmp_path / "keys.json")]) == 0
    (tmp_path / "receipt.json").write_text(
        json.dumps({**tagged, "value_tag": {**tagged["value_tag"], "value_usdc": "250.000000"}})
    )
    assert cli(["receipts", "verify", str(tmp_path / "receipt.json"), "--keys", str(tmp_path / "keys.json")]) == 1


async def test_only_the_callers_own_jobs_are_found(kernel):
    async with http_client(kernel) as client:
        _owner, auth = await credits_session(client)
        _other, other_auth = await credits_session(client)
        paid = await _paid(client, auth)
        body = {"request_id": paid["request_id"], "status": "confirmed", "value_usdc": "1"}
        stranger = await client.post(TAG, json=body, headers=other_auth)
        unknown = await client.post(TAG, json={**body, "request_id": "req_nothing_here"}, headers=auth)
        bare = await client.post(TAG, json=body, headers={"X-Agent-ID": Account.create().address})
        anonymous = await client.get(ROS)
    assert stranger.status_code == 404 and stranger.json()["error"] == "not_found"
    assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
    assert bare.status_code == 401  # tagging changes a receipt: it needs a write proof or an access token
    assert anonymous.status_code == 401
    assert (await kernel.receipts.get(paid["receipt_id"]))["revision"] == 1


async def test_refusals_name_every_failing_field(kernel):
    async with http_client(kernel) as client:
        _agent_id, auth = await credits_session(client)
        paid = await _paid(client, auth)
        job = paid["request_id"]
        both = await client.post(
            TAG, json={"request_id": job, "job_id": job, "status": "confirmed", "value_usdc": "1"}, headers=auth
        )
        neither = await client.post(TAG, json={"status": "confirmed", "value_usdc": "1"}, headers=auth)
        both_and_bad = await client.post(
            TAG, json={"request_id": job, "job_id": job, "status": "great", "value_usdc": "1"}, headers=auth
        )
        bad = await client.post(
            TAG,
            json={"request_id": job, "status": "great", "value_usdc": "1000000.5", "note": "n" * 1001},
            headers=auth,
        )
        missing = await client.post(TAG, json={"job_id": job}, headers=auth)
        shapes = {
            value: await client.post(
                TAG, json={"job_id": job, "status": "confirmed", "value_usdc": value}, headers=auth
            )
            for value in ("1.1234567", "-1", 5, "1e3", "", "1,5", " 1")
        }
        unknown = await client.post(
            TAG, json={"job_id": job, "status": "confirmed", "value_usdc": "1", "colour": "red"}, headers=auth
        )
        empty_id = await client.post(TAG, json={"job_id": "", "status": "confirmed", "value_usdc": "1"}, headers=auth)
        top = await client.post(
            TAG,
            json={"job_id": job, "status": "rejected", "value_usdc": "1000000.000000", "note": "n" * 1000},
            headers=auth,
        )
        zero = await client.post(TAG, json={"job_id": job, "status": "rejected", "value_usdc": "0"}, headers=auth)
    assert _fields(both) == {"request_id", "job_id"} and "exactly one of request_id and job_id" in both.text
    assert _fields(neither) == {"request_id", "job_id"}
    assert _fields(both_and_bad) == {"request_id", "job_id", "status"}  # every failing field in one answer
    assert _fields(bad) == {"status", "value_usdc", "note"}
    assert _fields(missing) == {"status", "value_usdc"}
    for value, resp in shapes.items():
        assert _fields(resp) == {"value_usdc"}, value
    assert _fields(unknown) == {"colour"}
    assert _fields(empty_id) == {"job_id"}
    assert top.status_code == 200 and top.json()["value_tag"]["value_usdc"] == "1000000.000000"
    assert (
        zero.status_code == 200
        and zero.json()["value_tag"]["value_usdc"] == "0.000000"
        and zero.json()["revision"] == 3
    )
    assert (await kernel.receipts.get(paid["receipt_id"]))["revision"] == 3  # only the two valid tags re-signed it


# -- return on spend -----------------------------------------------------------------------------
async def test_return_on_spend_counts_confirmed_value_on_charged_receipts(kernel):
    async with http_client(kernel) as client:
        _agent_id, auth = await credits_session(client)
        echoes = [await _paid(client, auth, text=f"e{i}") for i in range(3)]  # 0.001 each, data
        checks = [
            await _paid(client, auth, "/v1/tools/test/flaky", f"f{i}") for i in range(2)
        ]  # 0.010 each, verification
        boom = await client.post("/v1/tools/test/flaky", json={"text": "boom"}, headers=auth)  # refunded: not spend
        assert boom.status_code == 503
        refunded = boom.json()["request_id"]

        async def ros(**params):
            resp = await client.get(ROS, params=params, headers=auth)
            assert resp.status_code == 200, resp.text
            return resp.json()

        async def tag(job, status, value):
            resp = await client.post(TAG, json={"request_id": job, "status": status, "value_usdc": value}, headers=auth)
            assert resp.status_code == 200, resp.text

        untagged = await ros()
        await tag(echoes[0]["request_id"], "proposed", "0.5")
        proposed = await ros()
        await tag(checks[0]["request_id"], "confirmed", "0.046")
        await tag(echoes[1]["request_id"], "rejected", "9")
        await tag(refunded, "confirmed", "100")  # a refunded receipt is not spend: its value counts nowhere
        confirmed = await ros()
        verification = await ros(category="verification", period="7")
        data = await ros(category="data")
        assert await kernel.platform.return_unspent(checks[1]["receipt_id"], 5_000, reason="unused") is not None
        after_return = await ros()
        await tag(checks[0]["request_id"], "rejected", "0.046")
        withdrawn = await ros()
        bad_category = await client.get(ROS, params={"category": "snacks"}, headers=auth)
        bad_periods = [await client.get(ROS, params={"period": p}, headers=auth) for p in ("0", "366", "soon", "1.5")]
        _fresh, fresh_auth = await credits_session(client)
        nothing = (await client.get(ROS, headers=fresh_auth)).json()

    assert untagged == {
        "period_days": 30,
        "category": None,
        "spend_usdc": "0.023000",
        "value_usdc": "0.000000",
        "proposed_value_usdc": "0.000000",
        "return_on_spend": 0.0,
        "receipts_charged": 5,
        "receipts_confirmed": 0,
    }
    assert (
        proposed["value_usdc"] == "0.000000"
        and proposed["proposed_value_usdc"] == "0.500000"
        and proposed["return_on_spend"] == 0.0
    )
    assert confirmed == {
        **untagged,
        "value_usdc": "0.046000",
        "proposed_value_usdc": "0.500000",
        "return_on_spend": 2.0,
        "receipts_confirmed": 1,
    }
    assert verification == {
        "period_days": 7,
        "category": "verification",
        "spend_usdc": "0.020000",
        "value_usdc": "0.046000",
        "proposed_value_usdc": "0.000000",
        "return_on_spend": 2.3,
        "receipts_charged": 2,
        "receipts_confirmed": 1,
    }
    assert data == {
        "period_days": 30,
        "category": "data",
        "spend_usdc": "0.003000",
        "value_usdc": "0.000000",
        "proposed_value_usdc": "0.500000",
        "return_on_spend": 0.0,
        "receipts_charged": 3,
        "receipts_confirmed": 0,
    }
    # 0.005 of the second check's 0.010 was given back: spend 0.018, and 0.046 / 0.018 = 2.5555... -> 2.5556
    assert (
        after_return["spend_usdc"] == "0.018000"
        and after_return["return_on_spend"] == 2.5556
        and after_return["receipts_charged"] == 5
    )
    assert (
        withdrawn["value_usdc"] == "0.000000"
        and withdrawn["receipts_confirmed"] == 0
        and withdrawn["return_on_spend"] == 0.0
    )
    assert _fields(bad_category) == {"category"}
    for resp in bad_periods:
        assert _fields(resp) == {"period"}
    assert (
        nothing["spend_usdc"] == "0.000000" and nothing["return_on_spend"] is None and nothing["receipts_charged"] == 0
    )


# -- MCP -------------------------------------------------------------------------------------------
async def test_both_operations_are_mcp_tools(kernel):
    async with http_client(kernel) as client:
        _agent_id, auth = await credits_session(client)
        paid = await _paid(client, auth, "/v1/tools/test/flaky", "fine")
    token = auth["Authorization"].split()[1]
    async with Client(mcp_server_for(kernel, token=token)) as mcp:
        listed = {t.name: t for t in (await mcp.list_tools()).tools}
        tagged = await mcp.call_tool(
            "value_tag",
            {"request_id": paid["request_id"], "status": "confirmed", "value_usdc": "0.02", "note": "worth it"},
        )
        both = await mcp.call_tool(
            "value_tag", {"request_id": "a", "job_id": "a", "status": "confirmed", "value_usdc": "1"}
        )
        ros = await mcp.call_tool("return_on_spend", {"period": "30"})
        bad = await mcp.call_tool("return_on_spend", {"category": "snacks"})
    assert {"value_tag", "return_on_spend"} <= set(listed)
    assert listed["return_on_spend"].annotations.read_only_hint is True
    assert set(listed["value_tag"].input_schema["properties"]) == {
        "request_id",
        "job_id",
        "status",
        "value_usdc",
        "note",
    }
    assert not tagged.is_error, tagged.content
    assert tagged.structured_content["receipt_id"] == paid["receipt_id"] and tagged.structured_content["revision"] == 2
    assert tagged.structured_content["value_tag"]["note"] == "worth it"
    assert both.is_error and {d["field"] for d in both.structured_content["details"]} == {"request_id", "job_id"}
    assert (
        not ros.is_error
        and ros.structured_content["value_usdc"] == "0.020000"
        and ros.structured_content["return_on_spend"] == 2.0
    )
    assert bad.is_error and bad.structured_content["details"][0]["field"] == "category"
