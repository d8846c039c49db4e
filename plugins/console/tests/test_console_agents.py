"""The agents pages over HTTP (SQLite and PostgreSQL): who holds the most credits, one agent's
balance and ledger, and granting credits from the form, which goes through the operator's
grant (a `grant` ledger row, the balance moved, the ledger still exact) and wants the
session's CSRF token."""

from __future__ import annotations

import re

from console_support import SeedPlugin, sign_in

from tollway.testing import credits_session, http_client, ledger_problems
from tollway_console import plugin as hooks

BALANCE = re.compile(r'data-balance="([0-9.]+)"')


async def test_granting_credits_from_the_console_moves_the_balance_through_the_ledger(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        rich, _ = await credits_session(client, "7")
        poor, auth = await credits_session(client, "1")
        assert (await client.post("/v1/tools/seed/lookup", json={"text": "x"}, headers=auth)).status_code == 200
        csrf = await sign_in(client)

        listing = (await client.get("/console/agents")).text
        assert listing.index(rich) < listing.index(poor)  # most credits first
        found = await client.get(f"/console/agents?agent={poor}")
        assert found.status_code == 303 and found.headers["location"] == f"/console/agents/{poor}"
        page = (await client.get(f"/console/agents/{poor}")).text
        assert BALANCE.search(page).group(1) == "0.750000"
        assert 'data-kind="grant"' in page and 'data-kind="spend"' in page

        url = f"/console/agents/{poor}/grant"
        assert (await client.post(url, data={"amount": "2", "memo": "no token"})).status_code == 403
        assert (await client.post(url, data={"csrf": "0" * 64, "amount": "2"})).status_code == 403
        for bad in ("", "-1", "0", "1.0000001", "two", "2000000"):
            refused = await client.post(url, data={"csrf": csrf, "amount": bad})
            assert refused.status_code == 400 and 'role="alert"' in refused.text, bad
        assert BALANCE.search((await client.get(f"/console/agents/{poor}")).text).group(1) == "0.750000"

        granted = await client.post(url, data={"csrf": csrf, "amount": "2.5", "memo": "a goodwill credit"})
        assert granted.status_code == 303 and granted.headers["location"] == f"/console/agents/{poor}"
        page = (await client.get(f"/console/agents/{poor}")).text
        assert BALANCE.search(page).group(1) == "3.250000"
        assert page.count('data-kind="grant"') == 2 and "a goodwill credit" in page
        balance = await client.get("/v1/balance", headers=auth)
        assert balance.json()["credits_balance"] == "3.250000"
        assert await ledger_problems() == []

        assert (await client.get("/console/agents/0b5e7c1e-0000-4000-8000-000000000000")).status_code == 404
        missing = await client.post(
            "/console/agents/0b5e7c1e-0000-4000-8000-000000000000/grant", data={"csrf": csrf, "amount": "1"}
        )
        assert missing.status_code == 404
