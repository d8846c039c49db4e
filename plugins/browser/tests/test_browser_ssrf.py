"""The SSRF battery: a page on the allowed local test site tries to reach the forbidden
listener (another port of 127.0.0.1) and other internal addresses every way a page can —
literal addresses in every IPv4 and IPv6 form, names resolving to loopback or to a public
and a private address, a redirect, an iframe, script, style, fetch, XHR, WebSocket,
beacon, EventSource, a download, a form post, a service worker, DNS rebinding between the
check and the use, file: and data: navigations (and a blob: one, which Chromium would open).
Every one is refused, the task reports it, and the listener counts zero connections.

The proxy's rules touch no database, so the battery runs once, on SQLite (`db_kind`
below); the tasks' paid path is the same as test_browser_task.py's on both databases."""

from __future__ import annotations

import pytest
from browser_support import IMAGE_CASES, one_task

from tollway_browser import proxy

PUBLIC = "93.184.215.14"  # a public address; the test's connector sends it to the local site
NAMES = {
    "metadata.test": ["169.254.169.254"],
    "loopback.test": ["127.0.0.1"],
    "loopback6.test": ["::1"],
    "mixed.test": [PUBLIC, "127.0.0.1"],
}


@pytest.fixture
def db_kind() -> str:
    return "sqlite"


