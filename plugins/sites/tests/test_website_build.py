"""A five-page brief built, checked in Chromium, served at /sites/{slug}/ and screenshotted;
an update that changes one page; a failed build refunded."""

from __future__ import annotations

import pytest
from rdap_standin import rdap_server
from site_support import FIVE_PAGES, balance, finished, run_job

from tollway import now_ms
from tollway.testing import credits_session, http_client, worker_for
from tollway_sites import expiry


async def test_a_five_page_site_is_built_checked_served_and_updated(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser"})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "20")
        job = await run_job(kernel, client, auth, "/v1/tools/website/build", FIVE_PAGES)
        assert job["status"] == "completed", job
        site = job["result"]
        assert await balance(client, auth) == "10.000000"
        assert [p["page"] for p in site["pages"]] == ["index", "timetable", "fares", "about-us", "contact"]
        assert all(c["passed"] for c in site["checks"]), [c for c in site["checks"] if not c["passed"]]
        names = {c["name"] for c in site["checks"]}
        assert {"renders", "console", "links", "alt_text", "headings", "meta_description", "accessibility",
                "responsive", "styled", "external_requests"} <= names  # fmt: skip
        assert len(site["screenshots"]) == 10 and {s["width"] for s in site["screenshots"]} == {375, 1280}
        assert site["slug"] == "harbour-ferries" and site["url"].endswith("/sites/harbour-ferries/")
        assert "sitemap.xml" in site["files"] and "robots.txt" in site["files"]

        # served by the service, strict policy, immutable assets
        home = await client.get("/sites/harbour-ferries/")
        assert home.status_code == 200 and "<h1>Home</h1>" in home.text
        assert "default-src 'none'" in home.headers["content-security-policy"]
        assert home.headers["cache-control"] == "public, max-age=0, must-revalidate"
        css = next(f for f in site["files"] if f.startswith("site."))
        asset = await client.get(f"/sites/harbour-ferries/{css}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith("text/css")
        assert "immutable" in asset.headers["cache-control"]
        fares = await client.get("/sites/harbour-ferries/fares")
        assert fares.status_code == 200 and "4.50 USD" in fares.text
        bare = await client.get("/sites/harbour-ferries", follow_redirects=False)
        assert bare.status_code == 308 and bare.headers["location"] == "/sites/harbour-ferries/"
        assert (await client.get("/sites/harbour-ferries/nothing.html")).status_code == 404
        shot = site["screenshots"][0]
        png = await client.get(shot["url"])
        assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"

        # an update changes one page, the others stay as they were
        before = {p: (await client.get(f"/sites/harbour-ferries/{p}.html")).text for p in ("timetable", "contact")}
        change = {"pages": [{"page": "fares", "content": "- Adult: 5.00 USD\n- Child: 2.50 USD"}]}
        updated = await run_job(kernel, client, auth, f"/v1/tools/website/{site['site_id']}/update", change)
        assert updated["status"] == "completed", updated
        assert updated["result"]["version"] == 2 and updated["result"]["slug"] == "harbour-ferries"
        assert await balance(client, auth) == "8.000000"
        fares = await client.get("/sites/harbour-ferries/fares.html")
        assert "5.00 USD" in fares.text and "4.50 USD" not in fares.text
        _, stranger = await credits_session(client, "5")
        refused = await client.post(f"/v1/tools/website/{site['site_id']}/update", json=change, headers=stranger)
        assert refused.status_code == 404 and refused.json()["error"] == "not_found", refused.text
        assert await balance(client, stranger) == "5.000000"
        for page, text in before.items():
            assert (await client.get(f"/sites/harbour-ferries/{page}.html")).text == text


@pytest.mark.parametrize(
    "env",
    [{"TOLLWAY_WEBSITE_CHECK_TIMEOUT_S": "0.05"}, {"TOLLWAY_WEBSITE_CHROMIUM_PATH": "/nonexistent/chromium"}],
    ids=["checks-time-out", "no-browser"],
)
async def test_a_build_that_fails_its_checks_is_refunded_and_publishes_nothing(kernel_factory, env):
    kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser"}, env=env)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "20")
        job = await run_job(kernel, client, auth, "/v1/tools/website/build", FIVE_PAGES)
        assert job["status"] == "failed", job
        assert job["error_code"] == "internal_error", job
        assert "did not pass its checks, so nothing was published" in job["error"]
        assert await balance(client, auth) == "20.000000"
        assert (await client.get("/sites/harbour-ferries/")).status_code == 404


async def test_a_site_with_a_domain_gets_its_records_and_a_notice_before_the_domain_lapses(kernel_factory):
    with rdap_server() as rdap:
        rdap.add("harbourferries.example", now_ms() + 10 * 24 * 3600 * 1000)
        env = {"TOLLWAY_DOMAINS_RDAP_URL": rdap.url, "TOLLWAY_WEBSITE_PUBLIC_URL": "https://tools.example.net"}
        kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser"}, env=env)
        async with http_client(kernel) as client:
            _, auth = await credits_session(client, "10")
            job = await run_job(
                kernel, client, auth, "/v1/tools/website/build", {**FIVE_PAGES, "domain": "HarbourFerries.example."}
            )
            assert job["status"] == "completed", job
            site = job["result"]
            assert site["url"] == "https://tools.example.net/sites/harbour-ferries/"
            assert [(r["type"], r["name"], r["value"]) for r in site["dns_records"]] == [
                ("ALIAS", "harbourferries.example", "tools.example.net")
            ]
            home = (await client.get("/sites/harbour-ferries/")).text
            assert '<link rel="canonical" href="https://harbourferries.example/">' in home
            assert (await expiry.check_due(kernel.context)).notified == 1
            assert (await expiry.check_due(kernel.context)).notified == 0
            listed = (await client.get("/v1/tools/notifications", headers=auth)).json()["notifications"]
        [notice] = [n for n in listed if n["type"] == "domain_expiring"]
        assert (
            notice["metadata"]["site_id"] == site["site_id"]
            and notice["metadata"]["domain"] == "harbourferries.example"
        )


async def test_two_builds_of_one_name_at_once_get_two_addresses_or_a_refund(kernel_factory):
    kernel = await kernel_factory(installed={"tollway_sites", "tollway_browser"})
    worker = worker_for(kernel, poll_s=0.05)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "20")
        accepted = [await client.post("/v1/tools/website/build", json=FIVE_PAGES, headers=auth) for _ in range(2)]
        worker.start()
        try:
            jobs = [await finished(client, a.json()["request_id"], auth) for a in accepted]
        finally:
            await worker.stop()
        done = [j["result"]["slug"] for j in jobs if j["status"] == "completed"]
        assert len(set(done)) == len(done) and set(done) <= {"harbour-ferries", "harbour-ferries-2"}
        assert all(j["error_code"] == "internal_error" for j in jobs if j["status"] == "failed")
        assert await balance(client, auth) == f"{20 - 10 * len(done)}.000000"
        for slug in done:
            assert (await client.get(f"/sites/{slug}/")).status_code == 200
