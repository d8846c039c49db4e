"""The browser plugin's settings (`TOLLWAY_BROWSER_*`) and how a run reads them."""

from __future__ import annotations

from collections.abc import Mapping

from tollway import Setting

FAMILY = "browser"

CHROMIUM_PATH = Setting(
    FAMILY,
    "chromium_path",
    "/usr/bin/chromium",
    "The Chromium executable tasks run (Debian's chromium package; Playwright's own browser downloads are never used).",
)
ALLOW_HOSTS = Setting(
    FAMILY,
    "allow_hosts",
    "",
    "Comma-separated host:port pairs the filtering proxy lets pages reach although they are not public "
    "(e.g. `127.0.0.1:8123,intranet.example:443`): a private deployment's own sites, and the tests' local "
    "site. Exact host (as the URL writes it) and port; every other private, loopback, link-local, multicast "
    "or metadata address stays refused. Leave empty on a public service.",
)
MEMORY_MB = Setting(
    FAMILY,
    "memory_mb",
    "1024",
    "The memory one task's Chromium may use, in MB (the proportional set size of all its processes, "
    "measured every 250 ms); past it the task's browser is killed and the task ends `memory_cap`.",
)
CPU_S = Setting(
    FAMILY,
    "cpu_s",
    "120",
    "The CPU seconds one task's Chromium may use (all its processes); past it the browser is killed "
    "and the task ends `cpu_cap`.",
)
CONCURRENCY = Setting(
    FAMILY,
    "concurrency",
    "4",
    "How many browsers one worker process runs at once; further tasks wait for a slot.",
)
MAX_RESPONSE_MB = Setting(
    FAMILY,
    "max_response_mb",
    "20",
    "The largest response (a page, a resource, a download) the proxy passes, in MB; the rest is cut off.",
)
STATE_KEY = Setting(
    FAMILY,
    "state_key",
    None,
    "Base64 of 32 random bytes: the key profiles' storage states are encrypted with. Unset: a key is "
    "generated once into the plugin's key table (a database dump then holds both: set this in production).",
    secret=True,
)
ARTIFACT_LINK_S = Setting(
    FAMILY,
    "artifact_link_s",
    "3600",
    "Seconds a signed artifact link in a task's result stays valid.",
)

SETTINGS = (CHROMIUM_PATH, ALLOW_HOSTS, MEMORY_MB, CPU_S, CONCURRENCY, MAX_RESPONSE_MB, STATE_KEY, ARTIFACT_LINK_S)


def text(settings: Mapping[str, str], setting: Setting) -> str:
    raw = settings.get(setting.name)
    return raw.strip() if raw is not None and raw.strip() else (setting.default or "")


def number(settings: Mapping[str, str], setting: Setting) -> float:
    """A positive number, or the setting's default when the value is not one."""
    try:
        found = float(text(settings, setting))
    except ValueError:
        found = 0.0
    return found if found > 0 else float(setting.default or 0)


def allowed_hosts(settings: Mapping[str, str]) -> frozenset[tuple[str, int]]:
    """The operator's allow-list as (host, port) pairs, hosts lower-case without brackets."""
    pairs: set[tuple[str, int]] = set()
    for entry in text(settings, ALLOW_HOSTS).split(","):
        host, _, port = entry.strip().rpartition(":")
        if host and port.isdigit():
            pairs.add((host.strip("[]").lower(), int(port)))
    return frozenset(pairs)
