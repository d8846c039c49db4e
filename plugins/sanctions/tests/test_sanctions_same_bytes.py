"""Loading bytes already parsed reuses their entries and index; changed or broken files are read anew."""

from __future__ import annotations

import shutil
from pathlib import Path

from tollway_sanctions import lists

LOADED = {spec.name: None for spec in lists.LISTS}


def copy_of(folder: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for f in folder.iterdir():
        shutil.copyfile(f, target / f.name)
    return target


def test_unchanged_files_are_not_parsed_again_and_changed_ones_are(tmp_path, ofac_folder) -> None:
    mirror = copy_of(ofac_folder, tmp_path / "mirror")
    first, second = lists.ListStore(tmp_path / "a"), lists.ListStore(tmp_path / "b")
    assert first.load_local(mirror.as_uri()) == LOADED
    sdn, consolidated, persons = first.lists["sdn"], first.lists["consolidated"], first.persons
    # another store (a restart, another TOLLWAY_HOME) reading the same bytes shares what they gave
    assert second.load_local(mirror.as_uri()) == LOADED
    assert second.lists["sdn"].entries is sdn.entries and second.lists["consolidated"].entries is consolidated.entries
    assert second.persons is persons and second.others is first.others
    # a reload of unchanged files still renews the lists' freshness
    sdn.loaded_at = 0.0
    assert first.out_of_date() == ["OFAC SDN List"]
    assert first.load_local(mirror.as_uri()) == LOADED
    assert first.out_of_date() == [] and first.lists["sdn"].entries is sdn.entries and first.persons is persons

    # OFAC adds an alias: the SDN list is parsed and indexed anew, the consolidated list is kept
    assert first.search("Zzyzx Quorvath", person=True, min_score=0.85) == []
    alt = mirror / "alt.csv"
    original = alt.read_bytes()
    alt.write_bytes(original.replace(b"\x1a", b"") + b'2676,99999,"aka","QUORVATH, Zzyzx",-0- \r\n\x1a')
    assert first.load_local(mirror.as_uri()) == LOADED
    assert first.lists["sdn"].entries is not sdn.entries and first.lists["consolidated"].entries is consolidated.entries
    assert first.persons is not persons
    [hit] = first.search("Zzyzx Quorvath", person=True, min_score=0.85)
    assert (hit.entry.number, hit.matched_name, hit.score) == (2676, "QUORVATH, Zzyzx", 1.0)
    assert second.search("Zzyzx Quorvath", person=True, min_score=0.85) == []  # the other store still has its lists

    # a broken file fails every time it is read (a failure is never reused); the last good load stays
    changed = first.lists["sdn"].entries
    alt.write_bytes(b'2676,99999,"aka"\r\n')
    for _ in range(2):
        results = first.load_local(mirror.as_uri())
        assert (
            results["OFAC SDN List"]
            == "ListFormatError: alt.csv: a row has 3 columns, expected 5: ['2676', '99999', 'aka']"
        )
        assert first.lists["sdn"].entries is changed
    # back to the original bytes: the same entries as the first load, without the alias
    alt.write_bytes(original)
    assert first.load_local(mirror.as_uri()) == LOADED
    assert first.lists["sdn"].entries == sdn.entries and first.lists["consolidated"].entries is consolidated.entries
    assert first.search("Zzyzx Quorvath", person=True, min_score=0.85) == []
