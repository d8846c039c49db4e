"""The OFAC lists: download (or read from a file:// folder), persist under
TOLLWAY_HOME, parse, index, and say which lists are out of date.

Layout on disk: `<home>/sanctions/<list key>/` holds the list's four files as
downloaded plus `meta.json` (`loaded_at` unix seconds, `published`: the list's
own publication date or null, `url`). A
refresh writes a new folder and swaps it in only when every file downloaded and
parsed, so a failed refresh never replaces a good list (and does not renew its
72-hour freshness, which counts from the last successful load).
"""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tollway import PluginContext, StateKey, Upstream

from . import matching
from .download import local_path, streamed
from .ofac import Entry, ListFormatError, ParsedEntry, parse_list
from .publication import fetch_publish_date, local_publish_date

# Where the list files come from: only its setting is used (the files are streamed
# to disk by `ListStore.refresh`, and a file:// folder is read in place).
OFAC_EXPORTS = Upstream(
    family="sanctions",
    name="lists",
    label="OFAC",
    url_setting="lists_url",
    default_base_url="https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports",
    description="Base URL of OFAC's list files (each fetched as <URL>/<FILE>); a file:// folder works too.",
)
MAX_AGE_S = 72 * 3600  # a list older than this is stale (docs/sanctions.md)
REFRESH_AFTER_S = 20 * 3600  # the daily task re-downloads lists older than this
REFRESH_INTERVAL_S = 24 * 3600
DOWNLOAD_TIMEOUT_S = 120.0
SOURCE = "OFAC"  # Office of Foreign Assets Control, US Department of the Treasury


@dataclass(frozen=True)
class ListSpec:
    key: str
    name: str  # as served in `lists[].name`
    files: tuple[str, str, str, str]  # primary, addresses, other names, remarks overflow
    publication: str  # the XML export whose head says when OFAC published the list


LISTS: tuple[ListSpec, ...] = (
    ListSpec("sdn", "OFAC SDN List", ("sdn.csv", "add.csv", "alt.csv", "sdn_comments.csv"), "SDN.XML"),
    ListSpec(
        "consolidated",
        "OFAC Consolidated Sanctions List (non-SDN)",
        ("cons_prim.csv", "cons_add.csv", "cons_alt.csv", "cons_comments.csv"),
        "CONSOLIDATED.XML",
    ),
)

Progress = Callable[[str, int, int | None], None]  # (file, bytes so far, total bytes or None)


@dataclass
class LoadedList:
    spec: ListSpec
    entries: dict[int, ParsedEntry]  # by entry number: a later diff between two loads is cheap
    loaded_at: float  # unix seconds of the last successful load (freshness counts from it)
    as_of: str | None  # YYYY-MM-DD: the list's own publication date; None when unknown

    def entry(self, number: int) -> Entry | None:
        found = self.entries.get(number)
        return found.entry if found else None


@dataclass
class Hit:
    score: float
    matched_name: str
    entry: Entry
    list_name: str


def lists_url_from(settings: Mapping[str, str] | None) -> str:
    """The configured `lists_url` (TOLLWAY_SANCTIONS_LISTS_URL) without a trailing slash."""
    return OFAC_EXPORTS.base_url(settings or {})


