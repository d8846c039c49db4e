"""The sanctions lists as a watch source, over two real consecutive loads: the SDN list
of January 2019, then of July 2021 (the consolidated list the same in both). The poll
after the switch reports the entries added, removed and changed; a watch on an entry
that changed gets that change, one on an entry removed gets `$entity` not listed, one
on an unchanged entry nothing; the source's history reads back through the fact store."""
from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from core import sql
from tests.support.watch_rows import new_watch
from tollway.testing import credits_session, http_client

OFAC = Path(__file__).resolve().parents[2] / "plugins" / "sanctions" / "tests" / "fixtures" / "ofac"
CONSOLIDATED = OFAC / "consolidated_non_sdn_2025-12"

SDN_2019 = OFAC / "sdn_2019-01"
SDN_2021 = OFAC / "sdn_2021-07"
CHANGED, REMOVED, UNCHANGED = "2674", "1544", "173"  # ABBAS, Abu; NAVIERA MARITIMA DE AROSA, S.A.; ANGLO-CARIBBEAN CO., LTD.


def use_lists(folder: Path, sdn: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for source in (sdn, CONSOLIDATED):
        for f in source.iterdir():
            if f.suffix == ".csv":
                shutil.copyfile(f, folder / f.name)


def _entries(folder: Path, names: tuple[str, ...]) -> dict:
    from tollway_sanctions.ofac import parse_list

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
    async with http_client(kernel) as client:
        agent, _ = await credits_session(client)
    for key in (CHANGED, REMOVED, UNCHANGED):
        await new_watch(agent, key, attribute="us_treasury_sanctions", entity_type="company")
    use_lists(folder, SDN_2021)
    report = await kernel.watch_polling.poll("us_treasury_sanctions")
    assert report.changes_detected == expected_changes() == 2960
    assert await kernel.watch_deliveries.run_pending() == 2
    rows = await sql.fetch(
        "SELECT w.entity_key, d.change FROM tw_watch_deliveries d JOIN tw_watches w ON w.id = d.watch_id ORDER BY w.entity_key"
    )
    got = {r["entity_key"]: msgspec.json.decode(r["change"]) for r in rows}
    assert set(got) == {CHANGED, REMOVED}
    assert (got[CHANGED]["field"], got[CHANGED]["before"], got[CHANGED]["after"]) == ("programs[0]", "SDT", "SDGT")
    assert (got[REMOVED]["field"], got[REMOVED]["before"], got[REMOVED]["after"]) == ("$entity", "listed", "not_listed")
    assert got[CHANGED]["source"] == "OFAC"
    again = await kernel.watch_polling.poll("us_treasury_sanctions")
    assert again.changes_detected == 0
