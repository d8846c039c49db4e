"""Operator pages other plugins provide, rendered by the console over HTTP (SQLite and
PostgreSQL): a test plugin's report escaped, its links kept only when they are console paths,
its rows indented, 404 for an unknown page or item, 303 without a session, the navigation
listing the installed pages; the goals plugin's page with goals seeded through the service;
and a console without the goals or souls plugins, whose navigation lacks them."""

from __future__ import annotations

import re
from decimal import Decimal

from console_support import sign_in
from families_support import INSTALLED, PRIVATE, seed_goal, seed_market, services

from tollway import Figure, Link, OperatorPage, Report, Row, Section, Table, hookimpl
from tollway.testing import http_client
from tollway_console import plugin as hooks
from tollway_console.pages import NAVIGATION

NAV = re.compile(r'<li><a href="([^"]+)"')
HOSTILE = '<script>alert("x")</script>'
# a table row's first five cells (a state, a count, three amounts)
ROW = re.compile(r'<tr data-level="0">' + r"<td>([^<]+)</td>" * 5)


ELSEWHERE = {  # addresses the console shows as text, never as a link
    "elsewhere": "https://evil.example/steal",
    "protocol-relative": "//evil.example/x",
    "script": "javascript:alert(1)",
    "climbing": "/console/../v1/balance",
    "slashes": "/console//evil.example",
}


async def _zoo(platform, query, item):
    if item == "missing":
        return None
    if item == "broken":  # a plugin's bug: not a Report
        return {"title": HOSTILE}
    links = (Link("an agent", "/console/agents/agent_1"), *(Link(text, href) for text, href in ELSEWHERE.items()))
    rows = (Row(("top", 1)), Row((HOSTILE, 2), level=1), Row(("deep", 3), level=9), *(Row((link, 0)) for link in links))
    return Report(
        f"Zoo {item or 'all'} {query.get('q', '')}".strip(),
        (
            Section("Figures", (Figure("Count", 3), Figure("Hostile", HOSTILE), Figure("Empty", None))),
            Section("Animals", table=Table(("Name", "Legs"), rows), note=HOSTILE),
            Section("Nothing", table=Table(("Name",), (), "No animal here.")),
        ),
    )


class ZooPages:
    @hookimpl
    def register_operator_pages(self, register):
        register(OperatorPage(name="zoo", title="Zoo", load=_zoo))


async def test_a_plugins_report_is_rendered_escaped_with_only_console_links(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("zoo", ZooPages())])
    async with http_client(kernel) as client:
        assert (await client.get("/console/view/zoo")).status_code == 303
        assert (await client.get("/console/view/zoo/x")).headers["location"] == "/console/sign-in"
        await sign_in(client)
        page = await client.get("/console/view/zoo?q=giraffes")
        item = await client.get("/console/view/zoo/child")
        missing_item = await client.get("/console/view/zoo/missing")
        broken = await client.get("/console/view/zoo/broken")
        unknown = await client.get("/console/view/nothing")
        home = await client.get("/console")
    assert page.status_code == 200 and item.status_code == 200, page.text
    html = page.text
    assert "<h1>Zoo all giraffes</h1>" in html and "<h1>Zoo child</h1>" in item.text
    assert HOSTILE not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert 'data-figure="Count" data-value="3"' in html and 'data-figure="Empty" data-value=""' in html
    hrefs = re.findall(r'<a href="([^"]+)">', html.split("<main>", 1)[1])
    assert hrefs == ["/console/agents/agent_1"]  # every other address shown as text
    for text in ELSEWHERE:
        assert f"<td>{text}</td>" in html
    assert re.findall(r'<tr data-level="(\d)">', html)[:3] == ["0", "1", "6"]  # deeper than 6 drawn at 6
    assert 'class="level-1"' in html and "No animal here." in html
    assert missing_item.status_code == 404 and unknown.status_code == 404
    assert broken.status_code == 500 and HOSTILE not in broken.text
    assert "/console/view/zoo" in NAV.findall(home.text) and "/console/view/zoo" in NAV.findall(html)
    assert 'href="/console/view/zoo" aria-current="page"' in html