class ListStore:
    """The loaded lists and their index, for one TOLLWAY_HOME."""

    def __init__(self, home: str | Path) -> None:
        self.root = Path(home) / "sanctions"
        self.lists: dict[str, LoadedList] = {}
        self.persons = matching.NameIndex(True)
        self.others = matching.NameIndex(False)
        self._lock = asyncio.Lock()

    # -- state ---------------------------------------------------------------------
    def out_of_date(self, now: float | None = None) -> list[str]:
        """Names of the lists never loaded or last loaded more than 72 hours ago."""
        now = time.time() if now is None else now
        out = []
        for spec in LISTS:
            loaded = self.lists.get(spec.key)
            if loaded is None or now - loaded.loaded_at > MAX_AGE_S:
                out.append(spec.name)
        return out

    def checked(self) -> list[dict[str, str | None]]:
        return [{"name": spec.name, "as_of": self.lists[spec.key].as_of} for spec in LISTS if spec.key in self.lists]

    def find(self, number: int, entry: Entry | None = None) -> tuple[ListSpec, Entry] | None:
        """The list holding entry `number` (the first that does; with `entry`, the one whose
        entry is that one: a number may stand on both lists, with different entries)."""
        found = None
        for spec in LISTS:
            loaded = self.lists.get(spec.key)
            if loaded is not None and (e := loaded.entry(number)) is not None:
                if entry is None or e == entry:
                    return spec, e
                found = found or (spec, e)
        return found

    # -- search --------------------------------------------------------------------
    def search(self, name: str, *, person: bool, min_score: float) -> list[Hit]:
        """Every entry of the right kind scoring >= min_score, best first."""
        index = self.persons if person else self.others
        found = index.search(name, min_score)
        hits = []
        for (key, number), (s, matched) in found.items():
            loaded = self.lists[key]
            hits.append(Hit(s, matched, loaded.entries[number].entry, loaded.spec.name))
        hits.sort(key=lambda h: (-h.score, h.entry.number, h.list_name))
        return hits

    def _rebuild(self, lists: dict[str, LoadedList]) -> tuple[matching.NameIndex, matching.NameIndex]:
        return _indexes(tuple((spec.key, lists[spec.key].entries) for spec in LISTS if spec.key in lists))

    def _install(self, lists: dict[str, LoadedList]) -> None:
        persons, others = self._rebuild(lists)
        self.lists, self.persons, self.others = lists, persons, others  # swapped at once

    # -- disk ----------------------------------------------------------------------
    def _read_folder(self, spec: ListSpec, folder: Path) -> LoadedList | None:
        meta_path = folder / "meta.json"
        if not meta_path.is_file():
            return None
        try:
            meta = json.loads(meta_path.read_text())
            data = [(folder / f).read_bytes() for f in spec.files]
            entries = parsed(spec, data)
            # an older meta.json's `as_of` was the load time, not a publication date: unknown
            return LoadedList(spec, entries, float(meta["loaded_at"]), meta.get("published"))
        except (OSError, ValueError, KeyError, ListFormatError):
            return None

    def load_persisted(self) -> list[str]:
        """Load what earlier refreshes left under TOLLWAY_HOME; returns the lists loaded."""
        lists = dict(self.lists)
        for spec in LISTS:
            loaded = self._read_folder(spec, self.root / spec.key)
            current = lists.get(spec.key)
            if loaded is not None and (current is None or loaded.loaded_at > current.loaded_at):
                lists[spec.key] = loaded
        changed = [k for k in lists if lists[k] is not self.lists.get(k)]
        if changed:
            self._install(lists)
        return changed

    def persisted_newer(self) -> bool:
        """Whether another process (e.g. `tollway data refresh`) left newer lists on disk."""
        for spec in LISTS:
            try:
                meta = json.loads((self.root / spec.key / "meta.json").read_text())
            except (OSError, ValueError):
                continue
            current = self.lists.get(spec.key)
            if current is None or float(meta.get("loaded_at", 0)) > current.loaded_at:
                return True
        return False

    # -- refresh -------------------------------------------------------------------
    async def refresh(
        self,
        url: str,
        *,
        http: httpx.AsyncClient | None = None,
        progress: Progress | None = None,
        force: bool = True,
    ) -> dict[str, str | None]:
        """Download every list (or only those older than REFRESH_AFTER_S when not
        `force`), persist and index them. Returns list name -> None (loaded) or
        the reason it failed; a failed list keeps its previous load."""
        async with self._lock:
            if self.persisted_newer():
                await asyncio.to_thread(self.load_persisted)
            now = time.time()
            results: dict[str, str | None] = {}
            fresh: dict[str, LoadedList] = {}
            for spec in LISTS:
                current = self.lists.get(spec.key)
                if not force and current is not None and now - current.loaded_at < REFRESH_AFTER_S:
                    continue
                try:
                    fresh[spec.key] = await self._download(spec, url, http, progress)
                    results[spec.name] = None
                except (httpx.HTTPError, OSError, ValueError, ListFormatError) as exc:
                    results[spec.name] = f"{type(exc).__name__}: {exc}"
            if fresh:
                lists = {**self.lists, **fresh}
                await asyncio.to_thread(self._install, lists)
            return results

    def load_local(self, url: str) -> dict[str, str | None]:
        """Load every list from a file:// folder now (start-up, no event loop needed)."""
        results: dict[str, str | None] = {}
        fresh: dict[str, LoadedList] = {}
        for spec in LISTS:
            try:
                data = [local_path(f"{url}/{f}").read_bytes() for f in spec.files]
                entries = parsed(spec, data)
                loaded_at = time.time()
                meta = {
                    "loaded_at": loaded_at,
                    "published": local_publish_date(f"{url}/{spec.publication}"),
                    "url": url,
                }
                self._persist(spec, data, meta)
                fresh[spec.key] = LoadedList(spec, entries, loaded_at, meta["published"])
                results[spec.name] = None
            except (OSError, ValueError, ListFormatError) as exc:
                results[spec.name] = f"{type(exc).__name__}: {exc}"
        if fresh:
            self._install({**self.lists, **fresh})
        return results

    async def _download(
        self, spec: ListSpec, url: str, http: httpx.AsyncClient | None, progress: Progress | None
    ) -> LoadedList:
        data = [await _fetch(f"{url}/{f}", f, http, progress) for f in spec.files]
        entries = await asyncio.to_thread(parsed, spec, data)
        published = await fetch_publish_date(f"{url}/{spec.publication}", http)
        loaded_at = time.time()
        await asyncio.to_thread(self._persist, spec, data, {"loaded_at": loaded_at, "published": published, "url": url})
        return LoadedList(spec, entries, loaded_at, published)

    def _persist(self, spec: ListSpec, data: list[bytes], meta: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / spec.key
        tmp = self.root / f".{spec.key}.new"
        old = self.root / f".{spec.key}.old"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name, body in zip(spec.files, data):
            (tmp / name).write_bytes(body)
        (tmp / "meta.json").write_text(json.dumps(meta))
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)


