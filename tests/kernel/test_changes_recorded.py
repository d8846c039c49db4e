"""Changes over real recorded answers, replayed through the plugins that read them
(files kept beside each plugin's tests, see their fixtures/README.md):

* OFAC's SDN list as published in July 2021 and as published in May 2025: the
  entities whose entries OFAC changed between the two show the real changed fields,
  and an entity OFAC left alone shows none;
* two captures of vPIC's decoding of one VIN, three weeks apart in 2021: vPIC added
  variables in between, but none the tool reads, so no change is recorded;
* an FDIC institution row, searched by name: the search is found by its input.

The store stamps each fact with the day it was written (today, in a test); the
sanctions test moves each row to the day its list was published, with SQL, so the
window reads as the real history would.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any

import msgspec

from tests.support.replay import Recording, Replay, recorded_file
from tollway import search_key
from tollway._core.storage import sql
from tollway.testing import credits_session, http_client
from tollway_banks import fdic
from tollway_banks.tool import BankProfileInput
from tollway_sanctions import lists, ofac

CHANGES = "/v1/tools/changes"
SDN_2021, SDN_2025 = ("ofac", "sdn_2021-07"), ("ofac", "sdn_sample_small")
PUBLISHED = {SDN_2021: "2021-07-07", SDN_2025: "2025-05-16"}  # the days the two lists were recorded


def today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


async def move_to_day(fact_id: int, day: str) -> None:
    ms = int(dt.datetime.fromisoformat(day + "T12:00:00+00:00").timestamp() * 1000)
    await sql.fetch("UPDATE tw_facts SET changed_on = {}, first_seen_ms = {} WHERE id = {}", day, ms, fact_id)


async def fact_ids(attribute: str, key: str) -> list[int]:
    rows = await sql.fetch(
        "SELECT id FROM tw_facts WHERE attribute = {} AND entity_key = {} ORDER BY id", attribute, key
    )
    return [int(r["id"]) for r in rows]


# -- OFAC ------------------------------------------------------------------------------------------
def sdn_files(folder: tuple[str, str]) -> dict[str, Path]:
    return {name: recorded_file("sanctions", *folder, name) for name in lists.LISTS[0].files}


def install_lists(target: Path, sdn: tuple[str, str]) -> None:
    """The OFAC export folder as a mirror serves it: one SDN set and the consolidated list."""
    target.mkdir(parents=True, exist_ok=True)
    for name, path in sdn_files(sdn).items():
        shutil.copyfile(path, target / name)
    for name in lists.LISTS[1].files:
        shutil.copyfile(recorded_file("sanctions", "ofac", "consolidated_non_sdn_2025-12", name), target / name)


def sdn_entry(folder: tuple[str, str], number: int) -> dict[str, Any]:
    """An entry as the plugin reads it from that recorded list, with the list's name (the fact's value)."""
    files = sdn_files(folder)
    parsed = ofac.parse_list(*(files[n].read_bytes() for n in lists.LISTS[0].files), names=lists.LISTS[0].files)
    return {"list": lists.LISTS[0].name, **msgspec.to_builtins(parsed[number].entry)}


async def test_changes_of_sanctioned_entries_between_two_published_lists(kernel_factory, tmp_path) -> None:
    folder = tmp_path / "ofac"
    install_lists(folder, SDN_2021)
    kernel = await kernel_factory(installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": folder.as_uri()})
    screened = {  # entries found only on the SDN list (an entry on both lists is read from the consolidated one)
        29702: ("person_sanctions", "LIFSHITS, Artem Mikhaylovich"),
        11195: ("company_sanctions", "IRAN AIRCRAFT MANUFACTURING INDUSTRIAL COMPANY"),
        12685: ("company_sanctions", "GADDAFI INTERNATIONAL CHARITY AND DEVELOPMENT FOUNDATION"),
    }
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)

        async def screen_all() -> dict[int, Any]:
            answers = {}
            for number, (tool, name) in screened.items():
                resp = await client.post(kernel.tools[tool].path, json={"name": name, "limit": 1}, headers=auth)
                assert resp.status_code == 200, resp.text
                answers[number] = resp.json()["data"]
                assert answers[number]["matches"][0]["entry"]["number"] == number
            return answers

        await screen_all()
        install_lists(folder, SDN_2025)  # OFAC publishes a new list; the operator reloads it
        await kernel.data_sources["sanctions"].refresh(kernel.context, lambda done, total, what: None)
        second = await screen_all()
        for number, (tool, _) in screened.items():
            for fact_id, folder_name in zip(await fact_ids(tool, str(number)), (SDN_2021, SDN_2025)):
                await move_to_day(fact_id, PUBLISHED[folder_name])

        async def changes(number: int, **window: str) -> dict[str, Any]:
            body = {"attribute": screened[number][0], "key": str(number), **window}
            resp = await client.post(CHANGES, json=body, headers=auth)
            assert resp.status_code == 200, resp.text
            return resp.json()["data"]

        lifshits = await changes(29702, since="2021-01-01")
        iran = await changes(11195, since="2021-07-07")
        gaddafi = await changes(12685, since="2021-01-01")
        between = await changes(29702, since="2021-07-08", until="2025-05-15")
    sdn_as_of = next(c["as_of"] for c in second[29702]["lists"] if c["name"] == lists.LISTS[0].name)

    # Lifshits: OFAC rewrote only the remarks (an address corrected, a secondary-sanctions warning added)
    old, new = sdn_entry(SDN_2021, 29702), sdn_entry(SDN_2025, 29702)
    assert lifshits["changes"] == [
        {
            "changed_on": "2025-05-16",
            "field": "remarks",
            "before": old["remarks"],
            "after": new["remarks"],
            "source": "OFAC",
            "as_of": sdn_as_of,
        }
    ]
    assert (
        "Secondary sanctions risk: Ukraine-/Russia-Related" in new["remarks"]
        and "Secondary sanctions risk" not in old["remarks"]
    )
    assert lifshits["recorded_since"] == "2021-07-07" and lifshits["partial"] is True and lifshits["truncated"] is False

    # Iran Aircraft Manufacturing: several fields at once, so one `$` row with both whole entries
    [row] = iran["changes"]
    assert row["field"] == "$" and row["changed_on"] == "2025-05-16" and iran["partial"] is False
    assert row["before"] == sdn_entry(SDN_2021, 11195) and row["after"] == sdn_entry(SDN_2025, 11195)
    assert row["before"]["programs"] == ["NPWMD", "IFSR"] and row["after"]["programs"] == [
        "NPWMD",
        "IFSR",
        "IRAN-CON-ARMS-EO",
    ]

    # An entry OFAC did not touch: one record, no change
    assert sdn_entry(SDN_2021, 12685) == sdn_entry(SDN_2025, 12685)
    assert gaddafi["changes"] == [] and gaddafi["recorded_since"] == "2021-07-07"
    assert between["changes"] == [] and between["recorded_since"] == "2021-07-07"


# -- vPIC -------------------------------------------------------------------------------------------
VIN = "1FTMW1T88MFA00001"
VPIC_URL = f"https://vpic.nhtsa.dot.gov/api/vehicles/DecodeVinValues/{VIN}"


def vpic_capture(day: str) -> bytes:
    """vPIC's answer as captured on `day` (the capture file keeps it under `content`)."""
    capture = json.loads(recorded_file("vehicles", "vpic_api_2021", f"decode-vin_{day}.json").read_bytes())
    assert capture["url"] == VPIC_URL + "?format=json"
    return json.dumps(capture["content"]).encode()


