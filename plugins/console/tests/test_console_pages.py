"""The console over HTTP: signing in and out, sessions that expire, CSRF tokens, every page
refused without a session, and the overview's figures from seeded paid calls (SQLite and
PostgreSQL)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from console_support import CSRF, OPERATOR_TOKEN, SeedPlugin, at_day, sign_in
from eth_account import Account

from tollway import storage
from tollway.testing import OPERATOR, credits_session, http_client, pay_402, wait_for_job, worker_for
from tollway_console import plugin as hooks

PAGES = (
    "/console",
    "/console/activity",
    "/console/receipts",
    "/console/receipts/rcpt_0123",
    "/console/agents",
    "/console/agents/0b5e7c1e-0000-4000-8000-000000000000",
    "/console/jobs",
    "/console/jobs/req_0123",
    "/console/plugins",
)
POSTS = (
    "/console/sign-out",
    "/console/agents/0b5e7c1e-0000-4000-8000-000000000000/grant",
    "/console/agents/0b5e7c1e-0000-4000-8000-000000000000/tokens/at_0123456789abcdef/revoke",
    "/console/plugins/health",
)


async def console_kernel(kernel_factory, **env: str):
    return await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())], env=env)


async def test_without_a_session_every_page_redirects_to_sign_in(kernel_factory):
    kernel = await console_kernel(kernel_factory)
    async with http_client(kernel) as client:
        for path in (*PAGES, "/console?days=7"):
            answer = await client.get(path)
            assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in", path
        for path in POSTS:
            answer = await client.post(path, data={"csrf": "0" * 64})
            assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in", path
        client.cookies.set("tollway_console", "forged-session-value", path="/console")
        assert (await client.get("/console")).status_code == 303
        client.cookies.clear()
        sign_in_page = await client.get("/console/sign-in")
    assert sign_in_page.status_code == 200
    csp = sign_in_page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "'unsafe-inline'" not in csp and "script-src 'self'" in csp
    assert "<script>" not in sign_in_page.text and "style=" not in sign_in_page.text
    cookie = sign_in_page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie  # served over http


async def test_signing_in_takes_the_operator_token_and_a_valid_csrf_token(kernel_factory):
    kernel = await console_kernel(kernel_factory)
    async with http_client(kernel) as client:
        page = await client.get("/console/sign-in")
        csrf = CSRF.search(page.text).group(1)
        wrong = await client.post("/console/sign-in", data={"csrf": csrf, "token": "tw_op_wrong"})
        missing = await client.post("/console/sign-in", data={"token": OPERATOR_TOKEN})
        forged = await client.post("/console/sign-in", data={"csrf": "f" * 64, "token": OPERATOR_TOKEN})
        assert wrong.status_code == 401 and "not the operator token" in wrong.text
        assert missing.status_code == 403 and forged.status_code == 403
        assert "tollway_console=" not in str(client.cookies)
        assert await client.get("/console") is not None and (await client.get("/console")).status_code == 303

        ok = await client.post("/console/sign-in", data={"csrf": csrf, "token": OPERATOR_TOKEN})
        assert ok.status_code == 303 and ok.headers["location"] == "/console"
        session_cookie = ok.headers["set-cookie"]
        assert session_cookie.startswith("tollway_console=") and "HttpOnly" in session_cookie
        assert "SameSite=Strict" in session_cookie and "Max-Age=43200" in session_cookie
        home = await client.get("/console")
        assert home.status_code == 200
        token = CSRF.search(home.text).group(1)
        stored = await storage.rows("SELECT id FROM console_sessions")
        value = client.cookies.get("tollway_console")
        assert len(stored) == 1 and stored[0]["id"] != value  # only its hash is kept

        no_csrf = await client.post("/console/sign-out", data={})
        bad_csrf = await client.post("/console/sign-out", data={"csrf": "0" * 64})
        assert no_csrf.status_code == 403 and bad_csrf.status_code == 403
        assert (await client.get("/console")).status_code == 200  # still signed in

        out = await client.post("/console/sign-out", data={"csrf": token})
        assert out.status_code == 303 and out.headers["location"] == "/console/sign-in"
        assert await storage.rows("SELECT id FROM console_sessions") == []
        client.cookies.set("tollway_console", value, path="/console")  # an old copy of the cookie
        assert (await client.get("/console")).status_code == 303


async def test_a_session_expires(kernel_factory):
    kernel = await console_kernel(kernel_factory)
    async with http_client(kernel) as client:
        await sign_in(client)
        await storage.execute("UPDATE console_sessions SET expires_ms = {}", 1)
        assert (await client.get("/console")).status_code == 303


async def test_the_cookie_is_secure_over_https(kernel_factory):
    kernel = await console_kernel(kernel_factory)
    async with http_client(kernel) as client:
        page = await client.get("https://testserver/console/sign-in")
    assert "; Secure" in page.headers["set-cookie"]


def _groups(html: str, chart: str) -> dict[str, dict[str, str]]:
    """Each bar group of one chart: its date, and its parts' amounts (and the total)."""
    svg = re.search(rf'<svg [^>]*id="{chart}".*?</svg>', html, re.S).group(0)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    out = {}
    for g in root.iter(f"{ns}g"):
        parts = {r.get("data-part"): r.get("data-amount") for r in g.iter(f"{ns}rect")}
        out[g.get("data-date")] = {**parts, "total": g.get("data-total")}
    return out


