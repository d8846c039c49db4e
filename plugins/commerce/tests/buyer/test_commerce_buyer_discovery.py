"""ACP discovery, the buyer side: a merchant configured with its origin alone is completed from
its `/.well-known/acp.json` (API base, version, and the feed its Link names); the operator's
fields win; a merchant without discovery works with its fields; a bad or unreachable document
is refused saying what is wrong. Against the stand-in merchant (its document is the RFC's
example); the Tollway-to-Tollway test configures a Tollway seller by its origin alone."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from acp_discovery_schema import validate_discovery
from acp_merchant_standin import TOKEN, Merchant
from buyer_support import commerce_kernel

from tollway.testing import OPERATOR, http_client

PATH = "/v1/tools/internal/merchants"


def _origin_only(merchant: Merchant, **more: Any) -> dict[str, Any]:
    return {"id": "shop", "name": "Stand-in Shop", "base_url": merchant.url, "acp_token": TOKEN, **more}


async def _put(client: Any, body: dict[str, Any]) -> Any:
    return await client.post(PATH, json=body, headers=OPERATOR)


async def test_a_merchant_given_by_its_origin_is_completed_from_its_discovery(kernel_factory, merchant) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        validate_discovery((await http.get(f"{merchant.url}/.well-known/acp.json")).json())
    merchant.discovery_feed_link = True
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        put = await _put(client, _origin_only(merchant))
        assert put.status_code == 201, put.text
        shown = put.json()
        assert (shown["base_url"], shown["feed_url"], shown["api_version"]) == (
            merchant.url,
            f"{merchant.url}/feed",
            "2026-01-30",
        )
        read = await client.post(f"{PATH}/shop/feed/read", headers=OPERATOR)
        assert read.status_code == 200 and read.json()["feed"]["products"] == len(merchant.catalogue)


async def test_the_operators_fields_win_over_discovery(kernel_factory, merchant) -> None:
    merchant.discovery = merchant.discovery_document() | {"api_base_url": "https://elsewhere.example/acp"}
    merchant.discovery["protocol"] = {
        "name": "acp",
        "version": "2099-01-01",
        "supported_versions": ["2025-09-29", "2026-01-30", "2099-01-01"],
    }
    merchant.discovery_feed_link = True
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        # the latest version both sides speak, the document's API base for a bare origin
        found = (await _put(client, _origin_only(merchant))).json()
        assert (found["base_url"], found["api_version"]) == ("https://elsewhere.example/acp", "2026-01-30")
        # a base with a path, a feed and a version of the operator's: taken as given, nothing fetched
        reads = merchant.discovery_reads
        given = _origin_only(
            merchant, base_url=f"{merchant.url}/api", feed_url=f"{merchant.url}/other-feed", api_version="2025-09-29"
        )
        kept = await _put(client, given)
        assert kept.status_code == 200, kept.text
        assert (kept.json()["base_url"], kept.json()["feed_url"], kept.json()["api_version"]) == (
            f"{merchant.url}/api",
            f"{merchant.url}/other-feed",
            "2025-09-29",
        )
        assert merchant.discovery_reads == reads
        # a version the merchant does not list is refused
        refused = await _put(client, _origin_only(merchant, api_version="2024-01-01"))
        assert refused.status_code == 400 and refused.json()["details"][0]["field"] == "api_version"


@pytest.mark.parametrize("absent", [404, "html"])
async def test_a_merchant_without_discovery_works_with_its_fields(kernel_factory, merchant, absent) -> None:
    if absent == 404:
        merchant.discovery_status = 404
    else:
        merchant.discovery = b"<!doctype html><title>Shop</title>"
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        needs_feed = await _put(client, _origin_only(merchant))
        assert needs_feed.status_code == 400, needs_feed.text
        assert needs_feed.json()["details"][0]["field"] == "feed_url"
        assert "no ACP discovery document" in needs_feed.json()["message"]
        put = await _put(client, _origin_only(merchant, feed_url=f"{merchant.url}/feed"))
        assert put.status_code == 201, put.text
        assert (put.json()["base_url"], put.json()["api_version"]) == (merchant.url, "2026-01-30")


async def test_a_discovery_without_a_feed_link_needs_the_feed_url(kernel_factory, merchant) -> None:
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        refused = await _put(client, _origin_only(merchant))
        assert refused.status_code == 400
        assert refused.json()["details"][0]["field"] == "feed_url"
        assert "names no product feed" in refused.json()["message"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _document(name: str = "acp", versions: tuple[str, ...] = ("2026-01-30",), **more: Any) -> dict[str, Any]:
    """A discovery document, `more` replacing its transports or services."""
    return {
        "protocol": {"name": name, "version": versions[-1], "supported_versions": list(versions)},
        "api_base_url": "https://x.example",
        "transports": more.get("transports", ["rest"]),
        "capabilities": {"services": more.get("services", ["checkout"])},
    }


@pytest.mark.parametrize(
    ("change", "status", "said"),
    [
        ({"discovery_status": 500}, 502, "answered HTTP 500"),
        ({"discovery": {"api_base_url": "https://x.example", "transports": ["rest"]}}, 502, "protocol"),
        ({"discovery": _document(name="ucp")}, 502, "protocol.name"),
        ({"discovery": _document(transports=["mcp"])}, 502, "'rest'"),
        ({"discovery": _document(services=["carts"])}, 400, "no 'checkout' service"),
        ({"discovery": _document(versions=("2025-09-29",))}, 400, "merchant supports 2025-09-29"),
    ],
)
async def test_a_bad_discovery_document_is_refused_saying_what_is_wrong(
    kernel_factory, merchant, change, status, said
) -> None:
    for name, value in change.items():
        setattr(merchant, name, value)
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        refused = await _put(client, _origin_only(merchant, feed_url=f"{merchant.url}/feed"))
        assert refused.status_code == status, refused.text
        assert said in refused.json()["message"], refused.json()
        if status == 502:
            assert refused.json()["error"] == "discovery_unreadable"
            assert "/.well-known/acp.json" in refused.json()["message"]
        assert (await client.get(PATH, headers=OPERATOR)).json()["count"] == 0


async def test_an_unreachable_merchant_is_a_502(kernel_factory, merchant) -> None:
    kernel = await commerce_kernel(kernel_factory, merchant)
    async with http_client(kernel) as client:
        refused = await _put(client, _origin_only(merchant, base_url=f"http://127.0.0.1:{_closed_port()}"))
        assert refused.status_code == 502
        assert "could not be read" in refused.json()["message"]