async def test_a_vin_whose_source_changed_nothing_the_tool_reads(kernel_factory) -> None:
    replay = Replay(Recording("GET", VPIC_URL, {"format": "json"}, vpic_capture("2021-05-05")))
    # vPIC's answer changes between the two lookups: no reusing the first answer
    kernel = await kernel_factory(
        installed={"tollway_vehicles"}, transport=replay, env={"TOLLWAY_UPSTREAM_CACHE_S": "0"}
    )
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        first = await client.post("/v1/tools/lookup/vehicle-identification", json={"vin": VIN}, headers=auth)
        replay.recordings[0] = Recording("GET", VPIC_URL, {"format": "json"}, vpic_capture("2021-05-31"))
        second = await client.post("/v1/tools/lookup/vehicle-identification", json={"vin": VIN.lower()}, headers=auth)
        data = (
            await client.post(
                CHANGES, json={"attribute": "vehicle_identification", "key": VIN, "since": today()}, headers=auth
            )
        ).json()["data"]
    assert len(replay.served) == 2 and not replay.unexpected
    one, two = (json.loads(vpic_capture(d))["Results"][0] for d in ("2021-05-05", "2021-05-31"))
    assert set(two) - set(one) == {"BlindSpotIntervention", "LaneCenteringAssistance", "RearAutomaticEmergencyBraking"}
    assert first.json()["data"]["result"] == second.json()["data"]["result"]
    assert first.json()["data"]["result"]["trim"] == "SuperCrew-SSV"
    assert data["changes"] == [] and data["recorded_since"] == today() and data["partial"] is False
    assert len(await fact_ids("vehicle_identification", VIN)) == 1