async def test_the_overview_shows_seeded_revenue_per_day_activity_and_credits_owed(kernel_factory, monkeypatch):
    kernel = await console_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "10")
        plan = {3: (2, 1), 1: (1, 3)}  # days ago: (lookups at 0.25, verifications at 0.10)
        with monkeypatch.context() as m:
            for days_ago, (lookups, verifies) in plan.items():
                at_day(m, days_ago)
                for _ in range(lookups):
                    ok = await client.post("/v1/tools/seed/lookup", json={"text": "x"}, headers=auth)
                    assert ok.status_code == 200, ok.text
                for _ in range(verifies):
                    ok = await client.post("/v1/tools/seed/verify", json={"text": "x"}, headers=auth)
                    assert ok.status_code == 200, ok.text
        today = await client.post("/v1/tools/seed/lookup", json={"text": "x"}, headers=auth)
        failed = await client.post("/v1/tools/seed/verify", json={"text": "fail"}, headers=auth)
        assert today.status_code == 200 and failed.status_code == 502
        wallet = Account.create()  # and one call paid on chain (x402)
        await client.post(
            "/v1/tools/internal/chain/fund", json={"address": wallet.address, "amount": "1"}, headers=OPERATOR
        )
        quote = await client.post("/v1/tools/seed/verify", json={"text": "y"})
        assert quote.status_code == 402
        paid = {
            "payment-signature": pay_402(wallet, quote.headers["PAYMENT-REQUIRED"]),
            "X-Quote-ID": quote.json()["quote_id"],
        }
        assert (await client.post("/v1/tools/seed/verify", json={"text": "y"}, headers=paid)).status_code == 200
        await sign_in(client)
        html = (await client.get("/console?days=7")).text

    by_category = _groups(html, "by-category")
    by_method = _groups(html, "by-method")
    dates = sorted(by_category)
    assert len(dates) == 3, by_category  # one group per seeded day
    assert by_category[dates[0]] == {"data": "0.500000", "verification": "0.100000", "total": "0.600000"}
    assert by_category[dates[1]] == {"data": "0.250000", "verification": "0.300000", "total": "0.550000"}
    # today: the failed call was refunded, the x402 one counts
    assert by_category[dates[2]] == {"data": "0.250000", "verification": "0.100000", "total": "0.350000"}
    assert [by_method[d] for d in dates] == [
        {"credits": "0.600000", "total": "0.600000"},
        {"credits": "0.550000", "total": "0.550000"},
        {"credits": "0.250000", "x402": "0.100000", "total": "0.350000"},
    ]
    # the last hour: today's three calls, one failed (they may straddle a minute)
    calls = [(int(c), int(e)) for c, e in re.findall(r"<td>\d\d:\d\d</td><td>(\d+)</td><td>(\d+)</td>", html)]
    assert (sum(c for c, _ in calls), sum(e for _, e in calls)) == (3, 1), html
    # what agents hold: 10 granted, 1.40 spent (the failed call's 0.10 given back)
    assert 'data-outstanding="8.600000"' in html
    assert "Nothing pending." in html
    assert OPERATOR_TOKEN not in html


async def test_the_overview_shows_each_tools_p50_and_p99_run_time(kernel_factory):
    kernel = await console_kernel(kernel_factory)
    waits = (10, 30, 50, 70, 300)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        for ms in waits:
            assert (await client.post("/v1/tools/seed/wait", json={"ms": ms}, headers=auth)).status_code == 200
        job = (await client.post("/v1/tools/seed/report", json={"text": "x"}, headers=auth)).json()
        worker = worker_for(kernel)
        worker.start()
        try:
            await wait_for_job(client, job["request_id"], auth)
        finally:
            await worker.stop()
        await sign_in(client)
        html = (await client.get("/console")).text
    rows = {
        tool: (int(calls), int(p50), int(p99))
        for tool, calls, p50, p99 in re.findall(
            r'<tr data-tool="([a-z_]+)"><td>[a-z_]+</td><td>(\d+)</td><td data-p50="(\d+)">\d+</td>'
            r'<td data-p99="(\d+)">',
            html,
        )
    }
    calls, p50, p99 = rows["seed_wait"]
    # nearest rank of five: the median is the third (50 ms), the 99th percentile the fifth (300 ms)
    assert calls == 5 and 50 <= p50 < 300 <= p99 < 1000, rows
    assert rows["seed_report"][0] == 1  # a job's run time is recorded when it completes