async def test_the_goals_and_marketplace_pages_show_what_was_seeded(kernel_factory):
    with services() as env:
        kernel = await kernel_factory(plugins=[("tollway_console", hooks)], installed=INSTALLED, env=env)
        async with http_client(kernel) as client:
            goal, market = await seed_goal(client, kernel), await seed_market(client)
            gid, agent = goal["goal_id"], goal["agent_id"]
            for path in ("/console/view/goals", f"/console/view/goals/{gid}", "/console/view/marketplace"):
                assert (await client.get(path)).status_code == 303
            await sign_in(client)
            listing = await client.get("/console/view/goals")
            one = await client.get(f"/console/view/goals/{gid}")
            missing = await client.get("/console/view/goals/goal_nothing")
            market_page = await client.get("/console/view/marketplace")
            no_item = await client.get("/console/view/marketplace/x")
    used, held = goal["record"]["spent_usdc"], goal["record"]["held_usdc"]
    assert listing.status_code == one.status_code == market_page.status_code == 200, listing.text
    assert missing.status_code == no_item.status_code == 404
    assert NAV.findall(listing.text)[-2:] == ["/console/view/goals", "/console/view/marketplace"]
    assert ROW.search(listing.text).groups() == ("running", "1", "20.000000", used, held)
    assert used != "0.000000" and Decimal(held) + Decimal(used) >= Decimal("6.5")  # the model's turns; three slices
    assert f'<a href="/console/view/goals/{gid}">{gid}</a>' in listing.text
    assert f'<a href="/console/agents/{agent}">{agent}</a>' in listing.text
    waiting = listing.text.split("Asks waiting for a person", 1)[1]
    assert re.search(
        rf'<a href="/console/view/goals/{gid}">{gid}</a></td><td>inv-1</td><td>answer</td><td>sent</td><td>Lee</td><td>\d+ s</td>',
        waiting,
    )
    for label, value in (("Budget", "20.000000"), ("Used", used), ("Held", held)):
        assert f'data-figure="{label} (USDC)" data-value="{value}"' in one.text
    assert 'data-figure="Cases" data-value="3"' in one.text and 'data-figure="Asks waiting" data-value="1"' in one.text
    tree = re.findall(r'<tr data-level="(\d)"><td[^>]*>(inv-[\w-]+)</td><td>open</td><td>([\d.]+)</td>', one.text)
    assert tree == [("0", "inv-1", "3.000000"), ("1", "inv-1-a", "1.000000"), ("0", "inv-2", "2.500000")]
    assert 'class="level-1">inv-1-a</td>' in one.text
    html = market_page.text
    assert (
        'data-figure="Souls listed" data-value="1"' in html and 'data-figure="Services on sale" data-value="2"' in html
    )
    assert "<td>scribe</td><td>Scribe, the summariser</td>" in html
    assert ROW.search(html.split("Orders by state", 1)[1]).groups() == (
        "fulfilled",
        "1",
        "1.500000",
        "1.200000",
        "0.300000",
    )
    assert f'<a href="/console/jobs/{market["sold"]}">' in html and f'<a href="/console/jobs/{market["open"]}">' in html
    assert re.search(r"<td>paid</td><td>1</td><td>1.000000</td>", html)
    assert html.lower().count(market["seller"].lower()) == 2  # the soul's wallet, and where the payout went
    for page in (listing.text, one.text, html):
        for secret in (
            goal["secret"],
            market["soul_key"],
            PRIVATE,
            goal["auth"]["Authorization"].removeprefix("Bearer "),
        ):
            assert secret not in page


async def test_without_the_goals_and_souls_plugins_the_console_lists_no_operator_page(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks)])
    async with http_client(kernel) as client:
        await sign_in(client)
        home = await client.get("/console")
        goals = await client.get("/console/view/goals")
        market = await client.get("/console/view/marketplace")
    assert kernel.platform.operator_pages() == []
    assert NAV.findall(home.text) == [path for path, _ in NAVIGATION]  # the console's own pages only
    assert goals.status_code == 404 and market.status_code == 404
