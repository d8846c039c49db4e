"""The watches and webhooks pages in headless Chromium (SQLite and PostgreSQL): the operator
signs in, opens the given-up webhook from the outbox, redelivers it through the form and sees
it queued, then delivered once the receiver answers; each page passes axe-core, shows no
secret (the webhook's signing secret and its URL's path among them) and is screenshotted
under test-artifacts/console/."""

from __future__ import annotations

from console_support import OPERATOR_TOKEN, SeedPlugin
from playwright.async_api import async_playwright
from test_console_browser import ARTIFACTS, CHROMIUM, _checked, watched_page
from webhooks_support import ENV, HOOK_PATH, FeedPlugin, seed, send_until

from tollway.testing import http_client, serve_http, webhook_receiver
from tollway_console import plugin as hooks


async def test_redelivering_a_given_up_webhook_in_the_browser_queues_it(kernel_factory, db_kind):
    kernel = await kernel_factory(
        plugins=[("tollway_console", hooks), ("seed", SeedPlugin()), ("feed", FeedPlugin())], env=ENV
    )
    with webhook_receiver(HOOK_PATH) as receiver:
        async with http_client(kernel) as client:
            seeded = await seed(kernel, client, receiver)
        secrets = {
            "operator token": OPERATOR_TOKEN,
            "webhook secret": seeded.secret,
            "webhook URL path": HOOK_PATH,
        }
        async with serve_http(kernel) as base, async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                page, csp_errors = await watched_page(browser)
                await page.goto(f"{base}/console/webhooks")
                assert page.url == f"{base}/console/sign-in"  # no session
                await page.fill("#token", OPERATOR_TOKEN)
                await page.click("button[type=submit]")
                await page.wait_for_url(f"{base}/console")

                await page.click("text=Watches & webhooks")
                await page.wait_for_url(f"{base}/console/webhooks")
                assert await page.locator("h1").inner_text() == "Watches & webhooks"
                assert await page.locator('tr[data-state="abandoned"][data-count="1"]').count() == 1
                shots = [("webhooks", await _checked(page, secrets))]

                await page.click(f"table.webhooks a:text('{seeded.webhook_id}')")
                await page.wait_for_url(f"{base}/console/webhooks/{seeded.webhook_id}")
                assert await page.locator("table.attempts tbody tr").count() == 6
                assert await page.locator('dd[data-state="abandoned"]').count() == 1
                shots.append(("webhook-given-up", await _checked(page, secrets)))

                await page.click("form.redeliver button")
                await page.wait_for_load_state()
                assert page.url == f"{base}/console/webhooks/{seeded.webhook_id}"
                assert await page.locator('dd[data-state="pending"]').count() == 1
                assert await page.locator("table.attempts tbody tr").count() == 6  # the history kept
                assert await page.locator("form.redeliver").count() == 0
                shots.append(("webhook-redelivered", await _checked(page, secrets)))

                receiver.status = 200
                await send_until(kernel, seeded.webhook_id, "delivered")
                await page.reload()
                assert await page.locator('dd[data-state="delivered"]').count() == 1
                assert await page.locator("table.attempts tbody tr").count() == 7
                shots.append(("webhook-delivered", await _checked(page, secrets)))
                assert csp_errors == []
            finally:
                await browser.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name, png in shots:
        (ARTIFACTS / f"{name}-{db_kind}.png").write_bytes(png)
