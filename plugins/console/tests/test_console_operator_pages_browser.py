"""The goals and souls plugins' operator pages in headless Chromium, on a real port, with their
data seeded through the service: Goals, a goal's case tree and Marketplace render under the
console's Content-Security-Policy with no violation, axe-core finds nothing serious or
critical, no page holds a secret (the operator token, an access token, a soul key, a goal's
webhook secret) or an agent's words, and each is screenshotted under test-artifacts/console/."""

from __future__ import annotations

from console_support import OPERATOR_TOKEN
from families_support import INSTALLED, PRIVATE, seed_goal, seed_market, services
from playwright.async_api import async_playwright
from test_console_browser import ARTIFACTS, CHROMIUM, _checked

from tollway.testing import http_client, serve_http
from tollway_console import plugin as hooks


async def test_the_operator_pages_render_accessibly_without_secrets(kernel_factory, db_kind):
    with services() as env:
        kernel = await kernel_factory(plugins=[("tollway_console", hooks)], installed=INSTALLED, env=env)
        async with http_client(kernel) as client:
            goal, market = await seed_goal(client, kernel), await seed_market(client)
    secrets = {
        "operator token": OPERATOR_TOKEN,
        "access token": goal["auth"]["Authorization"].removeprefix("Bearer "),
        "soul key": market["soul_key"],
        "goal webhook secret": goal["secret"],
        "an agent's words": PRIVATE,
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shots = []
    async with serve_http(kernel) as base, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            csp_errors: list[str] = []
            page.on("console", lambda m: csp_errors.append(m.text) if "Content Security Policy" in m.text else None)
            await page.goto(f"{base}/console/view/goals")
            assert page.url == f"{base}/console/sign-in"
            await page.fill("#token", OPERATOR_TOKEN)
            await page.click("button[type=submit]")
            await page.wait_for_url(f"{base}/console")
            await page.click("nav >> text=Goals")
            await page.wait_for_url(f"{base}/console/view/goals")
            assert await page.locator("h1").inner_text() == "Goals"
            shots.append(("goals", await _checked(page, secrets)))
            await page.click(f"a[href='/console/view/goals/{goal['goal_id']}']")
            await page.wait_for_url(f"{base}/console/view/goals/{goal['goal_id']}")
            assert await page.locator("table.report tbody tr[data-level='1']").count() == 1  # the sub-case
            shots.append(("goal", await _checked(page, secrets)))
            await page.click("nav >> text=Marketplace")
            await page.wait_for_url(f"{base}/console/view/marketplace")
            assert await page.locator("h1").inner_text() == "Marketplace"
            shots.append(("marketplace", await _checked(page, secrets)))
            assert csp_errors == []
        finally:
            await browser.close()
    for name, png in shots:
        (ARTIFACTS / f"{name}-{db_kind}.png").write_bytes(png)
