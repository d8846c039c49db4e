"""The `domains` provider kind and the domain expiry check: the RDAP client against a local
RDAP server (tests/rdap_standin.py, answering in RFC 9083's documented format) over real
HTTP, the DNS records a custom domain needs, and the `domain_expiring` notice read back
through GET /v1/tools/notifications as the site's owner, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from rdap_standin import RdapStandin, rdap_server

from tollway import AppConfig, hookimpl, now_ms
from tollway.testing import credits_session, http_client
from tollway_sites import domains, expiry
from tollway_sites.domains import (
    PAGES_A,
    PAGES_AAAA,
    DomainsUnavailable,
    RdapClient,
    dns_records,
    normalize,
    registrable_domain,
)
from tollway_sites.settings import SETTINGS
from tollway_sites.tables import TABLES, Site

DAY_MS = 86_400_000


@pytest.fixture
def rdap() -> Iterator[RdapStandin]:
    with rdap_server() as standin:
        yield standin


# -- the RDAP client ------------------------------------------------------------------------
async def test_a_registration_is_read_from_the_domain_object(rdap: RdapStandin) -> None:
    expires, registered = 1_830_000_000_000, 1_000_000_000_000
    rdap.add(
        "example.com",
        expires,
        registered_ms=registered,
        registrar="Example Registrar, Inc.",
        statuses=["client delete prohibited", "client transfer prohibited"],
    )
    async with httpx.AsyncClient() as http:
        found = await RdapClient(rdap.url, http).registration("Example.COM.")
    assert found is not None
    assert found.domain == "example.com"
    assert found.expires_ms == expires // 1000 * 1000  # RFC 3339 to the second
    assert found.registered_ms == registered
    assert found.registrar == "Example Registrar, Inc."
    assert found.statuses == ["client delete prohibited", "client transfer prohibited"]
    assert rdap.requests == [("/domain/example.com", "application/rdap+json")]


async def test_the_bootstrap_redirect_is_followed_to_the_registry(rdap: RdapStandin) -> None:
    rdap.add("example.org", 1_830_000_000_000)
    rdap.mode = "redirect"
    async with httpx.AsyncClient() as http:
        found = await RdapClient(rdap.url + "/", http).registration("example.org")
    assert found is not None and found.expires_ms == 1_830_000_000_000
    assert [path for path, _ in rdap.requests] == ["/domain/example.org", "/registry/domain/example.org"]


async def test_an_unregistered_domain_is_none(rdap: RdapStandin) -> None:
    async with httpx.AsyncClient() as http:
        assert await RdapClient(rdap.url, http).registration("nobody-registered-this.com") is None


async def test_a_registry_failure_is_domains_unavailable(rdap: RdapStandin) -> None:
    rdap.add("example.com", 1_830_000_000_000)
    rdap.mode = "fail"
    async with httpx.AsyncClient() as http:
        with pytest.raises(DomainsUnavailable) as failed:
            await RdapClient(rdap.url, http).registration("example.com")
    assert failed.value.code == "provider_unavailable" and failed.value.status == 503
    assert failed.value.details == {"reason": "upstream_status", "upstream_status": 503}


async def test_an_answer_that_is_not_rdap_and_an_unreachable_server_are_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"<html>not rdap</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        with pytest.raises(DomainsUnavailable) as failed:
            await RdapClient("http://rdap.test", http).registration("example.com")
    assert failed.value.reason == "malformed"
    async with httpx.AsyncClient() as http:  # nothing listens on port 9 of the loopback
        with pytest.raises(DomainsUnavailable) as failed:
            await RdapClient("http://127.0.0.1:9", http).registration("example.com")
    assert failed.value.reason == "unreachable"


async def test_an_internationalized_name_is_asked_in_its_ascii_form(rdap: RdapStandin) -> None:
    rdap.add("xn--bcher-kva.example", 1_830_000_000_000, unicode_name="bücher.example")
    async with httpx.AsyncClient() as http:
        found = await RdapClient(rdap.url, http).registration("Bücher.Example.")
    assert found is not None and found.domain == "xn--bcher-kva.example"
    assert rdap.requests[0][0] == "/domain/xn--bcher-kva.example"


def test_names_are_normalized_and_registered_domains_found() -> None:
    assert normalize(" WWW.Example.com. ") == "www.example.com"
    assert normalize("bücher.example") == "xn--bcher-kva.example"
    assert registrable_domain("blog.example.com") == "example.com"
    assert registrable_domain("www.example.co.uk") == "example.co.uk"
    assert registrable_domain("example.io") == "example.io"
    for bad in ("", "localhost", "exa mple.com", "-bad.com", "a..b.com"):
        with pytest.raises(ValueError):
            normalize(bad)


# -- DNS records ----------------------------------------------------------------------------
def test_an_apex_on_github_pages_gets_its_addresses_and_a_www_cname() -> None:
    records = dns_records("Example.com", target_host="tollway.example.net", github_pages_owner="Octo-Org")
    assert [(r["type"], r["name"], r["value"]) for r in records] == [
        *(
            ("A", "example.com", ip)
            for ip in ("185.199.108.153", "185.199.109.153", "185.199.110.153", "185.199.111.153")
        ),
        *(
            ("AAAA", "example.com", ip)
            for ip in ("2606:50c0:8000::153", "2606:50c0:8001::153", "2606:50c0:8002::153", "2606:50c0:8003::153")
        ),
        ("CNAME", "www.example.com", "octo-org.github.io"),
    ]
    assert len(PAGES_A) == len(PAGES_AAAA) == 4
    assert all(r["ttl"] == 3600 for r in records)


def test_a_subdomain_on_github_pages_gets_one_cname() -> None:
    records = dns_records("blog.example.co.uk", target_host="tollway.example.net", github_pages_owner="octocat")
    assert [(r["type"], r["name"], r["value"], r["ttl"]) for r in records] == [
        ("CNAME", "blog.example.co.uk", "octocat.github.io", 3600)
    ]


def test_a_site_served_here_gets_a_cname_or_an_alias_at_the_apex() -> None:
    sub = dns_records("www.example.com", target_host="https://tollway.example.net/", github_pages_owner=None)
    assert [(r["type"], r["name"], r["value"]) for r in sub] == [("CNAME", "www.example.com", "tollway.example.net")]
    (apex,) = dns_records("example.com", target_host="tollway.example.net", github_pages_owner=None)
    assert (apex["type"], apex["name"], apex["value"]) == ("ALIAS", "example.com", "tollway.example.net")
    assert "CNAME" in apex["note"] and "ANAME" in apex["note"] and "flattening" in apex["note"]
    (by_address,) = dns_records("example.com", target_host="http://203.0.113.7:8000", github_pages_owner=None)
    assert (by_address["type"], by_address["value"]) == ("A", "203.0.113.7")


# -- the expiry check -----------------------------------------------------------------------
APP = AppConfig(
    app_name="website",
    migrations_folder_path=str(Path(expiry.__file__).parent / "migrations"),
    table_classes=list(TABLES),
)


class DomainsPart:
    """The plugin's settings, tables, `domains` provider and expiry task, without its tools
    and routes (this module tests those parts alone)."""

    @hookimpl
    def register_settings(self, register: Any) -> None:
        for setting in SETTINGS:
            register(setting)

    @hookimpl
    def register_providers(self, register: Any) -> None:
        for provider in domains.PROVIDERS:
            register(provider)

    @hookimpl
    def register_migrations(self, register: Any) -> None:
        register(APP)

    @hookimpl
    def register_periodic_tasks(self, register: Any) -> None:
        for task in expiry.TASKS:
            register(task)


class WithoutProvider(DomainsPart):
    register_providers = None  # type: ignore[assignment]


async def _kernel(kernel_factory: Any, rdap: RdapStandin | None, part: object = None) -> Any:
    env = {"TOLLWAY_DOMAINS_RDAP_URL": rdap.url} if rdap is not None else {}
    return await kernel_factory(plugins=[("tollway_sites_domains", part or DomainsPart())], env=env)


async def _site(agent_id: str, domain: str, n: int = 1) -> str:
    site_id = f"site_{n:04d}"
    now = now_ms()
    await Site.insert(
        Site(
            id=site_id,
            agent_id=agent_id,
            slug=f"site-{n}",
            name="A site",
            brief="{}",
            version=1,
            request_id=f"req_{n}",
            domain=domain,
            created_ms=now,
            updated_ms=now,
        )
    )
    return site_id


async def _notices(client: Any, headers: dict[str, str]) -> list[dict[str, Any]]:
    listed = await client.get("/v1/tools/notifications?limit=100", headers=headers)
    assert listed.status_code == 200, listed.text
    return [n for n in listed.json()["notifications"] if n["type"] == "domain_expiring"]


@contextlib.asynccontextmanager
async def _owned_site(kernel_factory: Any, rdap: RdapStandin, domain: str, expires_ms: int) -> AsyncIterator[Any]:
    """A service whose RDAP server has `domain`'s registered domain lapse at `expires_ms`, and
    a site on `domain` owned by an agent: yields (kernel, client, the owner's headers, site id)."""
    rdap.add(registrable_domain(domain), expires_ms)
    kernel = await _kernel(kernel_factory, rdap)
    async with http_client(kernel) as client:
        agent_id, auth = await credits_session(client)
        yield kernel, client, auth, await _site(agent_id, domain)


async def test_a_lapsing_domain_is_told_once_and_again_after_a_renewal(kernel_factory, rdap: RdapStandin) -> None:
    now = now_ms()
    async with _owned_site(kernel_factory, rdap, "www.example.com", now + 10 * DAY_MS) as (
        kernel,
        client,
        auth,
        site_id,
    ):
        first = await expiry.check_due(kernel.context, now=now)
        assert (first.checked, first.failed, first.notified) == (1, 0, 1)
        assert rdap.requests[-1][0] == "/domain/example.com"  # the registered domain, not the www host
        again = await expiry.check_due(kernel.context, now=now + 2 * DAY_MS)  # read again a day later
        assert (again.checked, again.notified) == (1, 0)
        notes = await _notices(client, auth)
        assert len(notes) == 1
        meta = notes[0]["metadata"]
        assert meta["site_id"] == site_id and meta["domain"] == "www.example.com"
        assert meta["days_left"] == 10 and meta["expires_at"].startswith("20")
        row = await Site.select().where(Site.id == site_id).first()
        expires = (now + 10 * DAY_MS) // 1000 * 1000
        assert row["domain_expires_ms"] == row["domain_warned_ms"] == expires
        assert row["domain_checked_ms"] == now + 2 * DAY_MS

        # renewed for a year: nothing until that expiry comes within the window
        rdap.add("example.com", now + 375 * DAY_MS)
        renewed = await expiry.check_due(kernel.context, now=now + 4 * DAY_MS)
        assert (renewed.checked, renewed.notified) == (1, 0)
        late = now + 350 * DAY_MS
        told = await expiry.check_due(kernel.context, now=late)
        assert told.notified == 1
        assert await expiry.check_due(kernel.context, now=late + 2 * DAY_MS) == expiry.CheckReport(1, 0, 0)
        notes = await _notices(client, auth)
    assert len(notes) == 2 and notes[0]["metadata"]["days_left"] == 25


async def test_a_site_is_not_read_again_before_its_interval(kernel_factory, rdap: RdapStandin) -> None:
    now = now_ms()
    rdap.add("example.net", now + 200 * DAY_MS)
    kernel = await _kernel(kernel_factory, rdap)
    await _site("00000000-0000-4000-8000-000000000001", "example.net")
    assert (await expiry.check_due(kernel.context, now=now)).checked == 1
    assert (await expiry.check_due(kernel.context, now=now + 3_600_000)).checked == 0  # daily by default
    assert rdap.count == 1


async def test_a_far_expiry_tells_nobody(kernel_factory, rdap: RdapStandin) -> None:
    now = now_ms()
    async with _owned_site(kernel_factory, rdap, "example.org", now + 200 * DAY_MS) as (kernel, client, auth, site_id):
        assert await expiry.check_due(kernel.context, now=now) == expiry.CheckReport(1, 0, 0)
        assert await _notices(client, auth) == []
    row = await Site.select().where(Site.id == site_id).first()
    assert row["domain_expires_ms"] == (now + 200 * DAY_MS) // 1000 * 1000 and row["domain_warned_ms"] is None


async def test_a_failing_registry_skips_the_site_for_this_round(kernel_factory, rdap: RdapStandin, caplog) -> None:
    now = now_ms()
    rdap.add("example.com", now + 5 * DAY_MS)
    rdap.mode = "fail"
    caplog.set_level(logging.WARNING)
    kernel = await _kernel(kernel_factory, rdap)  # (no HTTP app: Litestar's logging set-up would take caplog's handler)
    site_id = await _site("00000000-0000-4000-8000-000000000001", "example.com")
    assert await expiry.check_due(kernel.context, now=now) == expiry.CheckReport(0, 1, 0)
    assert "example.com" in caplog.text and "503" in caplog.text
    row = await Site.select().where(Site.id == site_id).first()
    assert row["domain_checked_ms"] is None  # tried again next round
    rdap.mode = "redirect"
    assert await expiry.check_due(kernel.context, now=now + 60_000) == expiry.CheckReport(1, 0, 1)
    row = await Site.select().where(Site.id == site_id).first()
    assert row["domain_warned_ms"] == (now + 5 * DAY_MS) // 1000 * 1000


async def test_without_a_domains_provider_nothing_happens(kernel_factory, caplog) -> None:
    now = now_ms()
    caplog.set_level(logging.INFO)
    kernel = await _kernel(kernel_factory, None, WithoutProvider())
    await _site("00000000-0000-4000-8000-000000000001", "example.com")
    await expiry.check_domains(kernel.context)
    assert await expiry.check_due(kernel.context, now=now) == expiry.CheckReport()
    assert caplog.text.count("no domains provider is configured") == 1  # told once
    row = await Site.select().where(Site.domain == "example.com").first()
    assert row["domain_checked_ms"] is None and row["domain_expires_ms"] is None
