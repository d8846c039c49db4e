"""The sanctions lists as a watch source, as callers of the watch resource meet it.

Over two real consecutive loads, the SDN list of January 2019 then of July 2021 (the
consolidated list the same in both): the poll after the switch reports the entries added,
removed and changed; a watch on an entry that changed is told that change, one on an entry
removed `$entity` not listed, one on an unchanged entry nothing. A key that is not an OFAC
entry number is refused in a sentence that reads after the field's name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from eth_account import Account

from tollway.testing import credits_session, http_client, proof_headers
from tollway_sanctions.ofac import parse_list

WATCH = "/v1/tools/watch"
OFAC = Path(__file__).resolve().parent / "fixtures" / "ofac"
CONSOLIDATED = OFAC / "consolidated_non_sdn_2025-12"
SDN_2019 = OFAC / "sdn_2019-01"
SDN_2021 = OFAC / "sdn_2021-07"
CHANGED, REMOVED, UNCHANGED = (
    "2674",
    "1544",
    "173",
)  # ABBAS, Abu; NAVIERA MARITIMA DE AROSA, S.A.; ANGLO-CARIBBEAN CO., LTD.


async def create_watch(client: Any, account: Any, key: str) -> Any:
    """POST a watch on the company entry `key`, signed by `account` (a write proof)."""
    raw = json.dumps(
        {"entity_type": "company", "attribute": "us_treasury_sanctions", "key": key, "max_spend": 1}
    ).encode()
    headers = proof_headers(account, scope="write", method="POST", path=WATCH, body=raw)
    return await client.post(WATCH, content=raw, headers={**headers, "content-type": "application/json"})


def use_lists(folder: Path, sdn: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for source in (sdn, CONSOLIDATED):
        for f in source.iterdir():
            if f.suffix == ".csv":
                shutil.copyfile(f, folder / f.name)


def _entries(folder: Path, names: tuple[str, ...]) -> dict:
    return parse_list(*[(folder / n).read_bytes() for n in names], names=names)


def expected_changes() -> int:
    """Entries added, removed or changed between the two SDN lists, counted from the
    parsed entries themselves; numbers also on the consolidated list (four entries moved
    there by 2025) are that list's, the same in both loads."""
    sdn = ("sdn.csv", "add.csv", "alt.csv", "sdn_comments.csv")
    old, new = _entries(SDN_2019, sdn), _entries(SDN_2021, sdn)
    consolidated = set(_entries(CONSOLIDATED, ("cons_prim.csv", "cons_add.csv", "cons_alt.csv", "cons_comments.csv")))
    keys = (set(old) | set(new)) - consolidated
    return sum(1 for k in keys if k not in old or k not in new or old[k].entry != new[k].entry)


async def test_two_real_loads_diff_into_the_watched_entries_changes(kernel_factory, tmp_path) -> None:
    folder = tmp_path / "ofac-mirror"
    use_lists(folder, SDN_2019)
    kernel = await kernel_factory(installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": folder.as_uri()})
    baseline = await kernel.watch_polling.poll("us_treasury_sanctions")
    assert baseline.changes_detected == 0
    wallet = Account.create()
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, wallet=wallet.address)
        for key in (CHANGED, REMOVED, UNCHANGED):
            created = await create_watch(client, wallet, key)
            assert created.status_code == 201, created.text
        use_lists(folder, SDN_2021)
        report = await kernel.watch_polling.poll("us_treasury_sanctions")
        assert report.changes_detected == expected_changes() == 2960
        assert await kernel.watch_deliveries.run_pending() == 2
        listed = await client.get("/v1/tools/notifications", headers=auth)
        assert listed.status_code == 200, listed.text
        again = await kernel.watch_polling.poll("us_treasury_sanctions")
    assert again.changes_detected == 0
    told = [n["metadata"] for n in listed.json()["notifications"] if n["type"] == "watch_change"]
    got = {n["key"]: n["change"] for n in told}
    assert set(got) == {CHANGED, REMOVED} and len(told) == 2
    assert (got[CHANGED]["field"], got[CHANGED]["before"], got[CHANGED]["after"]) == ("programs[0]", "SDT", "SDGT")
    assert (got[REMOVED]["field"], got[REMOVED]["before"], got[REMOVED]["after"]) == ("$entity", "listed", "not_listed")
    assert got[CHANGED]["source"] == "OFAC"


async def test_a_key_that_is_no_entry_number_is_refused_in_a_readable_sentence(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_sanctions"})
    async with http_client(kernel) as client:
        r = await create_watch(client, Account.create(), "OFAC-2676")
    says = "must be an OFAC entry number (ent_num) written in decimal digits, e.g. 2676"
    assert r.status_code == 400 and r.json()["error"] == "invalid_input", r.text
    assert r.json()["message"] == f"key {says}." and r.json()["details"] == [{"field": "key", "message": says}]
