"""ACP discovery, the seller side (rfc.discovery): `GET /.well-known/acp.json` without any
credential, validated against the RFC's fields (acp_discovery_schema), each member the same
as what the service does: the versions its checkout gate accepts, an API base where the
checkout routes answer, the feed its Link header names; 503 while no PSP is configured."""

from __future__ import annotations

import uuid

from acp_discovery_schema import validate_discovery
from commerce_support import env_for, stripe_standin

from tollway.testing import http_client
from tollway_commerce import acp
from tollway_commerce.discovery import FEED_REL

PATH = "/.well-known/acp.json"


def _link(header: str) -> tuple[str, str]:
    target, _, params = header.partition(";")
    return target.strip().strip("<>"), params.strip().removeprefix("rel=").strip('"')


async def test_the_discovery_document_is_public_cacheable_and_says_what_the_routes_do(kernel_factory) -> None:
    async with stripe_standin() as stripe:
        kernel = await kernel_factory(installed={"tollway_commerce"}, env=env_for(stripe))
        async with http_client(kernel) as client:
            answer = await client.get(PATH)
            assert answer.status_code == 200, answer.text
            assert answer.headers["content-type"].startswith("application/json")
            assert answer.headers["cache-control"] == "public, max-age=3600"
            document = answer.json()
            validate_discovery(document)
            assert document["protocol"]["supported_versions"] == sorted(acp.SUPPORTED_VERSIONS)
            assert document["protocol"]["version"] == acp.API_VERSION
            assert document["api_base_url"] == "https://shop.example.com/v1"
            assert document["transports"] == ["rest"]
            assert document["capabilities"] == {
                "services": ["checkout", "feeds"],
                "intervention_types": ["3ds"],
                "supported_currencies": ["usd"],
            }
            # §7.1: no payment handler, PSP or merchant identifier
            for word in ("stripe", "handler", "acct_", "psp", "merchant_id"):
                assert word not in answer.text
            # the API base is where the checkout routes are: each version the document lists is accepted
            path = document["api_base_url"].removeprefix("https://shop.example.com") + "/checkout_sessions"
            for version in document["protocol"]["supported_versions"]:
                refused = await client.post(
                    path,
                    json={},
                    headers={"API-Version": version, "Idempotency-Key": str(uuid.uuid4())},
                )
                assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
            # the feed the Link header names answers FeedMetadata, its products beside it
            feed, rel = _link(answer.headers["link"])
            assert rel == FEED_REL and feed == "https://shop.example.com/v1/commerce/feed"
            local = feed.removeprefix("https://shop.example.com")
            assert (await client.get(local)).json()["id"] == "tollway"
            assert (await client.get(local + "/products")).json()["products"]


async def test_without_a_psp_discovery_answers_503_to_retry_and_not_to_cache(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_commerce"}, env=env_for(None))
    async with http_client(kernel) as client:
        answer = await client.get(PATH)
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "60" and answer.headers["cache-control"] == "no-store"
        assert answer.json()["type"] == "service_unavailable" and answer.json()["code"] == "provider_unavailable"
