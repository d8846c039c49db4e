"""A list's `as_of` is the day OFAC published it (the XML export's
`publshInformation/Publish_Date`), never the day it was loaded: in screening answers,
in the facts Changes reads and in what a watch poll observes; null when OFAC's
publication date cannot be read."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import httpx

from tollway.testing import credits_session, http_client, stored_facts
from tollway_sanctions import lists
from tollway_sanctions.publication import publish_date
from tollway_sanctions.watch import poll

OFAC_BASE = "https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports"
TODAY = dt.datetime.now(dt.UTC).date().isoformat()


def xml_head(publish_date: str, record_count: int) -> bytes:
    """The head of an OFAC XML export (SDN.XML, CONSOLIDATED.XML): its `publshInformation`
    block (OFAC's spelling) as OFAC's files begin. Only the head is read; the recorded CSV
    sets carry no date, so a test names the one it means (MM/DD/YYYY, as OFAC writes it)."""
    return (
        '<?xml version="1.0" standalone="yes"?>\r\n'
        '<sdnList xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xmlns="https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/XML">\r\n'
        "  <publshInformation>\r\n"
        f"    <Publish_Date>{publish_date}</Publish_Date>\r\n"
        f"    <Record_Count>{record_count}</Record_Count>\r\n"
        "  </publshInformation>\r\n"
        "  <sdnEntry>\r\n    <uid>36</uid>\r\n"
    ).encode()


HEADS = {"SDN.XML": xml_head("07/06/2021", 8976), "CONSOLIDATED.XML": xml_head("12/18/2025", 442)}


def test_the_publish_date_is_read_from_the_head() -> None:
    assert publish_date(HEADS["SDN.XML"]) == "2021-07-06"
    assert (
        publish_date(b"<sdnList><publshInformation><Publish_Date>2/3/2024</Publish_Date></publshInformation>")
        == "2024-02-03"
    )
    for head in (
        b"",
        b"<sdnList><sdnEntry/>",
        b"<publshInformation><Publish_Date>13/45/2021</Publish_Date></publshInformation>",
    ):
        assert publish_date(head) is None


def mirror(folder: Path, ofac_folder: Path, heads: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in ofac_folder.iterdir():
        shutil.copyfile(f, folder / f.name)
    for name, head in heads.items():
        (folder / name).write_bytes(head)
    return folder


async def test_a_2021_list_is_dated_2021_over_http(tmp_path, ofac_folder) -> None:
    """Served at OFAC's URLs with a Last-Modified of today: the lists carry OFAC's dates;
    a list whose XML export cannot be read carries null, not the day it was loaded."""
    files = {p.name: p.read_bytes() for p in ofac_folder.iterdir()} | {"SDN.XML": HEADS["SDN.XML"] + b"x" * 200_000}
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        name = str(request.url).rsplit("/", 1)[1]
        seen.append(name)
        if name not in files:
            return httpx.Response(404)
        return httpx.Response(
            200,
            content=files[name],
            headers={"last-modified": dt.datetime.now(dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")},
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        store = lists.ListStore(tmp_path)
        results = await lists.refresh(store, {}, http=http)
    assert results == {s.name: None for s in lists.LISTS}  # an unreadable date never fails a load
    assert {"SDN.XML", "CONSOLIDATED.XML"} <= set(seen)
    assert store.checked() == [
        {"name": "OFAC SDN List", "as_of": "2021-07-06"},
        {"name": "OFAC Consolidated Sanctions List (non-SDN)", "as_of": None},
    ]
    meta = json.loads((tmp_path / "sanctions" / "sdn" / "meta.json").read_text())
    assert meta["published"] == "2021-07-06"
    again = lists.ListStore(tmp_path)
    again.load_persisted()
    assert again.checked() == store.checked()


def test_a_persisted_list_from_before_keeps_no_load_time_as_its_date(tmp_path, ofac_folder) -> None:
    """A meta.json written before publication dates were read has `as_of` = its load time: unknown now."""
    store = lists.ListStore(tmp_path)
    store.load_local(mirror(tmp_path / "m", ofac_folder, {}).as_uri())
    meta_path = tmp_path / "sanctions" / "sdn" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta.pop("published")
    meta["as_of"] = TODAY + "T09:00:00Z"
    meta_path.write_text(json.dumps(meta))
    again = lists.ListStore(tmp_path)
    again.load_persisted()
    assert again.lists["sdn"].as_of is None


async def test_answers_facts_and_watch_polls_carry_the_publication_date(kernel_factory, tmp_path, ofac_folder) -> None:
    folder = mirror(tmp_path / "mirror", ofac_folder, HEADS)
    kernel = await kernel_factory(installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": folder.as_uri()})
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        resp = await client.post(
            "/v1/tools/lookup/person-sanctions", json={"name": "Nicolas Maduro", "limit": 1}, headers=auth
        )
        assert resp.status_code == 200, resp.text
        changes = await client.post(
            "/v1/tools/changes",
            json={"attribute": "person_sanctions", "key": "22790", "since": "2021-01-01"},
            headers=auth,
        )
    assert resp.json()["data"]["lists"] == [
        {"name": "OFAC SDN List", "as_of": "2021-07-06"},
        {"name": "OFAC Consolidated Sanctions List (non-SDN)", "as_of": "2025-12-18"},
    ]
    assert changes.status_code == 200, changes.text
    assert {f["as_of"] for f in await stored_facts("person_sanctions", "22790")} == {"2021-07-06"}
    snapshot = await poll(kernel.context, ["22790"])
    assert snapshot.values["22790"].as_of == "2021-07-06"
    assert {o.as_of for o in snapshot.values.values()} == {"2021-07-06", "2025-12-18"}
