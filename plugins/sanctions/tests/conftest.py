"""Fixtures: the real OFAC files in fixtures/ofac/ (see fixtures/README.md).

The 2021-07 SDN set and the 2025-12 consolidated set live in two folders there;
`ofac_folder` copies the eight files into one folder, the layout OFAC's export
base (and a `file://` mirror) has.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tollway_sanctions import lists

OFAC = Path(__file__).resolve().parent / "fixtures" / "ofac"
SDN_2021 = OFAC / "sdn_2021-07"
CONSOLIDATED = OFAC / "consolidated_non_sdn_2025-12"


def source_files() -> dict[str, Path]:
    files = {f: SDN_2021 / f for f in lists.LISTS[0].files}
    files.update({f: CONSOLIDATED / f for f in lists.LISTS[1].files})
    return files


def make_ofac_folder(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name, path in source_files().items():
        shutil.copyfile(path, target / name)
    return target


@pytest.fixture(scope="session")
def ofac_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_ofac_folder(tmp_path_factory.mktemp("ofac"))


@pytest.fixture(scope="session")
def loaded_store(tmp_path_factory: pytest.TempPathFactory, ofac_folder: Path) -> lists.ListStore:
    store = lists.ListStore(tmp_path_factory.mktemp("home"))
    results = store.load_local(ofac_folder.as_uri())
    assert results == {spec.name: None for spec in lists.LISTS}
    return store
