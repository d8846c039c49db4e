"""`tollway serve --reload` (development): the server runs in a child process that is
restarted when a plugin's source changes or a plugin is installed, upgraded or removed.

Watched: the folders of Tollway's own packages and of every installed plugin (an
editable plugin's project folder, else its package in site-packages), through
`watchfiles`; the set of installed plugins is compared once a second, and a change of
it restarts the child and re-reads what to watch.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import threading
from importlib.metadata import distributions
from pathlib import Path
from urllib.parse import unquote, urlparse

from tollway._runtime.plugins import GROUP

_OWN_PACKAGES = ("tollway", "tollway._core", "tollway._runtime", "tollway._http_server", "tollway._mcp_server")
_IGNORED_DIRS = ("build", "dist", ".tollway", ".eggs")


def _plugin_dists() -> list:
    importlib.invalidate_caches()
    return [d for d in distributions() if any(ep.group == GROUP for ep in d.entry_points)]


def installed_plugins() -> frozenset[tuple[str, str, str]]:
    """What decides the plugin set: each plugin distribution's name, version and entry points."""
    return frozenset(
        (
            d.metadata["Name"] or "",
            d.version,
            ";".join(sorted(f"{ep.name}={ep.value}" for ep in d.entry_points if ep.group == GROUP)),
        )
        for d in _plugin_dists()
    )


def _editable_folder(dist) -> Path | None:
    raw = dist.read_text("direct_url.json")
    if not raw:
        return None
    info = json.loads(raw)
    url = urlparse(info.get("url", ""))
    if url.scheme == "file" and info.get("dir_info", {}).get("editable"):
        return Path(unquote(url.path))
    return None


def watched_folders() -> list[Path]:
    """Tollway's own package folders and every installed plugin's source folder."""
    folders = {Path(importlib.import_module(name).__file__).resolve().parent for name in _OWN_PACKAGES}  # type: ignore[arg-type]
    for dist in _plugin_dists():
        folder = _editable_folder(dist)
        if folder is None:
            for ep in dist.entry_points:
                if ep.group == GROUP:
                    folder = Path(str(dist.locate_file(ep.value.split(":")[0].split(".")[0])))
        if folder is not None and folder.is_dir():
            folders.add(folder.resolve())
    return sorted(folders)


def _filter():
    import watchfiles

    base = watchfiles.DefaultFilter()
    return watchfiles.DefaultFilter(
        ignore_dirs=(*base.ignore_dirs, *_IGNORED_DIRS),
        ignore_entity_patterns=(*base.ignore_entity_patterns, r"\.egg-info$", r"\.db(-wal|-shm|-journal)?$"),
    )


def _stop(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def serve_with_reload(child_args: list[str], *, poll_s: float = 1.0) -> int:
    """Run `tollway <child_args>` in a child process, restarted on changes, until SIGINT/SIGTERM."""
    import watchfiles

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    command = [sys.executable, "-m", "tollway._runtime.cli", *child_args]
    while not stop.is_set():
        folders = watched_folders()
        plugins = installed_plugins()
        print(f"tollway: --reload watching {len(folders)} folders and the installed plugins", flush=True)
        child = subprocess.Popen(command)
        reason = None
        for changes in watchfiles.watch(
            *folders, watch_filter=_filter(), stop_event=stop, yield_on_timeout=True,
            rust_timeout=int(poll_s * 1000), raise_interrupt=False,
        ):  # fmt: skip
            if changes:
                reason = f"{sorted(path for _, path in changes)[0]} changed"
                break
            if installed_plugins() != plugins:
                reason = "the installed plugins changed"
                break
        _stop(child)
        if reason and not stop.is_set():
            print(f"tollway: {reason}; restarting", flush=True)
    return 0
