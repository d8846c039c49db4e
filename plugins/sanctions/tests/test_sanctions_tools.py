"""The two tools through the kernel (SQLite and PostgreSQL): refusals before
payment (400, 503 list_out_of_date), a paid answer and its snapshot, refresh
from OFAC's real URLs through an httpx.MockTransport serving the recorded files,
persistence under TOLLWAY_HOME and the 72-hour freshness rule."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import PluginContext, ToolContext
from tollway.testing import count_quotes, count_receipts, credits_session, http_client
from tollway_sanctions import lists
from tollway_sanctions.tool import SanctionsInput, screening_tool

OFAC_BASE = "https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports"


def ofac_transport(seen: list[str], missing: set[str] = frozenset()) -> httpx.MockTransport:
    files = {p.name: p for p in FOLDER[0].iterdir()}

    def handler(request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        seen.append(url)
        assert request.method == "GET" and url.startswith(OFAC_BASE + "/")
        name = url.rsplit("/", 1)[1]
        if name in missing or name not in files:
            return httpx.Response(404, content=b"Not Found")
        return httpx.Response(
            200, content=files[name].read_bytes(), headers={"last-modified": "Wed, 07 Jul 2021 12:00:00 GMT"}
        )

    return httpx.MockTransport(handler)


FOLDER: list[Path] = []


@pytest.fixture(autouse=True)
def _folder(ofac_folder) -> None:
    FOLDER[:] = [ofac_folder]


def context_reading(store: lists.ListStore) -> PluginContext:
    """A service's context whose tools read `store` (as the plugin's startup leaves it)."""
    context = PluginContext(home=store.root.parent, offline=True, settings_of=lambda family: {})
    context.state.set(lists.STORE, store)
    return context


def source_files() -> dict[str, Path]:
    return {p.name: p for p in FOLDER[0].iterdir()}


@pytest.fixture
async def kernel(kernel_factory, ofac_folder):
    return await kernel_factory(
        installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": ofac_folder.as_uri()}
    )


async def test_paid_answer_shape_and_facts(kernel) -> None:
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(
            "/v1/tools/lookup/person-sanctions", json={"name": "Nicolas Maduro", "limit": 1}, headers=auth
        )
        company = await client.post(
            "/v1/tools/lookup/company-sanctions", json={"name": "Nicolas Maduro Moros"}, headers=auth
        )
        balance = (await client.get("/v1/balance", headers=auth)).json()
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["tool"] == "person_sanctions" and data["status"] == "completed"
    assert data["request_id"] and data["receipt_id"]
    assert data["total"] >= 1 and len(data["matches"]) == 1
    match = data["matches"][0]
    assert match["entry"]["number"] == 22790 and match["matched_name"] == "MADURO MOROS, Nicolas"
    assert 0.85 <= match["score"] < 1
    assert [l["name"] for l in data["lists"]] == [s.name for s in lists.LISTS]
    # no match is a completed, charged answer with total 0
    assert company.status_code == 200
    assert company.json()["data"]["total"] == 0 and company.json()["data"]["matches"] == []
    assert balance["credits_balance"] == "0.980000"  # two calls at 0.01


async def test_unpaid_call_is_quoted_at_the_price(kernel) -> None:
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/company-sanctions", json={"name": "Aerocaribbean Airlines"})
    assert resp.status_code == 402 and resp.json()["amount_usdc"] in ("0.01", "0.010000")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": "A"}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "--"}, "name"),
        ({"name": "Al"}, "name"),  # one word, fewer than 3 letters
        ({"name": "A1"}, "name"),
        ({"name": "Maduro", "min_score": 0.49}, "min_score"),
        ({"name": "Maduro", "min_score": 1.01}, "min_score"),
        ({"name": "Maduro", "limit": 0}, "limit"),
        ({"name": "Maduro", "limit": 26}, "limit"),
    ],
)
async def test_bad_input_is_400_before_payment(kernel, body, field) -> None:
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/person-sanctions", json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == "invalid_request"
    assert resp.json()["details"][0]["field"] == field
    assert await count_quotes(kernel) == 0


def test_accepted_names(loaded_store) -> None:
    from tollway_sanctions.tool import check

    context = context_reading(loaded_store)
    for name in ("Li Wei", "Abu", "Co Ltd", "Ali 7", "  Nicolás  "):
        check(context, msgspec.convert({"name": name, "min_score": 1}, SanctionsInput, strict=True))


async def test_never_loaded_is_503_before_payment(kernel_factory, tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    kernel = await kernel_factory(installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": empty.as_uri()})
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/company-sanctions", json={"name": "Aerocaribbean Airlines"})
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["error"] == "list_out_of_date"
    assert body["details"]["lists"] == [s.name for s in lists.LISTS]
    assert "OFAC SDN List" in body["message"]
    assert "PAYMENT-REQUIRED" not in resp.headers
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


async def test_stale_list_is_503_naming_only_it(kernel, monkeypatch) -> None:
    store = lists.store_of(kernel.context)
    sdn = store.lists["sdn"]
    monkeypatch.setattr(sdn, "loaded_at", time.time() - lists.MAX_AGE_S - 60)
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/person-sanctions", json={"name": "Nicolas Maduro"})
    assert resp.status_code == 503 and resp.json()["details"]["lists"] == ["OFAC SDN List"]
    assert await count_quotes(kernel) == 0


async def test_refresh_from_ofac_urls_persists_and_reloads(tmp_path) -> None:
    seen: list[str] = []
    progress: list[tuple[str, int, int | None]] = []
    async with httpx.AsyncClient(transport=ofac_transport(seen)) as http:
        store = lists.ListStore(tmp_path)
        results = await lists.refresh(store, {}, http=http, progress=lambda f, d, t: progress.append((f, d, t)))
    assert results == {s.name: None for s in lists.LISTS}
    publications = {s.publication for s in lists.LISTS}  # asked for the lists' dates; not served here (404)
    assert sorted(u.rsplit("/", 1)[1] for u in seen) == sorted([*source_files(), *publications])
    assert {f for f, _, _ in progress} == set(source_files())
    assert store.out_of_date() == []
    # the files' Last-Modified is not OFAC's publication date, and none could be read: unknown
    assert store.checked()[0] == {"name": "OFAC SDN List", "as_of": None}
    meta = json.loads((tmp_path / "sanctions" / "sdn" / "meta.json").read_text())
    assert meta["url"] == OFAC_BASE
    # a new process finds the lists, with their original load time, under TOLLWAY_HOME
    again = lists.ListStore(tmp_path)
    assert again.load_persisted() == ["sdn", "consolidated"]
    assert again.lists["sdn"].loaded_at == store.lists["sdn"].loaded_at
    assert len(again.lists["sdn"].entries) == 8976 and len(again.lists["consolidated"].entries) == 442


async def test_failed_download_keeps_the_previous_load(tmp_path) -> None:
    seen: list[str] = []
    store = lists.ListStore(tmp_path)
    async with httpx.AsyncClient(transport=ofac_transport(seen)) as http:
        await lists.refresh(store, {}, http=http)
    before = store.lists["consolidated"].loaded_at
    async with httpx.AsyncClient(transport=ofac_transport(seen, missing={"cons_alt.csv"})) as http:
        results = await lists.refresh(store, {}, http=http)
    assert results["OFAC SDN List"] is None
    assert "404" in results["OFAC Consolidated Sanctions List (non-SDN)"]
    assert store.lists["consolidated"].loaded_at == before  # freshness not renewed


async def test_kernel_downloads_at_startup_from_ofac(kernel_factory) -> None:
    """OFAC's real URLs, answered by the replay transport (so not offline here)."""
    seen: list[str] = []
    kernel = await kernel_factory(
        installed={"tollway_sanctions"}, transport=ofac_transport(seen), env={"TOLLWAY_OFFLINE": ""}
    )
    from tollway_sanctions.plugin import refresh_task

    await refresh_task(kernel.context)  # what the scheduler runs at start and daily
    assert lists.store_of(kernel.context).out_of_date() == []
    async with http_client(kernel) as client:
        resp = await client.post("/v1/tools/lookup/person-sanctions", json={"name": "Ayman al Zawahiri"})
    assert resp.status_code == 402


