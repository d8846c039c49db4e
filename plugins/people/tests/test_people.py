"""People research end to end, on SQLite and PostgreSQL, against local stand-ins (real HTTP
on 127.0.0.1): People Data Labs' enrichment API, a SearXNG instance, a few web pages (one
full of sensitive facts) and, where configured, a scripted Chat Completions model. Over HTTP
and MCP: cited fields, nothing sensitive answered (extractive and written by the model), an
opted-out person refused before any quote or charge, an ambiguous name answering
candidates, nothing found refunded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from people_standins import PDL_KEY, TELLTALES, people_web

from tollway.testing import (
    OPERATOR,
    PluginContract,
    count_quotes,
    count_receipts,
    credits_session,
    http_client,
    ledger_problems,
    mcp_server_for,
    scripted_model,
    stored_facts,
    wait_for_job,
    worker_for,
)

PLUGINS = {"tollway_people", "tollway_web", "tollway_enrich"}
DANA = {
    "name": "Dana Reyes",
    "company": "Example Corp",
    "purpose": "preparing a first sales call with their finance team",
}
PATH = "/v1/tools/research/people"


@pytest.fixture
def web():
    with people_web() as stand_ins:
        yield stand_ins


async def research(kernel, body: dict, *, credits: str = "1") -> tuple[dict, dict, str, dict]:
    """Pay from credits, run on a worker, wait for the end: (accepted, finished job, credits left, receipt)."""
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, credits)
        accepted = await client.post(PATH, json=body, headers=auth)
        assert accepted.status_code == 202, accepted.text
        worker = worker_for(kernel)
        worker.start()
        try:
            job = await wait_for_job(client, accepted.json()["request_id"], auth, every_s=0.1)
        finally:
            await worker.stop()
        left = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        receipt = (await client.get(f"/v1/receipts/{accepted.json()['receipt_id']}", headers=auth)).json()
    return accepted.json(), job, left, receipt


def assert_cited(profile: dict, base: str) -> None:
    """Every value of the profile lists its sources (the stand-ins' pages or the record's
    public profile) and a confidence from 0 to 1."""
    values = [*profile["names"], *profile["links"]] + [
        profile[f] for f in ("role", "employer", "location", "summary") if profile[f]
    ]
    assert values
    for value in values:
        assert value["sources"], value
        assert all(s.startswith((base, "https://linkedin.com/")) for s in value["sources"]), value
        assert 0 < value["confidence"] <= 1


def assert_nothing_sensitive(answer: dict) -> None:
    text = json.dumps(answer).lower()
    assert not [word for word in TELLTALES if word in text], text


async def test_an_extractive_profile_over_http_cites_its_sources_and_withholds_the_sensitive(kernel_factory, web):
    kernel = await kernel_factory(installed=PLUGINS, env=web.env())
    accepted, job, left, receipt = await research(kernel, DANA)
    assert job["status"] == "completed", job
    result = job["result"]
    profile = result["profile"]
    assert (result["ambiguous"], result["synthesis"], result["meta"]["extractive"]) == (False, "extractive", True)
    assert result["note"].startswith("Extractive") and "no language model" in result["note"]
    assert profile["role"]["value"].lower() == "head of finance"
    assert profile["employer"]["value"].lower() == "example corp"
    assert set(profile["employer"]["sources"]) >= {
        web.page_url("/team/dana-reyes"),
        web.page_url("/events/finance-summit"),
    }
    assert profile["location"]["value"].startswith("Austin")
    assert profile["names"][0]["value"] == "Dana Reyes"
    assert {link["value"] for link in profile["links"]} >= {
        web.page_url("/team/dana-reyes"),
        "https://linkedin.com/in/dana-reyes-example",
    }
    assert profile["summary"] and "head of finance" in profile["summary"]["value"]
    assert_cited(profile, web.base)
    assert result["match_score"] == 1.0 and result["matched"] == ["company"]
    assert {s["kind"] for s in result["sources"]} == {"page", "enrichment"}
    assert web.page_url("/blog/unrelated") not in {s["url"] for s in result["sources"]}  # read, names nobody
    assert "/news/dana-reyes-arrested" in web.read  # read, but its address says what is never answered
    assert web.page_url("/news/dana-reyes-arrested") not in json.dumps(result)
    assert result["meta"]["withheld"] >= 7  # each sensitive sentence left out
    assert_nothing_sensitive(result)
    assert "personal_emails" not in json.dumps(result) and "+1512" not in json.dumps(result)
    # the purpose is on the caller's receipt, never in the result; the price is quick's
    assert receipt["decisionContext"] == {"purpose": DANA["purpose"]}
    assert DANA["purpose"] not in json.dumps(job)
    assert left == "0.900000" and receipt["amount_usdc"] == "0.100000"
    assert await stored_facts("people_research") == []  # nothing recorded as a fact
    assert web.enrichments and web.enrichments[0]["name"] == "Dana Reyes"
    assert await ledger_problems() == []


async def test_a_profile_written_by_the_model_is_checked_and_filtered(kernel_factory, web):
    def answer(request: dict) -> dict:
        assert "therapy" not in json.dumps(request).lower()  # sensitive sentences never reach the model
        written = {
            "role": {"value": "Head of Finance", "sources": [1, 3]},
            "employer": {"value": "Example Corporation", "sources": [99]},  # cites nothing it was given: dropped
            "location": {"value": "1234 Elm Street, Austin, TX 78701", "sources": [1]},  # a home address: dropped
            "summary": {
                "value": "Dana Reyes leads finance at Example Corp. She is a devout Catholic and a registered "
                "Democrat. She speaks at finance conferences.",
                "sources": [1, 2],
            },
        }
        return {"role": "assistant", "content": "```json\n" + json.dumps(written) + "\n```"}

    with scripted_model(answer) as model:
        env = web.env(TOLLWAY_LLM_BASE_URL=model.base_url, TOLLWAY_LLM_MODEL="people-test")
        kernel = await kernel_factory(installed=PLUGINS, env=env)
        _, job, left, _ = await research(kernel, {**DANA, "depth": "deep", "location": "Austin, Texas"})
    assert job["status"] == "completed", job
    result = job["result"]
    profile = result["profile"]
    assert (result["synthesis"], result["meta"]["extractive"]) == ("llm", False)
    assert result["meta"]["providers"]["llm"] is not None
    assert profile["role"]["value"] == "Head of Finance"
    assert profile["employer"]["value"].lower() == "example corp"  # the page's, not the uncited one
    assert profile["location"]["value"].startswith("Austin") and "Elm" not in profile["location"]["value"]
    assert profile["summary"]["value"] == (
        "Dana Reyes leads finance at Example Corp. She speaks at finance conferences."
    )
    assert_cited(profile, web.base)
    assert_nothing_sensitive(result)
    assert len(result["meta"]["queries"]) > 1 and left == "0.750000"  # deep: several searches, 0.25


async def test_people_research_over_mcp(kernel_factory, web):
    def answer(request: dict) -> dict:
        written = {
            "role": {"value": "Head of Finance", "sources": [1]},
            "summary": {"value": "Dana Reyes runs finance at Example Corp. She is Hispanic.", "sources": [1]},
        }
        return {"role": "assistant", "content": json.dumps(written)}

    with scripted_model(answer) as model:
        env = web.env(TOLLWAY_LLM_BASE_URL=model.base_url, TOLLWAY_LLM_MODEL="people-test")
        kernel = await kernel_factory(installed=PLUGINS, env=env)
        async with http_client(kernel) as client:
            _, auth = await credits_session(client, "1")
            listed = await client.post("/v1/tools/internal/opt-outs", json={"domain": "acme.example"}, headers=OPERATOR)
            assert listed.status_code == 201
        token = auth["Authorization"].split()[1]
        worker = worker_for(kernel)
        worker.start()
        try:
            async with Client(mcp_server_for(kernel, token=token)) as mcp:
                names = {t.name for t in (await mcp.list_tools()).tools}
                quotes = await count_quotes(kernel)
                refused = await mcp.call_tool(
                    "people_research",
                    {"name": "Alex Kim", "email": "alex@acme.example", "purpose": "hiring"},
                )
                unquoted = await count_quotes(kernel) == quotes
                called = await mcp.call_tool("people_research", {**DANA, "email": "dana.reyes@example.com"})
                assert not called.is_error, called.content
                async with http_client(kernel) as client:
                    job = await wait_for_job(client, called.structured_content["request_id"], auth, every_s=0.1)
                    left = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        finally:
            await worker.stop()
    assert "people_research" in names
    assert refused.is_error and "opted_out" in json.dumps([c.model_dump() for c in refused.content]) and unquoted
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["matched"] == ["company", "email"] and result["synthesis"] == "llm"
    assert result["profile"]["summary"]["value"] == "Dana Reyes runs finance at Example Corp."
    assert_cited(result["profile"], web.base)
    assert_nothing_sensitive(result)
    assert left == "0.900000"  # the refused call cost nothing


async def test_an_ambiguous_name_answers_candidates(kernel_factory, web):
    kernel = await kernel_factory(installed=PLUGINS, env=web.env())
    _, job, left, _ = await research(
        kernel, {"name": "Alex Kim", "location": "Portland", "purpose": "finding a conference speaker"}
    )
    assert job["status"] == "completed", job
    result = job["result"]
    assert result["ambiguous"] is True and result["profile"] is None and result["match_score"] is None
    employers = {c["profile"]["employer"]["value"] for c in result["candidates"]}
    assert employers == {"Acme Robotics", "Lincoln High School"}
    for candidate in result["candidates"]:
        assert candidate["match_score"] == 1.0 and candidate["matched"] == ["location"]
        assert_cited(candidate["profile"], web.base)
    # a company hint picks one of them
    _, one, _, _ = await research(
        kernel, {"name": "Alex Kim", "company": "Acme Robotics", "purpose": "finding a conference speaker"}
    )
    assert one["result"]["ambiguous"] is False
    assert one["result"]["profile"]["role"]["value"] == "software engineer"
    # and so does a page of theirs, read first
    _, by_page, _, _ = await research(
        kernel, {"name": "Alex Kim", "url": web.page_url("/staff/alex-kim"), "purpose": "finding a speaker"}
    )
    assert by_page["result"]["matched"] == ["url"]
    assert by_page["result"]["profile"]["employer"]["value"] == "Lincoln High School"
    assert left == "0.900000"


async def test_pages_are_read_by_web_reads_address_rules(kernel_factory, web):
    """Without TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES the stand-in pages (on 127.0.0.1) are refused
    as web read refuses them: nothing is read, nothing found, the job refunded."""
    env = {k: v for k, v in web.env().items() if k != "TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES"}
    kernel = await kernel_factory(installed=PLUGINS, env=env)
    _, job, left, _ = await research(kernel, {"name": "Alex Kim", "location": "Portland", "purpose": "hiring"})
    assert (job["status"], job["error_code"]) == ("failed", "enrichment_exhausted"), job
    assert web.searches and web.read == [] and left == "1.000000"


async def test_nothing_found_fails_the_job_refunded(kernel_factory, web):
    kernel = await kernel_factory(installed=PLUGINS, env=web.env())
    _, job, left, receipt = await research(
        kernel, {"name": "Nobody Atall", "company": "Nowhere Inc", "purpose": "checking a supplier contact"}
    )
    assert (job["status"], job["error_code"]) == ("failed", "enrichment_exhausted"), job
    assert left == "1.000000"
    assert await ledger_problems() == []


async def test_an_opted_out_person_is_refused_before_payment(kernel_factory, web):
    kernel = await kernel_factory(installed=PLUGINS, env=web.env())
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        quotes, receipts = await count_quotes(kernel), await count_receipts()
        added = [
            await client.post("/v1/tools/internal/opt-outs", json=entry, headers=OPERATOR)
            for entry in (
                {"email": "Dana.Reyes@example.com", "note": "asked by email on 2026-11-20"},
                {"name": "Alex  Kim", "company": "Acme Robotics, Inc."},
                {"domain": "lincoln-high.example"},
            )
        ]
        again = await client.post(
            "/v1/tools/internal/opt-outs", json={"email": "dana.reyes@example.com"}, headers=OPERATOR
        )
        both = await client.post(
            "/v1/tools/internal/opt-outs", json={"email": "a@b.example", "domain": "b.example"}, headers=OPERATOR
        )
        unauthorised = await client.post("/v1/tools/internal/opt-outs", json={"domain": "x.example"}, headers=auth)
        listed = (await client.get("/v1/tools/internal/opt-outs", headers=OPERATOR)).json()
        refused = [
            await client.post(PATH, json=body, headers=auth)  # credits would pay: each is refused first
            for body in (
                {**DANA, "email": "dana.reyes@example.com"},
                {"name": "alex kim", "company": "Acme Robotics", "purpose": "hiring"},
                {"name": "Sam Lee", "url": "https://www.lincoln-high.example/staff/sam", "purpose": "hiring"},
                {"name": "Sam Lee", "email": "sam@mail.lincoln-high.example", "purpose": "hiring"},
            )
        ]
        unpaid = await client.post(
            PATH, json={**DANA, "email": "dana.reyes@example.com"}
        )  # no credits: no quote either
        after = (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
        still_quotes, still_receipts = await count_quotes(kernel), await count_receipts()
        gone = await client.delete(f"/v1/tools/internal/opt-outs/{added[0].json()['id']}", headers=OPERATOR)
        missing = await client.delete(f"/v1/tools/internal/opt-outs/{added[0].json()['id']}", headers=OPERATOR)
        quoted = await client.post(PATH, json={**DANA, "email": "dana.reyes@example.com"})
    assert [a.status_code for a in added] == [201, 201, 201]
    assert added[1].json()["kind"] == "name_company" and added[2].json()["kind"] == "domain"
    assert again.status_code == 200 and again.json()["id"] == added[0].json()["id"]
    assert both.status_code == 400 and unauthorised.status_code in (401, 403)
    assert listed["count"] == 3
    for answer in (*refused, unpaid):
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"] == "opted_out" and "PAYMENT-REQUIRED" not in answer.headers
    assert after == "1.000000" and (still_quotes, still_receipts) == (quotes, receipts)
    assert web.searches == [] and web.enrichments == []  # nothing was looked up
    assert gone.status_code == 200 and missing.status_code == 404
    assert quoted.status_code == 402  # off the list: quoted as usual


async def test_a_profile_found_on_the_list_fails_refunded(kernel_factory, web):
    """The call names no listed identifier, but the person found works at a listed domain."""
    kernel = await kernel_factory(installed=PLUGINS, env=web.env())
    async with http_client(kernel) as client:
        listed = await client.post("/v1/tools/internal/opt-outs", json={"domain": "example.com"}, headers=OPERATOR)
    assert listed.status_code == 201
    _, job, left, _ = await research(kernel, {"name": "Dana Reyes", "location": "Austin", "purpose": "a sales call"})
    assert (job["status"], job["error_code"]) == ("failed", "enrichment_exhausted"), json.dumps(job)
    assert "opt" not in job["error"].lower()  # the failure does not say who asked not to be researched
    assert left == "1.000000"


async def test_a_name_alone_is_refused_naming_the_hints(kernel_factory, web):
    kernel = await kernel_factory(installed=PLUGINS, env=web.env())
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"name": "Dana Reyes", "purpose": "a sales call"})
        no_purpose = await client.post(PATH, json={"name": "Dana Reyes", "company": "Example Corp"})
    assert resp.status_code == 400 and "PAYMENT-REQUIRED" not in resp.headers
    assert {d["field"] for d in resp.json()["details"]} == {"company", "location", "email", "url"}
    assert no_purpose.status_code == 400 and no_purpose.json()["details"][0]["field"] == "purpose"
    assert await count_quotes(kernel) == 0


class TestPeopleContract(PluginContract):
    plugin = "tollway_people"

    @pytest.fixture
    async def contract_kernel(self, kernel_factory: Any) -> Any:
        return await kernel_factory(installed=PLUGINS, env=self.env)  # with the search and enrichment providers

    env = {
        "TOLLWAY_SEARCH_PROVIDER": "searxng",
        "TOLLWAY_SEARCH_SEARXNG_URL": "http://127.0.0.1:9",
        "TOLLWAY_ENRICHMENT_PDL_API_KEY": PDL_KEY,
    }