@pytest.fixture
def lookups(monkeypatch) -> list[str]:
    """Made-up names resolve here; `rebind.test` answers a public address the first time and
    loopback after (a rebinding DNS server). Every other name goes to the system resolver."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        if host == "rebind.test":
            return [PUBLIC] if asked.count(host) == 1 else ["127.0.0.1"]
        if host in NAMES:
            return NAMES[host]
        return await proxy.system_resolve(host, port)

    monkeypatch.setattr(proxy, "resolve", resolve)
    return asked


@pytest.fixture
def connects(monkeypatch, site) -> list[tuple[str, int]]:
    """Every address the proxy connects to; the public test address reaches the local site."""
    made: list[tuple[str, int]] = []

    async def connect(address: str, port: int):
        made.append((address, port))
        if address == PUBLIC:
            return await proxy.open_tcp("127.0.0.1", site.port)
        return await proxy.open_tcp(address, port)

    monkeypatch.setattr(proxy, "connect", connect)
    return made


def blocked_paths(result: dict) -> dict[str, str]:
    """The refused requests by path (a tunnel's host:port as it is), with the reason."""
    out = {}
    for b in result["blocked"]:
        url = b["url"]
        path = "/" + url.split("://", 1)[1].split("/", 1)[1] if "://" in url and "/" in url.split("://", 1)[1] else url
        out[path] = b["reason"]
    return out


async def test_every_way_a_page_reaches_inside_is_refused_and_reported(kernel, site, lookups, connects):
    f = site.forbidden.port
    job = await one_task(
        kernel,
        {
            "start_url": f"{site.base}/battery",
            "steps": [
                {"action": "wait_for", "selector": "#done"},
                {"action": "goto", "url": f"{site.base}/form"},
                {"action": "click", "role": "button", "name": "Send"},
                {"action": "wait_for", "timeout_s": 5},
                {"action": "goto", "url": f"{site.base}/download"},
                {"action": "click", "selector": "#dl"},
                {"action": "wait_for", "timeout_s": 5},
                {"action": "goto", "url": f"{site.base}/worker"},
                {"action": "wait_for", "selector": "#worker", "timeout_s": 10},
                {"action": "extract", "selector": "#worker", "save_as": "worker"},
                {"action": "goto", "url": f"{site.base}/navigate-file"},
                {"action": "goto", "url": f"{site.base}/navigate-data"},
                {"action": "wait_for", "timeout_s": 2},
                {"action": "goto", "url": f"http://127.0.0.1:{f}/goto"},
            ],
        },
    )
    assert job["status"] == "completed", job
    result = job["result"]
    refused = blocked_paths(result)
    # Each literal and name form, each refused by the proxy under its own path.
    for case in IMAGE_CASES:
        assert refused.get(f"/{case}") == "private_address", (case, result["blocked"])
    for path in ("/redirected", "/iframe", "/script.js", "/style.css", "/fetch", "/xhr", "/beacon", "/events"):
        assert refused.get(path) == "private_address", (path, result["blocked"])
    assert refused.get(f"127.0.0.1:{f}") == "private_address"  # the WebSocket's CONNECT tunnel
    assert refused.get("/file.bin") == "private_address"  # the download
    assert refused.get("/form") == "private_address"  # the form's navigation
    assert refused.get("/sw") == "private_address"  # the service worker's own fetch
    assert result["extracts"][0]["value"] == "blocked"  # what the worker answered instead
    # file: and data: top-level navigations: Chromium refuses them, nothing is fetched, and the
    # task's own guard reports them.
    assert any("Not allowed to load local resource" in e for e in result["console_errors"]), result
    assert any("data URL" in e for e in result["console_errors"]), result["console_errors"]
    assert refused.get("/etc/passwd") == "scheme" and refused.get("data:text/html,<h1>data page</h1>") == "scheme"
    # The last step's goto is refused, reported, and stops the task there.
    last = result["steps"][-1]
    assert last["action"] == "goto" and last["status"] == "blocked" and result["status"] == "step_failed"
    assert refused.get("/goto") == "private_address"
    assert ("127.0.0.1", f) not in connects and not any(a == "::1" for a, _ in connects)
    assert site.forbidden.hits == []


async def test_a_page_leaving_the_web_is_stopped_and_reported_by_its_scheme(kernel, site):
    """Pages whose scripts send the main frame to data:, file: and blob: URLs, and open a
    data: popup: each is reported blocked (reason `scheme`) by the task's own guard — the
    blob: page, which Chromium itself would open, is replaced by the blank page."""
    wait = {"action": "wait_for", "timeout_s": 5}
    steps = [
        wait,
        {"action": "goto", "url": f"{site.base}/navigate-file"},
        wait,
        {"action": "goto", "url": f"{site.base}/popup-data"},
        wait,
        {"action": "goto", "url": f"{site.base}/navigate-blob"},
        wait,
    ]
    job = await one_task(kernel, {"start_url": f"{site.base}/navigate-data", "steps": steps})
    assert job["status"] == "completed", job
    result = job["result"]
    scheme = [b for b in result["blocked"] if b["reason"] == "scheme"]
    urls = [b["url"] for b in scheme]
    assert "data:text/html,<h1>data page</h1>" in urls, result["blocked"]
    assert "file:///etc/passwd" in urls, result["blocked"]
    assert "data:text/html,<h1>popup data</h1>" in urls, result["blocked"]
    blobs = [u for u in urls if u.startswith(f"blob:{site.base}/")]
    assert len(blobs) == 1 and len(urls) == 4, urls
    assert all(b["detail"] == "a page opens only http(s) pages" for b in scheme)
    assert result["status"] == "completed" and all(s["status"] == "ok" for s in result["steps"]), result["steps"]
    assert result["url"] == "about:blank"  # the blob: page did not stay
    assert site.forbidden.hits == []


async def test_a_name_rebound_to_loopback_after_the_check_cannot_reach_it(kernel, site, lookups, connects):
    f = site.forbidden.port
    body = {"start_url": f"http://rebind.test:{f}/self", "steps": [{"action": "extract", "role": "heading"}]}
    job = await one_task(kernel, body)
    assert job["status"] == "completed", job
    result = job["result"]
    # The first lookup (public) was checked and connected to; the page's second request found
    # the name rebound to loopback and was refused: the listener on that port saw nothing.
    assert result["extracts"][0]["value"] == "Rebound"
    assert connects[0] == (PUBLIC, f)
    assert lookups.count("rebind.test") >= 2
    assert {"url": f"http://rebind.test:{f}/pixel.png", "reason": "private_address"} in [
        {"url": b["url"], "reason": b["reason"]} for b in result["blocked"]
    ]
    assert ("127.0.0.1", f) not in connects
    assert site.forbidden.hits == []


async def test_the_proxy_refuses_schemes_it_does_not_speak_and_caps_responses(site):
    """The proxy alone, spoken to as Chromium would: an ftp URL, a private CONNECT, a
    response past the cap."""
    import asyncio

    guard = proxy.FilteringProxy(allow=frozenset({("127.0.0.1", site.port)}), max_response_bytes=100)
    port = await guard.start()
    try:
        answers = []
        for head in (
            b"GET ftp://127.0.0.1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            f"CONNECT 127.0.0.1:{site.forbidden.port} HTTP/1.1\r\n\r\n".encode(),
            f"GET {site.base}/fares HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n\r\n".encode(),
        ):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head)
            await writer.drain()
            answers.append(await asyncio.wait_for(reader.read(), 10))
            writer.close()
    finally:
        await guard.close()
    assert answers[0].startswith(b"HTTP/1.1 403") and answers[1].startswith(b"HTTP/1.1 403")
    assert len(answers[2]) <= 100  # cut at the cap
    assert [b["reason"] for b in guard.blocked] == ["scheme", "private_address", "response_capped"]
    assert site.forbidden.hits == []
