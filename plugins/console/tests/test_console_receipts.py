"""The receipts pages over HTTP (SQLite and PostgreSQL): every agent's receipts filtered by
agent, tool, category and period, paged by keyset, and a receipt's page with each revision's
signature checked against the published keys and its value tag. Receipts come from paid calls
through the real pipeline."""

from __future__ import annotations

import re

from console_support import SeedPlugin, at_day, sign_in

from tollway import storage
from tollway.testing import credits_session, http_client
from tollway_console import plugin as hooks
from tollway_console import receipts

ROW = re.compile(r'<tr data-receipt="(rcpt_[0-9a-f]+)">')
NEXT = re.compile(r'href="/console/receipts\?([^"]+)" rel="next"')


async def _seed(client, monkeypatch):
    """Two agents: the first makes 3 lookups today and one 40 days ago, the second a
    verification and a failed one (refunded: two revisions). Their agent ids and the request id
    of the first agent's last lookup."""
    first, auth1 = await credits_session(client, "5")
    second, auth2 = await credits_session(client, "5")
    with monkeypatch.context() as m:
        at_day(m, 40)
        assert (await client.post("/v1/tools/seed/lookup", json={"text": "old"}, headers=auth1)).status_code == 200
    for _ in range(3):
        last = await client.post("/v1/tools/seed/lookup", json={"text": "x"}, headers=auth1)
        assert last.status_code == 200
    assert (await client.post("/v1/tools/seed/verify", json={"text": "x"}, headers=auth2)).status_code == 200
    assert (await client.post("/v1/tools/seed/verify", json={"text": "fail"}, headers=auth2)).status_code == 502
    tag = await client.post(
        "/v1/analytics/value-tags",
        json={
            "request_id": last.json()["data"]["request_id"],
            "status": "confirmed",
            "value_usdc": "2.5",
            "note": "closed a deal",
        },
        headers=auth1,
    )
    assert tag.status_code == 200, tag.text
    return first, second, tag.json()["receipt_id"]


async def test_receipts_are_filtered_and_paged_by_keyset(kernel_factory, monkeypatch):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        first, second, _ = await _seed(client, monkeypatch)
        await sign_in(client)

        async def ids(query: str) -> list[str]:
            page = await client.get(f"/console/receipts?{query}")
            assert page.status_code == 200, page.text
            return ROW.findall(page.text)

        newest = await ids("")  # the last 30 days by default
        assert len(newest) == 5
        everything = await ids("days=all")
        assert len(everything) == 6 and everything[:5] == newest
        assert len(await ids(f"agent={first}")) == 3 and len(await ids(f"agent={first}&days=all")) == 4
        assert len(await ids(f"agent={second}")) == 2
        assert len(await ids("tool=seed_verify")) == 2 and len(await ids("tool=seed_lookup&days=all")) == 4
        assert len(await ids("category=verification")) == 2 and len(await ids("category=data")) == 3
        assert await ids(f"agent={first}&category=verification") == []
        assert len(await ids("days=1")) == 5 and await ids("agent=nobody") == []

        monkeypatch.setattr(receipts, "PAGE_SIZE", 2)
        seen, query = [], "days=all"
        while True:
            page = await client.get(f"/console/receipts?{query}")
            seen += ROW.findall(page.text)
            more = NEXT.search(page.text)
            if more is None:
                break
            query = more.group(1).replace("&amp;", "&")
        assert seen == everything  # three pages of two, in order, none twice


async def test_a_receipts_page_checks_each_revisions_signature_and_shows_its_value_tag(kernel_factory, monkeypatch):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        _, second, tagged = await _seed(client, monkeypatch)
        await sign_in(client)
        page = (await client.get(f"/console/receipts/{tagged}")).text
        assert 'data-revision="1" data-valid="true"' in page and 'data-revision="2" data-valid="true"' in page
        assert "closed a deal" in page and "2.500000" in page and "confirmed" in page

        refunded = ROW.findall((await client.get(f"/console/receipts?agent={second}&tool=seed_verify")).text)
        assert len(refunded) == 2
        revisions = [
            re.findall(r'data-revision="(\d)" data-valid="(\w+)"', (await client.get(f"/console/receipts/{r}")).text)
            for r in refunded
        ]
        assert sorted(revisions) == [[("1", "true")], [("1", "true"), ("2", "true")]]

        # a body changed behind the signature's back is shown invalid
        await storage.execute(
            "UPDATE tw_receipts SET body = REPLACE(body, '\"2.500000\"', '\"9.500000\"') WHERE receipt_id = {}", tagged
        )
        page = (await client.get(f"/console/receipts/{tagged}")).text
        assert 'data-revision="2" data-valid="false"' in page and "digest does not match" in page
        assert (await client.get("/console/receipts/rcpt_000000000000000000000000")).status_code == 404
