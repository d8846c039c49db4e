"""`GET /healthz` says the screening tools cannot answer while a list is out of date:
the service's status is `degraded` and the sanctions data source names the lists and
the tools that answer 503 `list_out_of_date` meanwhile; with fresh lists it is `ok`."""

from __future__ import annotations

import time

from tollway.testing import http_client
from tollway_sanctions import lists

TOOLS = ["company_sanctions", "person_sanctions"]


async def test_never_loaded_lists_make_the_service_degraded(kernel_factory, tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    kernel = await kernel_factory(installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": empty.as_uri()})
    async with http_client(kernel) as client:
        health = await client.get("/healthz")
        call = await client.post("/v1/tools/lookup/company-sanctions", json={"name": "Aerocaribbean Airlines"})
    assert call.status_code == 503 and call.json()["error"] == "list_out_of_date"
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "degraded"
    [source] = body["data_sources"]
    assert source["name"] == "sanctions" and source["status"] == "degraded" and source["tools"] == TOOLS
    assert (
        source["problem"]
        == "out of date (never loaded or older than 72 hours): OFAC SDN List, OFAC Consolidated Sanctions List (non-SDN)"
    )


async def test_fresh_lists_are_ok_and_a_stale_one_is_named(kernel_factory, ofac_folder, monkeypatch) -> None:
    kernel = await kernel_factory(
        installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": ofac_folder.as_uri()}
    )
    async with http_client(kernel) as client:
        fresh = (await client.get("/healthz")).json()
        monkeypatch.setattr(
            lists.store_of(kernel.context).lists["sdn"], "loaded_at", time.time() - lists.MAX_AGE_S - 60
        )
        stale = (await client.get("/healthz")).json()
    assert fresh["status"] == "ok"
    assert fresh["data_sources"] == [{"name": "sanctions", "status": "ok", "tools": TOOLS, "problem": None}]
    assert stale["status"] == "degraded"
    assert stale["data_sources"][0]["problem"] == "out of date (never loaded or older than 72 hours): OFAC SDN List"
