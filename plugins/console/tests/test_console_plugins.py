"""The plugins and providers page over HTTP (SQLite and PostgreSQL): the installed seed
plugin's tools with their prices, the console's own routes, a plugin that failed to load,
a provider kind whose settings are missing named by variable, and the health checks run
from the form against a local stand-in provider, one answering and one failing; no secret
(a provider key set in the environment, a key in a URL's query) appears in any answer."""

from __future__ import annotations

import re

from console_support import PROVIDER_SECRET, SeedPlugin, sign_in
from provider_standin import GEO_KEY, LOOKUP_KEY, ProvidersPlugin, provider_env, stand_in

from tollway.testing import http_client
from tollway_console import plugin as hooks

SECRETS = (PROVIDER_SECRET, LOOKUP_KEY, GEO_KEY)


def _row(html: str, attribute: str, value: str) -> str:
    found = re.search(rf'<tr {attribute}="{re.escape(value)}"[^>]*>.*?</tr>', html, re.S)
    assert found, f"no row {attribute}={value}"
    return found.group(0)


async def test_the_plugins_page_lists_tools_failures_and_providers_and_checks_their_health(kernel_factory):
    with stand_in() as base:
        kernel = await kernel_factory(
            plugins=[("tollway_console", hooks), ("seed", SeedPlugin()), ("providers", ProvidersPlugin())],
            env={**provider_env(base), "TOLLWAY_SEED_API_KEY": PROVIDER_SECRET},
            start=False,
        )
        # a plugin that failed to import, in the kernel's record of failures (as the entry-point
        # loader writes it: the exception's type and text), its error quoting a secret
        leak = f"cannot reach https://ops:{PROVIDER_SECRET}@models.example/v1?api_key={PROVIDER_SECRET}"
        kernel.plugin_failures["tollway_broken"] = f"RuntimeError: {leak}"
        await kernel.start()
        async with http_client(kernel) as client:
            assert (await client.get("/console/plugins")).headers["location"] == "/console/sign-in"
            assert (await client.post("/console/plugins/health")).headers["location"] == "/console/sign-in"
            csrf = await sign_in(client)

            page = await client.get("/console/plugins")
            assert page.status_code == 200
            html = page.text
            seed = html[html.index('data-plugin="seed"') : html.index("</section>", html.index('data-plugin="seed"'))]
            assert "Not from an installed distribution" in seed
            for tool, price in (("seed_lookup", "0.250000"), ("seed_verify", "0.100000"), ("seed_report", "0.050000")):
                row = _row(seed, "data-tool", tool)
                assert f'data-price="{price}"' in row
            assert "<td>job</td>" in _row(seed, "data-tool", "seed_report")
            assert "POST /v1/tools/seed/lookup" in seed and "<td>data</td>" in seed
            console = html[html.index('data-plugin="tollway_console"') :]
            declared: list = []
            hooks.register_routes(register=declared.append)
            count = len(declared)
            assert "Distribution tollway-console 0.1.0" in console[:400]
            assert f'data-routes="{count}"' in console[:600]
            assert 'data-providers="geo/standin lookup/standin mail/standin"' in html
            assert 'data-failed="tollway_broken"' in html and "RuntimeError: cannot reach" in html

            mail = _row(html, "data-kind", "mail")
            assert 'data-configured="false"' in mail
            assert 'data-unset="TOLLWAY_MAIL_API_KEY TOLLWAY_MAIL_BASE_URL"' in mail
            assert "missing TOLLWAY_MAIL_API_KEY, TOLLWAY_MAIL_BASE_URL" in mail
            assert 'data-configured="true"' in _row(html, "data-kind", "lookup")
            assert "data-health" not in html  # nothing checked until asked

            assert (await client.post("/console/plugins/health", data={})).status_code == 403
            assert (await client.post("/console/plugins/health", data={"csrf": "0" * 64})).status_code == 403
            checked = await client.post("/console/plugins/health", data={"csrf": csrf})
            assert checked.status_code == 200
            html = checked.text
            assert 'data-health="ok"' in _row(html, "data-kind", "lookup")
            geo = _row(html, "data-kind", "geo")
            assert 'data-health="failed"' in geo and "503 Service Unavailable" in geo
            assert "key=[redacted]" in geo  # the key in the failing URL's query
            assert "data-health" not in _row(html, "data-kind", "mail")  # not configured: not checked
            for answer in (page, checked):
                shown = [s for s in SECRETS if s in answer.text]
                assert shown == [], shown
