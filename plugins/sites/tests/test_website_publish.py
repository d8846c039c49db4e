"""A site published on GitHub Pages through the agent's code-host connection (the goals
plugin's GitHub App, against its stand-in: a local server speaking GitHub's REST API with a
real git object store), with a custom domain: the branch holds exactly the build and a
CNAME, and the answer gives the DNS records to set. A push GitHub refuses is refunded."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

GOALS_TESTS = Path(__file__).resolve().parents[2] / "goals" / "tests"
sys.path.insert(0, str(GOALS_TESTS))  # the GitHub stand-in and its connection helpers

from github_standin import GitHubStandin, github_standin, rsa_keypair  # noqa: E402
from site_support import FIVE_PAGES, balance, run_job  # noqa: E402
from test_connections import APP_ID, INSTALLATION, INSTALLER, connected, github_env  # noqa: E402

from tollway.testing import credits_session, http_client  # noqa: E402

WRITE = {"contents": "write", "pages": "write", "metadata": "read"}
PLUGINS = {"tollway_sites", "tollway_browser", "tollway_goals", "tollway_web"}


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    return rsa_keypair()


@pytest.fixture
def standin(keys: tuple[str, str]) -> Any:
    with github_standin(APP_ID, keys[1]) as server:
        server.install(INSTALLATION, "acme", ["ferries", "api"], WRITE, members=[INSTALLER])
        yield server


async def _kernel(kernel_factory: Any, standin: GitHubStandin, keys: tuple[str, str]) -> Any:
    env = {**github_env(standin, keys[0]), "TOLLWAY_LLM_BASE_URL": "http://127.0.0.1:9/v1", "TOLLWAY_LLM_MODEL": "none"}
    return await kernel_factory(installed=PLUGINS, env=env)


async def test_a_site_is_pushed_to_the_pages_branch_with_its_domain(kernel_factory, standin, keys):
    kernel = await _kernel(kernel_factory, standin, keys)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "10")
        connection_id = await connected(client, auth, standin)
        brief = {**FIVE_PAGES, "domain": "ferries.example.org",
                 "publish": {"connection_id": connection_id, "repository": "acme/ferries"}}  # fmt: skip
        job = await run_job(kernel, client, auth, "/v1/tools/website/build", brief)
        assert job["status"] == "completed", job
        site = job["result"]
        github = next(p for p in site["publications"] if p["kind"] == "github_pages")
        assert github["repository"] == "acme/ferries" and github["branch"] == "gh-pages"
        assert github["url"] == "https://ferries.example.org/"
        pushed = standin.files_at("acme/ferries", "gh-pages")
        assert set(pushed) == {*site["files"], "CNAME", ".nojekyll"}
        assert pushed["CNAME"] == b"ferries.example.org\n"
        served = await client.get("/sites/harbour-ferries/fares.html")
        assert pushed["fares.html"] == served.content
        assert b'<link rel="canonical" href="https://ferries.example.org/fares.html">' in pushed["fares.html"]
        assert b"<loc>https://ferries.example.org/timetable.html</loc>" in pushed["sitemap.xml"]
        records = {(r["type"], r["name"], r["value"]) for r in site["dns_records"]}
        assert ("A", "ferries.example.org", "185.199.108.153") not in records  # a subdomain: one CNAME
        assert ("CNAME", "ferries.example.org", "acme.github.io") in records
        assert await balance(client, auth) == "0.000000"


async def test_a_push_github_refuses_publishes_nothing_and_is_refunded(kernel_factory, standin, keys):
    kernel = await _kernel(kernel_factory, standin, keys)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "10")
        connection_id = await connected(client, auth, standin)
        brief = {**FIVE_PAGES, "publish": {"connection_id": connection_id, "repository": "acme/elsewhere"}}
        job = await run_job(kernel, client, auth, "/v1/tools/website/build", brief)
        assert job["status"] == "failed", job
        assert job["error_code"] == "invalid_input" and "could not be pushed to acme/elsewhere" in job["error"]
        assert await balance(client, auth) == "10.000000"
        assert (await client.get("/sites/harbour-ferries/")).status_code == 404
        standin.failing[("POST", "/repos/acme/ferries/git/blobs")] = 502
        brief["publish"]["repository"] = "acme/ferries"
        job = await run_job(kernel, client, auth, "/v1/tools/website/build", brief)
        assert job["status"] == "failed" and job["error_code"] == "provider_unavailable", job
        assert await balance(client, auth) == "10.000000"