# -- FDIC -------------------------------------------------------------------------------------------
def hancock_item() -> dict[str, Any]:
    """The real `/institutions` item for CERT 10057 printed in the bankfind docs (a Python dict repr)."""
    text = recorded_file("banks", "fdic", "bankfind_docs_2020", "bankfind_functions_example_rows.md").read_text()
    section = text.split("## **get_institutions**", 1)[1].split("## **get_locations**", 1)[0]
    block = re.search(r'=== "Data"\s*```python\n(.*?)```', section, re.DOTALL)
    assert block is not None
    return ast.literal_eval(block.group(1).strip())


def institutions_answer(items: list[dict[str, Any]]) -> bytes:
    """FDIC's documented envelope around real rows (meta, data, totals: built, not recorded)."""
    meta = {
        "total": len(items),
        "parameters": {},
        "index": {"name": "20200808_institutions", "createTimestamp": "2020-08-08T00:00:00.000Z"},
    }
    return json.dumps({"meta": meta, "data": items, "totals": {"count": len(items)}}).encode()


async def test_a_bank_search_is_found_by_its_input_and_its_bank_by_certificate(kernel_factory) -> None:
    name = "Bank of Hancock County"
    query = fdic.query_params(name=name, certificate=None, limit=5, api_key=None)
    replay = Replay(
        Recording("GET", "https://api.fdic.gov/banks/institutions", query, institutions_answer([hancock_item()]))
    )
    kernel = await kernel_factory(installed={"tollway_banks"}, transport=replay)
    async with http_client(kernel) as client:
        _, auth = await credits_session(client)
        looked_up = await client.post("/v1/tools/lookup/company-bank-profile", json={"name": name}, headers=auth)
        assert looked_up.status_code == 200, looked_up.text

        async def changes(**fields: Any):
            return await client.post(
                CHANGES, json={"attribute": "company_bank_profile", "since": today(), **fields}, headers=auth
            )

        by_input = await changes(input={"name": name, "limit": 5, "memo": "audit fields never count"})
        by_default_input = await changes(input={"name": name})
        by_certificate = await changes(key="10057")
        other_search = await changes(input={"name": "Bank of Sparta"})
        refused = await changes(input={"name": "B"})
        both = await changes(input={"name": name, "fdic_certificate": 10057})
    assert not replay.unexpected and looked_up.json()["data"]["result"]["banks"][0]["fdic_certificate"] == 10057
    expected_key = search_key(BankProfileInput(name=name))
    for resp in (by_input, by_default_input):
        data = resp.json()["data"]
        assert (
            data["key"] == expected_key
            and data["recorded_since"] == today()
            and data["changes"] == []
            and data["partial"] is False
        )
    assert (
        by_certificate.json()["data"]["key"] == "10057" and by_certificate.json()["data"]["recorded_since"] == today()
    )
    # a search never made has no history: refused before payment, as Benchmark refuses nothing recorded
    assert (
        other_search.status_code == 400
        and other_search.json()["error"] == "no_data"
        and "receipt_id" not in other_search.json()
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_input"
    assert [d["field"] for d in refused.json()["details"]] == ["input.name"]
    assert both.status_code == 400 and both.json()["details"][0]["field"].startswith("input.")
