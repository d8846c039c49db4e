"""The console in headless Chromium (the machine's, /usr/bin/chromium), on a real port: the
operator signs in through the form, every page renders the seeded service under its own
Content-Security-Policy with no violation of it, an axe-core scan (the copy the sites plugin
vendors, and its runner) finds nothing serious or critical, no page holds a secret, and each
page is screenshotted under test-artifacts/console/. The operator grants credits, cancels a
pending job, revokes an access token and runs the providers' health checks (a local
stand-in provider) from their forms."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from console_support import OPERATOR_TOKEN, PROVIDER_SECRET, SeedPlugin, at_day
from playwright.async_api import Page, async_playwright
from provider_standin import GEO_KEY, LOOKUP_KEY, ProvidersPlugin, provider_env, stand_in

from tollway.testing import credits_session, http_client, serve_http
from tollway_console import plugin as hooks
from tollway_sites.checks import AXE, AXE_RUN, FAILING_IMPACTS

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "console"
RECEIPT_KEY = base64.b64encode(b"\x07" * 32).decode()  # the suite's receipt signing seed (tollway.testing)
PAGES = (  # name, path, its h1
    ("overview", "/console", "Overview"),
    ("overview-7-days", "/console?days=7", "Overview"),
    ("receipts", "/console/receipts", "Receipts"),
    ("receipts-filtered", "/console/receipts?category=data&days=all", "Receipts"),
    ("agents", "/console/agents", "Agents"),
    ("jobs", "/console/jobs", "Jobs"),
    ("plugins", "/console/plugins", "Plugins and providers"),
)


@pytest.fixture
def standin() -> Iterator[str]:
    """A local stand-in provider's base URL, for the providers' health checks."""
    with stand_in() as base:
        yield base


async def test_the_console_signs_in_and_renders_every_page_accessibly_without_secrets(
    kernel_factory, db_kind, monkeypatch, standin
):
    kernel = await kernel_factory(
        plugins=[("tollway_console", hooks), ("seed", SeedPlugin()), ("providers", ProvidersPlugin())],
        env={"TOLLWAY_SEED_API_KEY": PROVIDER_SECRET, **provider_env(standin)},
    )
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "5")
        access_token = auth["Authorization"].removeprefix("Bearer ")
        with monkeypatch.context() as m:
            at_day(m, 2)
            for _ in range(2):
                assert (await client.post("/v1/tools/seed/lookup", json={"text": "x"}, headers=auth)).status_code == 200
        assert (await client.post("/v1/tools/seed/verify", json={"text": "x"}, headers=auth)).status_code == 200
        job = await client.post("/v1/tools/seed/report", json={"text": "x"}, headers=auth)  # left pending
        assert job.status_code == 202
    secrets = {
        "operator token": OPERATOR_TOKEN,
        "access token": access_token,
        "receipt signing seed": RECEIPT_KEY,
        "receipt signing seed (hex)": ("07" * 32),
        "provider key": PROVIDER_SECRET,
        "lookup provider key": LOOKUP_KEY,
        "geo provider key (in a URL's query)": GEO_KEY,
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with serve_http(kernel) as base, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page, csp_errors = await watched_page(browser)

            await page.goto(f"{base}/console")
            assert page.url == f"{base}/console/sign-in"  # no session: the sign-in page
            shots = [("sign-in", await _checked(page, secrets))]
            await page.fill("#token", "tw_op_not-the-token")
            await page.click("button[type=submit]")
            assert "not the operator token" in await page.content()
            await page.fill("#token", OPERATOR_TOKEN)
            await page.click("button[type=submit]")
            await page.wait_for_url(f"{base}/console")
            cookie = next(c for c in await page.context.cookies() if c["name"] == "tollway_console")
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

            for name, path, heading in PAGES:
                await page.goto(f"{base}{path}")
                assert await page.locator("h1").inner_text() == heading
                shots.append((name, await _checked(page, secrets)))
                if name == "overview-7-days":
                    assert await page.locator("#by-category g.day").count() == 2  # two seeded days
                    # the console's script ran under the CSP and reloads the activity panel from its URL
                    assert await page.evaluate("() => typeof window.consoleRefresh") == "function"
                    await page.evaluate("() => window.consoleRefresh(document.querySelector('[data-refresh]'))")
                    assert await page.locator("[data-refresh] table").count() == 1
            await page.goto(f"{base}/console/receipts?category=data&days=all")
            assert await page.locator("table.receipts tbody tr").count() == 3  # the data calls: two lookups, the job
            await page.locator("table.receipts a").first.click()
            await page.wait_for_url(f"{base}/console/receipts/rcpt_*")
            assert await page.locator('tr[data-valid="true"]').count() == 1
            shots.append(("receipt", await _checked(page, secrets)))

            await page.goto(f"{base}/console/agents")
            await page.locator("table.agents a").first.click()
            await page.wait_for_url(f"{base}/console/agents/*")
            before = Decimal(await page.locator("[data-balance]").get_attribute("data-balance"))
            await page.fill("#amount", "1.6")
            await page.fill("#memo", "from the console")
            await page.click("form.grant button")
            await page.wait_for_load_state()
            after = Decimal(await page.locator("[data-balance]").get_attribute("data-balance"))
            assert after - before == Decimal("1.6")
            shots.append(("agent", await _checked(page, secrets)))
            await page.click("form.revoke button")
            await page.wait_for_load_state()
            assert await page.locator('tr[data-state="revoked"]').count() == 1
            shots.append(("agent-token-revoked", await _checked(page, secrets)))
            async with httpx.AsyncClient() as api:
                refused = await api.get(f"{base}/v1/balance", headers=auth)
            assert refused.status_code == 401 and refused.json()["error"] == "invalid_access_token"

            await page.goto(f"{base}/console/plugins")
            await page.click("form.check button")
            await page.wait_for_load_state()
            assert await page.locator('tr[data-kind="lookup"][data-health="ok"]').count() == 1
            assert await page.locator('tr[data-kind="geo"][data-health="failed"]').count() == 1
            shots.append(("plugins-checked", await _checked(page, secrets)))

            await page.goto(f"{base}/console/jobs")
            await page.locator("table.jobs a").first.click()
            await page.wait_for_url(f"{base}/console/jobs/*")
            shots.append(("job", await _checked(page, secrets)))
            assert await page.locator("tr[data-event]").count() == 1  # accepted
            await page.fill("#reason", "cancelled from the console")
            await page.click("form.cancel button")
            await page.wait_for_load_state()
            assert await page.locator('dd[data-status="failed"]').count() == 1  # the pending job, cancelled
            assert await page.locator('tr[data-event="cancelled"]').count() == 1
            assert await page.locator("form.cancel").count() == 0
            shots.append(("job-cancelled", await _checked(page, secrets)))

            await page.click("text=Sign out")
            await page.wait_for_url(f"{base}/console/sign-in")
            await page.goto(f"{base}/console")
            assert page.url == f"{base}/console/sign-in"
            assert csp_errors == []
        finally:
            await browser.close()
    for name, png in shots:
        (ARTIFACTS / f"{name}-{db_kind}.png").write_bytes(png)


async def _checked(page, secrets: dict[str, str]) -> bytes:
    """The page's HTML holds no secret, axe-core finds nothing serious or critical; its screenshot."""
    html = await page.content()
    shown = [what for what, value in secrets.items() if value in html]
    assert not shown, f"{page.url} shows {shown}"
    await page.evaluate(AXE)
    found = await page.evaluate(AXE_RUN)
    failing = [v for v in found if v["impact"] in FAILING_IMPACTS]
    assert not failing, f"{page.url}: {failing}"
    return await page.screenshot(full_page=True)


async def watched_page(browser) -> tuple[Page, list[str]]:
    """A new page of `browser` and the list the Content-Security-Policy violations it logs go to."""
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    csp_errors: list[str] = []
    page.on("console", lambda msg: csp_errors.append(msg.text) if "Content Security Policy" in msg.text else None)
    return page, csp_errors
