"""browser_task through the whole job machinery, in a real headless Chromium behind the
filtering proxy: paid from credits, accepted 202, run by a worker, polled to its result. The
test site runs on 127.0.0.1 and is let through by the operator's allow-list
(TOLLWAY_BROWSER_ALLOW_HOSTS, its exact host and port); the forbidden listener on another
port of 127.0.0.1 stays refused and counts zero connections."""

from __future__ import annotations

from browser_support import TABLE_ROWS, balance, one_task, run_task

from tollway.testing import credits_session, http_client

LOGIN = [
    {"action": "goto", "url": "/login"},
    {"action": "fill", "label": "Username", "value": "ada"},
    {"action": "fill", "label": "Password", "value": "lovelace"},
    {"action": "click", "role": "button", "name": "Sign in"},
    {"action": "wait_for", "role": "heading", "name": "Signed in as Ada"},
    {"action": "extract", "what": "text", "role": "heading", "save_as": "who"},
]


async def test_a_profile_keeps_the_sign_in_between_tasks_and_a_table_is_extracted_exactly(kernel, site):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        made = await client.post("/v1/browser/profiles", json={"name": "harbour office"}, headers=auth)
        assert made.status_code == 201, made.text
        profile = made.json()
        assert profile["name"] == "harbour office" and profile["last_used_at"] is None
        steps = [{**s, "url": site.base + s["url"]} if "url" in s else s for s in LOGIN]
        one = await run_task(
            kernel,
            client,
            auth,
            {"start_url": f"{site.base}/", "profile_id": profile["id"], "steps": [*steps, {"action": "screenshot"}]},
        )
        two = await run_task(
            kernel,
            client,
            auth,
            {
                "start_url": f"{site.base}/account",
                "profile_id": profile["id"],
                "steps": [{"action": "extract", "what": "table", "selector": "#fares", "save_as": "fares"}],
            },
        )
        left = await balance(client, auth)
        again = (await client.get(f"/v1/browser/profiles/{profile['id']}", headers=auth)).json()
        shot = one["result"]["artifacts"][0]
        by_link = await client.get(shot["url"])
        by_owner = await client.get(f"/v1/artifacts/{shot['id']}", headers=auth)
        stranger = await client.get(f"/v1/artifacts/{shot['id']}", headers={"X-Agent-ID": "0x" + "1" * 40})
        forged = await client.get(shot["url"].replace("sig=", "sig=A"))
    assert one["status"] == "completed", one
    result = one["result"]
    assert result["status"] == "completed" and result["title"] == "Your account"
    assert result["url"] == f"{site.base}/account"
    assert result["extracts"] == [{"step": 6, "what": "text", "save_as": "who", "value": "Signed in as Ada"}]
    actions = ["start", "goto", "fill", "fill", "click", "wait_for", "extract", "screenshot"]
    assert [s["action"] for s in result["steps"]] == actions
    assert all(s["status"] == "ok" and s["ms"] >= 0 for s in result["steps"])
    assert result["blocked"] == [] and result["profile_id"] == profile["id"]
    # The second task opens the account page directly: still signed in, from the profile's cookie.
    assert two["status"] == "completed", two
    assert two["result"]["title"] == "Your account"
    assert two["result"]["extracts"] == [{"step": 1, "what": "table", "save_as": "fares", "rows": TABLE_ROWS}]
    assert again["last_used_at"] is not None
    assert left == "0.840000"  # two tasks at 0.08
    assert shot["kind"] == "screenshot" and shot["media_type"] == "image/png"
    assert by_link.status_code == 200 and by_link.content.startswith(b"\x89PNG")
    assert len(by_link.content) == shot["bytes"]
    assert by_owner.status_code == 200 and by_owner.content == by_link.content
    assert stranger.status_code in (401, 404) and forged.status_code == 404
    assert site.forbidden.hits == []


async def test_a_task_without_the_profile_is_not_signed_in(kernel, site):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        job = await run_task(kernel, client, auth, {"start_url": f"{site.base}/account", "steps": [{"action": "pdf"}]})
    assert job["status"] == "completed", job
    assert job["result"]["title"] == "Sign in" and job["result"]["url"] == f"{site.base}/login"
    (pdf,) = job["result"]["artifacts"]
    assert pdf["kind"] == "pdf" and pdf["media_type"] == "application/pdf" and pdf["bytes"] > 500