async def test_offline_kernel_starts_no_download(kernel_factory, tmp_path) -> None:
    seen: list[str] = []
    kernel = await kernel_factory(installed={"tollway_sanctions"}, transport=ofac_transport(seen))  # TOLLWAY_OFFLINE=1
    from tollway_sanctions.plugin import refresh_task

    await refresh_task(kernel.context)
    await asyncio.sleep(0.05)
    assert seen == []


async def test_answer_snapshot(loaded_store, snapshot) -> None:
    person_sanctions = screening_tool(context_reading(loaded_store), person=True)
    ctx = ToolContext(request_id="req_test", agent_id=None, http=None, settings={})  # type: ignore[arg-type]
    value = msgspec.convert({"name": "Ayman al-Zawahiri", "limit": 3}, SanctionsInput, strict=True)
    answer = msgspec.to_builtins(await person_sanctions.run(value, ctx))
    for item in answer["lists"]:
        item["as_of"] = "<as_of>"
    assert answer == snapshot
    facts = person_sanctions.facts(value, await person_sanctions.run(value, ctx))
    assert [f.key for f in facts][0] == "2676"
    assert facts[0].attribute == "person_sanctions" and facts[0].source == "OFAC"
    assert facts[0].value["list"] == "OFAC SDN List" and facts[0].value["number"] == 2676


def test_prices_and_declarations() -> None:
    context = PluginContext(home=Path("unused"), offline=True, settings_of=lambda family: {})
    for tool in (screening_tool(context, person=False), screening_tool(context, person=True)):
        assert tool.quote(SanctionsInput(name="Maduro")) == 10_000
        assert (tool.payment_header, tool.rate_limit, tool.mode, tool.category) == (
            "payment-signature",
            "lookup",
            "inline",
            "verification",
        )


def test_an_entry_number_on_both_lists_is_found_on_the_list_whose_entry_it_is(tmp_path, ofac_folder) -> None:
    """OFAC numbers are unique, but the fixture years overlap: 28603 stands on the 2021 SDN
    file and on the 2025 consolidated file with different entries. The fact recorded for
    a match must name the list the matched entry is on."""
    from tollway_sanctions import lists as lists_module

    store = lists_module.ListStore(tmp_path / "home")
    assert store.load_local(ofac_folder.as_uri()) == {spec.name: None for spec in lists_module.LISTS}
    sdn, consolidated = store.lists["sdn"].entry(28603), store.lists["consolidated"].entry(28603)
    assert sdn is not None and consolidated is not None and sdn != consolidated
    assert store.find(28603, consolidated)[0].key == "consolidated"
    assert store.find(28603, sdn)[0].key == "sdn"
    assert store.find(28603)[0].key == "sdn"
