"""Person enrichment through HTTP (both databases) against a local server speaking People
Data Labs' API: a profile from an email or a profile URL, a work email from a name and a
domain (only one at that domain), nothing found is enrichment_exhausted and not charged,
provider failures are not charged, and the API key never shows."""

from __future__ import annotations

import logging

import pytest
from pdl_standin import KEY, pdl_standin

from tollway.testing import PluginContract, credits_session, http_client


@pytest.fixture
def standin():
    with pdl_standin() as server:
        yield server


def env(url: str) -> dict[str, str]:
    return {"TOLLWAY_ENRICHMENT_PDL_API_KEY": KEY, "TOLLWAY_ENRICHMENT_PDL_API_URL": url}


async def test_profiles_and_emails(kernel_factory, standin, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    kernel = await kernel_factory(installed={"tollway_enrich"}, env=env(standin.url))
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client, "1")
        by_email = await client.post(
            "/v1/tools/enrich/profile", json={"email": "dana.reyes@example.com"}, headers=headers
        )
        by_url = await client.post(
            "/v1/tools/enrich/profile", json={"profile_url": "linkedin.com/in/dana-reyes"}, headers=headers
        )
        found = await client.post(
            "/v1/tools/enrich/email", json={"name": "Dana Reyes", "company_domain": "Example.com"}, headers=headers
        )
        nobody = await client.post("/v1/tools/enrich/profile", json={"email": "nobody@example.com"}, headers=headers)
        elsewhere = await client.post(
            "/v1/tools/enrich/email", json={"name": "Dana Reyes", "company_domain": "other.example"}, headers=headers
        )
        both = await client.post(
            "/v1/tools/enrich/profile",
            json={"email": "a@example.com", "profile_url": "linkedin.com/in/x"},
            headers=headers,
        )
        balance = (await client.get("/v1/balance", headers=headers)).json()
    data = by_email.json()["data"]
    assert (
        by_email.status_code == 200
        and data["full_name"] == "dana reyes"
        and data["company_domain"] == "example.com"
        and data["likelihood"] == 9
    )
    assert "personal_emails" not in data and "phone_numbers" not in data  # work-profile fields only
    assert by_url.json()["data"]["work_email"] == "dana.reyes@example.com"
    assert found.status_code == 200 and found.json()["data"]["email"] == "dana.reyes@example.com"
    assert nobody.status_code == 404 and nobody.json()["error"] == "enrichment_exhausted"
    assert elsewhere.status_code == 404 and elsewhere.json()["error"] == "enrichment_exhausted"
    assert both.status_code == 400
    assert balance["credits_balance"] == "0.850000"  # three answers at 0.05; the misses cost nothing
    assert {q.get("min_likelihood") for q in standin.queries} == {"6"}
    assert KEY not in caplog.text


@pytest.mark.parametrize(
    ("status", "code"), [(429, "rate_limited"), (500, "provider_unavailable"), (401, "provider_auth")]
)
async def test_provider_failures_are_not_charged(kernel_factory, standin, status, code) -> None:
    standin.status = status
    kernel = await kernel_factory(installed={"tollway_enrich"}, env=env(standin.url))
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client, "1")
        failed = await client.post(
            "/v1/tools/enrich/profile", json={"email": "dana.reyes@example.com"}, headers=headers
        )
        balance = (await client.get("/v1/balance", headers=headers)).json()
    assert failed.json()["error"] == code and KEY not in failed.text
    assert balance["credits_balance"] == "1.000000"


async def test_without_a_key_the_tools_are_refused_before_payment(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_enrich"})
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/enrich/profile", json={"email": "dana.reyes@example.com"})
    assert resp.status_code == 503 and resp.json()["error"] == "provider_unavailable"


class TestEnrichContract(PluginContract):
    plugin = "tollway_enrich"
    env = {"TOLLWAY_ENRICHMENT_PDL_API_KEY": KEY, "TOLLWAY_ENRICHMENT_PDL_API_URL": "http://127.0.0.1:9"}
