"""The browser tests' peers: a local test site (a sign-in form, an account page behind a
cookie, a table, pages that try to reach a forbidden address every way a page can), the
forbidden listener itself (it counts every connection: the tests want zero), and helpers to
run tasks through the whole job machinery."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from tollway.testing import credits_session, http_client, worker_for

TABLE = """<table id="fares"><thead><tr><th>Route</th><th>Fare (USD)</th><th>Notes</th></tr></thead>
<tbody><tr><td>North quay &rarr; Island</td><td>4.50</td><td>Daily, <b>07:40</b></td></tr>
<tr><td>Island &rarr; South pier</td><td>3.25</td><td></td></tr>
<tr><td>Return, &ldquo;any day&rdquo;</td><td>7.00</td><td>Bikes free &amp; dogs €1</td></tr></tbody></table>"""
TABLE_ROWS = [
    ["Route", "Fare (USD)", "Notes"],
    ["North quay → Island", "4.50", "Daily, 07:40"],
    ["Island → South pier", "3.25", ""],
    ["Return, “any day”", "7.00", "Bikes free & dogs €1"],
]


def page(title: str, body: str) -> bytes:
    return f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>{body}</body></html>".encode()


@dataclass
class Forbidden:
    """A listener on 127.0.0.1 that no page may reach: it counts every connection."""

    port: int
    hits: list[bytes] = field(default_factory=list)


@dataclass
class Site:
    port: int
    forbidden: Forbidden
    paths: list[str] = field(default_factory=list)
    gate_open: bool = False

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def allow(self) -> str:
        return f"127.0.0.1:{self.port}"


def _forbidden() -> tuple[Forbidden, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0), family=socket.AF_INET)
    forbidden = Forbidden(port=listener.getsockname()[1])

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.settimeout(1)
            try:
                forbidden.hits.append(conn.recv(4096))
            except OSError:
                forbidden.hits.append(b"")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return forbidden, listener


def attack_pages(f: int) -> dict[str, str]:
    """Pages of the test site that try to reach the forbidden listener (port `f`)."""
    target = f"http://127.0.0.1:{f}"
    return {
        "/iframe": f'<iframe src="{target}/iframe"></iframe><p id="done">iframe</p>',
        "/fetch": f"<p id='done'>fetch</p><script>fetch('{target}/fetch').catch(e => console.error('fetch blocked'));"
        f"var x = new XMLHttpRequest(); x.open('GET', '{target}/xhr'); x.send();</script>",
        "/websocket": f"<p id='done'>ws</p><script>var w = new WebSocket('ws://127.0.0.1:{f}/ws');"
        "w.onerror = () => console.error('websocket blocked');</script>",
        "/subresources": f'<img src="{target}/img"><script src="{target}/script.js"></script>'
        f'<link rel="stylesheet" href="{target}/style.css"><p id="done">subresources</p>',
        "/beacon": f"<p id='done'>beacon</p><script>navigator.sendBeacon('{target}/beacon', 'x');"
        f"new EventSource('{target}/events');</script>",
        "/download": f'<a id="dl" href="{target}/file.bin" download>get</a>',
        "/form": f'<form method="post" action="{target}/form"><button>Send</button></form>',
        "/worker": "<p id='done'>worker</p><script>navigator.serviceWorker.register('/sw.js')"
        ".then(() => navigator.serviceWorker.ready).then(() => new Promise(r => setTimeout(r, 300)))"
        ".then(() => fetch('/via-worker')).then(r => r.text())"
        ".then(t => { const p = document.createElement('p'); p.id = 'worker'; p.textContent = t; document.body.append(p); })"
        ".catch(e => console.error('sw ' + e));</script>",
        "/sw.js": f"self.addEventListener('fetch', e => {{ if (e.request.url.endsWith('/via-worker')) "
        f"e.respondWith(fetch('{target}/sw').catch(() => new Response('blocked'))); }});"
        "self.addEventListener('install', () => self.skipWaiting());"
        "self.addEventListener('activate', e => e.waitUntil(clients.claim()));",
        "/worker-result": "",
        "/navigate-file": "<p id='done'>file</p><script>location.href = 'file:///etc/passwd';</script>",
        "/navigate-data": "<p id='done'>data</p><script>location.href = 'data:text/html,<h1>data page</h1>';</script>",
        "/navigate-blob": "<p id='done'>blob</p><script>location.href = URL.createObjectURL("
        "new Blob(['<h1>blob page</h1>'], {type: 'text/html'}));</script>",
        "/popup-data": "<p id='done'>popup</p><script>window.open('data:text/html,<h1>popup data</h1>');</script>",
    }


# Addresses and forms a page may write for a forbidden host, each an <img> of its own path
# (the proxy's refusal names the path, so each case is told apart). `F` is the forbidden
# listener's port; the names resolve through the test's resolver (test_browser_ssrf.py).
IMAGE_CASES = {
    "loopback": "http://127.0.0.1:F",
    "localhost-name": "http://localhost:F",
    "ipv6-loopback": "http://[::1]:F",
    "ipv4-mapped": "http://[::ffff:127.0.0.1]:F",
    "ipv4-mapped-hex": "http://[::ffff:7f00:1]:F",
    "nat64": "http://[64:ff9b::7f00:1]:F",
    "6to4": "http://[2002:7f00:1::]:F",
    "hex-literal": "http://0x7f000001:F",
    "decimal-literal": "http://2130706433:F",
    "short-literal": "http://127.1:F",
    "unspecified": "http://0.0.0.0:F",
    "metadata": "http://169.254.169.254",
    "metadata-name": "http://metadata.test",
    "private-10": "http://10.0.0.1",
    "private-192": "http://192.168.0.1",
    "shared-cgnat": "http://100.64.0.1",
    "ipv6-unique-local": "http://[fd00::1]",
    "ipv6-link-local": "http://[fe80::1]",
    "multicast": "http://224.0.0.1",
    "name-to-loopback": "http://loopback.test:F",
    "name-to-ipv6-loopback": "http://loopback6.test:F",
    "name-public-and-private": "http://mixed.test:F",
}


def battery(f: int) -> str:
    images = "".join(f'<img src="{base.replace("F", str(f))}/{case}">' for case, base in IMAGE_CASES.items())
    target = f"http://127.0.0.1:{f}"
    return (
        images
        + '<img src="/redirect">'
        + f'<iframe src="{target}/iframe"></iframe>'
        + f'<script src="{target}/script.js"></script><link rel="stylesheet" href="{target}/style.css">'
        + f"<script>fetch('{target}/fetch').catch(() => console.error('fetch blocked'));"
        + f"var x = new XMLHttpRequest(); x.open('GET', '{target}/xhr'); x.send();"
        + f"var w = new WebSocket('ws://127.0.0.1:{f}/ws'); w.onerror = () => console.error('websocket blocked');"
        + f"navigator.sendBeacon('{target}/beacon', 'x'); new EventSource('{target}/events');</script>"
        + '<p id="done">battery</p>'
    )


def serve_site() -> Iterator[Site]:
    forbidden, listener = _forbidden()
    attacks = attack_pages(forbidden.port)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8", **headers: str):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(body)

        def _signed_in(self) -> bool:
            return "session=ada-7f3c" in (self.headers.get("Cookie") or "")

        def do_GET(self) -> None:
            site.paths.append(self.path)
            path = self.path.split("?", 1)[0]
            if path == "/login":
                return self._send(
                    200,
                    page(
                        "Sign in",
                        '<form method="post" action="/login"><label>Username <input name="user"></label>'
                        '<label>Password <input type="password" name="password"></label>'
                        "<button>Sign in</button></form>",
                    ),
                )
            if path == "/account":
                if not self._signed_in():
                    return self._send(302, b"", Location="/login")
                return self._send(200, page("Your account", "<h1>Signed in as Ada</h1>" + TABLE))
            if path == "/fares":
                return self._send(200, page("Fares", "<h1>Harbour fares</h1>" + TABLE + '<a href="/login">Sign in</a>'))
            if path == "/redirect":
                return self._send(302, b"", Location=f"http://127.0.0.1:{forbidden.port}/redirected")
            if path == "/sw.js":
                return self._send(200, attacks[path].encode(), "text/javascript")
            if path in attacks:
                return self._send(200, page(path.strip("/"), attacks[path]))
            if path == "/gate":  # #ready appears once the test opens the gate
                script = (
                    "setInterval(() => fetch('/gate-state').then(r => r.text()).then(t => { if (t === 'open' && "
                    "!document.getElementById('ready')) { const p = document.createElement('p'); p.id = 'ready'; "
                    "p.textContent = 'ready'; document.body.append(p); } }), 200);"
                )
                return self._send(200, page("Gate", f"<h1>Waiting</h1><script>{script}</script>"))
            if path == "/gate-state":
                return self._send(200, b"open" if site.gate_open else b"shut", "text/plain")
            if path == "/hog":  # grows its memory until something stops it
                script = "const kept = []; setInterval(() => kept.push(new Array(4e6).fill(kept.length)), 50);"
                return self._send(200, page("Hog", f"<h1>Hog</h1><script>{script}</script>"))
            if path == "/popups":
                opener = "for (let i = 1; i <= 3; i++) window.open('/fares?' + i)"
                return self._send(200, page("Popups", f'<button onclick="{opener}">Open</button>'))
            if path == "/spin":  # keeps a core busy
                return self._send(
                    200, page("Spin", "<h1>Spin</h1><script>setTimeout(() => { for (;;) {} }, 100);</script>")
                )
            if path == "/noise":  # a canvas of random pixels: a full-page PNG of it is past 10 MB
                script = (
                    "const c = document.getElementById('noise'); const g = c.getContext('2d');"
                    "const img = g.createImageData(c.width, c.height);"
                    "for (let i = 0; i < img.data.length; i += 65536)"
                    " crypto.getRandomValues(img.data.subarray(i, Math.min(i + 65536, img.data.length)));"
                    "for (let i = 3; i < img.data.length; i += 4) img.data[i] = 255;"
                    "g.putImageData(img, 0, 0); document.body.append(Object.assign(document.createElement('p'), {id: 'done', textContent: 'drawn'}));"
                )
                body = f'<canvas id="noise" width="1280" height="4000" style="display:block"></canvas><script>{script}</script>'
                return self._send(200, page("Noise", body))
            if path == "/self":
                return self._send(200, page("Self", '<h1>Rebound</h1><img src="/pixel.png">'))
            if path == "/battery":
                return self._send(200, page("Battery", battery(forbidden.port)))
            if path == "/via-worker":
                return self._send(200, b"served by the site")
            return self._send(200, page("Home", "<h1>Harbour office</h1><p>Welcome.</p>"))

        def do_POST(self) -> None:
            site.paths.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode())
            if self.path == "/login" and form.get("user") == ["ada"] and form.get("password") == ["lovelace"]:
                return self._send(
                    303, b"", Location="/account", Set_Cookie="session=ada-7f3c; Path=/; HttpOnly; Max-Age=3600"
                )
            return self._send(401, page("Refused", "<p>Wrong user or password.</p>"))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    site = Site(port=server.server_port, forbidden=forbidden)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield site
    server.shutdown()
    server.server_close()
    listener.close()


async def finished(client: Any, request_id: str, headers: dict[str, str], *, seconds: float = 120) -> dict[str, Any]:
    """Poll the job until it ends: quickly at first (0.05 s apart, then twice as far each
    time), then at a pace within free_read's 120 reads a minute."""
    job: dict[str, Any] = {}
    pause = 0.05
    for _ in range(int(seconds / 0.4)):
        polled = await client.get(f"/v1/requests/{request_id}", headers=headers)
        job = polled.json()
        if polled.status_code == 200 and job["status"] in ("completed", "failed"):
            return job
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.4)
    raise AssertionError(f"{request_id} did not finish: {job}")


async def run_task(kernel: Any, client: Any, auth: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    """Pay for one task from the agent's credits, run it on a worker, answer its finished job."""
    worker = worker_for(kernel, poll_s=0.05)
    worker.start()
    try:
        accepted = await client.post("/v1/tools/browser/task", json=body, headers=auth)
        assert accepted.status_code == 202, accepted.text
        return await finished(client, accepted.json()["request_id"], auth)
    finally:
        await worker.stop()


async def one_task(kernel: Any, body: dict[str, Any]) -> dict[str, Any]:
    """One task of a new agent with a dollar of credits: its finished job."""
    async with http_client(kernel) as client:
        _, auth = await credits_session(client, "1")
        return await run_task(kernel, client, auth, body)


async def balance(client: Any, auth: dict[str, str]) -> str:
    return (await client.get("/v1/balance", headers=auth)).json()["credits_balance"]