async def test_a_blocked_start_page_fails_the_task_and_refunds_it(kernel, site):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        forbidden = f"http://127.0.0.1:{site.forbidden.port}/"
        job = await run_task(kernel, client, auth, {"start_url": forbidden, "steps": [{"action": "screenshot"}]})
        left = await balance(client, auth)
    assert job["status"] == "failed" and job["error_code"] == "target_unreachable", job
    assert left == "1.000000"
    assert site.forbidden.hits == []


async def test_another_agent_gets_404_for_a_profile_and_a_task_naming_it_fails_refunded(kernel, site):
    async with http_client(kernel) as client:
        _, owner = await credits_session(client, "1")
        _, other = await credits_session(client, "1")
        made = (await client.post("/v1/browser/profiles", json={"name": "mine"}, headers=owner)).json()
        assert (await client.get(f"/v1/browser/profiles/{made['id']}", headers=other)).status_code == 404
        assert (await client.delete(f"/v1/browser/profiles/{made['id']}", headers=other)).status_code == 404
        assert (await client.get("/v1/browser/profiles", headers=other)).json() == {"profiles": []}
        listed = (await client.get("/v1/browser/profiles", headers=owner)).json()
        assert [p["id"] for p in listed["profiles"]] == [made["id"]]
        body = {"start_url": f"{site.base}/", "profile_id": made["id"], "steps": [{"action": "pdf"}]}
        job = await run_task(kernel, client, other, body)
        left = await balance(client, other)
        deleted = await client.delete(f"/v1/browser/profiles/{made['id']}", headers=owner)
        gone = await client.get(f"/v1/browser/profiles/{made['id']}", headers=owner)
    assert job["status"] == "failed" and job["error_code"] == "invalid_input", job
    assert left == "1.000000"
    assert deleted.status_code == 200 and deleted.json() == {"id": made["id"], "deleted": True}
    assert gone.status_code == 404


async def test_pages_past_max_pages_are_closed_and_reported(kernel, site):
    steps = [{"action": "click", "role": "button", "name": "Open"}, {"action": "wait_for", "timeout_s": 3}]
    job = await one_task(kernel, {"start_url": f"{site.base}/popups", "steps": steps, "max_pages": 2})
    assert job["status"] == "completed", job
    closed = [b for b in job["result"]["blocked"] if b["reason"] == "max_pages"]
    assert len(closed) == 2 and all(b["detail"] == "more than 2 pages" for b in closed), job["result"]["blocked"]


async def test_input_is_checked_before_payment(kernel):
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        both = await client.post(
            "/v1/tools/browser/task",
            json={"start_url": "https://example.com/", "goal": "x", "steps": [{"action": "pdf"}]},
            headers=auth,
        )
        neither = await client.post("/v1/tools/browser/task", json={"start_url": "https://example.com/"}, headers=auth)
        file_url = await client.post(
            "/v1/tools/browser/task",
            json={"start_url": "file:///etc/passwd", "steps": [{"action": "pdf"}]},
            headers=auth,
        )
        bad_goto = await client.post(
            "/v1/tools/browser/task",
            json={
                "start_url": "https://example.com/",
                "steps": [{"action": "goto", "url": "view-source:https://a.b/"}],
            },
            headers=auth,
        )
        no_llm = await client.post(
            "/v1/tools/browser/task", json={"start_url": "https://example.com/", "goal": "find the fares"}, headers=auth
        )
        left = await balance(client, auth)
    assert both.status_code == 400, both.text
    assert neither.status_code == 400, neither.text
    assert file_url.status_code == 400 and file_url.json()["details"][0]["field"] == "start_url"
    assert bad_goto.status_code == 400 and bad_goto.json()["details"][0]["field"] == "steps[0].url"
    assert no_llm.status_code == 503 and no_llm.json()["error"] == "provider_unavailable"
    assert left == "1.000000"