# -- what the same bytes give ---------------------------------------------------------------
# Parsing a list and indexing its names depend only on the files' bytes, so reading bytes
# this process has just parsed (a file:// mirror every watch poll reads again, a daily
# download OFAC has not changed since, a start-up reload of the lists just persisted) takes
# the entries and index already made instead of spending about a second of CPU and 60 MB
# on equal copies. The caches keep the last two lists parsed (the SDN and consolidated
# lists in use) and the last index built, which the store holds anyway; a changed list
# pushes its old parse out. Entries and indexes are never changed once made.
class Entries(dict[int, ParsedEntry]):
    """A list's entries by number as parsed from one set of files; hashed by identity
    (never changed once made), so the index made from them is found by them."""

    __hash__ = object.__hash__  # type: ignore[assignment]


def parsed(listed: ListSpec, data: list[bytes]) -> Entries:
    """The entries of the list's files (`data`, in `listed.files` order); the same bytes give
    the same Entries. A file that does not parse raises ListFormatError every time."""
    return _parse(listed, tuple(data))


@functools.lru_cache(maxsize=len(LISTS))
def _parse(listed: ListSpec, data: tuple[bytes, ...]) -> Entries:
    return Entries(parse_list(*data, names=listed.files))


@functools.lru_cache(maxsize=1)
def _indexes(lists: tuple[tuple[str, Entries], ...]) -> tuple[matching.NameIndex, matching.NameIndex]:
    """(persons, others) over every name of `lists`, (list key, entries) pairs."""

    def items():
        for key, entries in lists:
            for number, one in entries.items():
                e = one.entry
                yield (key, number), one.is_person, [e.name, *(o.name for o in e.other_names)]

    return matching.build(items())


async def _fetch(url: str, file: str, http: httpx.AsyncClient | None, progress: Progress | None) -> bytes:
    """One file's bytes (a file:// URL is read in place)."""
    if url.startswith("file://"):
        body = await asyncio.to_thread(local_path(url).read_bytes)
        if progress:
            progress(file, len(body), len(body))
        return body
    async with streamed(url, http, DOWNLOAD_TIMEOUT_S) as response:
        total = response.headers.get("content-length")
        total_n = int(total) if total and total.isdigit() else None
        chunks: list[bytes] = []
        done = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            done += len(chunk)
            if progress:
                progress(file, done, total_n)
        return b"".join(chunks)


# -- the store the tools read (one per running service; see docs/sanctions.md) ----------
STORE: StateKey[ListStore] = StateKey("sanctions", "lists")


def store_of(context: PluginContext) -> ListStore:
    """The service's lists, kept under its TOLLWAY_HOME (one store per running service)."""
    return context.state.setdefault(STORE, lambda: ListStore(Path(context.home).resolve()))


async def refresh(
    store: ListStore,
    settings: Mapping[str, str] | None,
    *,
    progress: Progress | None = None,
    http: httpx.AsyncClient | None = None,
) -> dict[str, str | None]:
    """`tollway data refresh sanctions`: download every list now into the store's `<home>/sanctions/`.

    `settings` is the plugin's settings (`lists_url`, from TOLLWAY_SANCTIONS_LISTS_URL;
    OFAC's own URL when None or unset); `progress(file, done, total)` is called as
    bytes arrive. Returns list name -> None when loaded, else the reason it failed.
    """
    return await store.refresh(lists_url_from(settings), http=http, progress=progress, force=True)
