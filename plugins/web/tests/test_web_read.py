"""Tests for `web_read`, reading real HTML pages from a local HTTP server.

A `ThreadingHTTPServer` on 127.0.0.1 (a free port) serves the pages below; the
tool is called directly with a `ToolContext` whose client is built like the
kernel's (it follows redirects by default: the tool must not let it). Private
addresses are allowed through the settings, as a private deployment would; the
refusal tests turn the setting off. No test reaches the internet: the public-
address tests replace the resolver and answer through an `httpx.MockTransport`.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import httpx
import msgspec
import pytest

from tollway import FieldError, ToolContext, ToolError
from tollway_web import extract, fetch
from tollway_web.settings import ALLOW_PRIVATE_ADDRESSES
from tollway_web.tool import WEB_READ, WebReadInput, WebReadResult, check

ARTICLE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>The Lighthouse Keeper | Coastal News</title>
<meta name="description" content="A profile of the last keeper of the Point Reyes light.">
</head><body>
<header><nav><ul>
  <li><a href="/">Home</a></li><li><a href="/sections/harbour">Harbour desk</a></li><li><a href="/subscribe">Subscribe today</a></li>
</ul></nav></header>
<main><article>
<h1>The Lighthouse Keeper</h1>
<p>For forty years Elias Morgan climbed the hundred and twelve steps of the Point Reyes light every evening
at dusk, trimming the wick and winding the clockwork that turned the great lens.</p>
<p>When the coast guard automated the station in 1975, he stayed on as a volunteer, keeping a logbook of
every ship that passed and every storm that battered the headland.</p>
<h2>The logbook</h2>
<p>His logbook, now held by the county museum, records <strong>more than eleven thousand</strong> vessels,
from fishing trawlers to the <a href="/ships">container ships</a> bound for Oakland.</p>
<ul><li>Fog days: 214 a year</li><li>Storms logged: 1,340</li></ul>
</article></main>
<footer><p>Copyright 2024 Coastal News Syndicate. All rights reserved.</p><a href="/privacy">Privacy policy</a></footer>
</body></html>"""

NOT_FOUND = """<!doctype html><html><head><title>Page not found</title></head><body>
<main><h1>Page not found</h1><p>The harbour schedule you asked for has moved or never existed.
Try the timetable page instead.</p></main></body></html>"""

JS_ONLY = """<!doctype html><html><head><title>Harbour App</title></head>
<body><div id="root"></div><script>document.getElementById('root').textContent = 'Loaded';</script></body></html>"""

PARAGRAPH = "Tide tables, ferry notices and weather bulletins for the northern harbour, day after day. "
BIG = (
    "<!doctype html><html><head><title>Harbour archive</title></head><body><article><h1>Harbour archive</h1>"
    + "".join(f"<p>Entry {i}: {PARAGRAPH}ünïcödé ✓</p>" for i in range(1500))
    + "</article></body></html>"
)
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
HUGE_CHUNK = ("<p>" + PARAGRAPH * 10 + "</p>\n").encode()


@dataclass
class Site:
    base: str
    hits: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path


def _pages(handler: Handler) -> None:
    path = handler.path
    html = "text/html; charset=utf-8"
    if path.startswith("/redirect-chain/"):
        n = int(path.rsplit("/", 1)[1])
        return handler.answer(302, b"", location="/article" if n == 0 else f"/redirect-chain/{n - 1}")
    routes: dict[str, tuple[int, str | None, bytes, dict[str, str]]] = {
        "/article": (200, html, ARTICLE.encode(), {}),
        "/redirect": (302, html, b"<p>moved</p>", {"Location": "/article"}),
        "/redirect-relative/": (301, None, b"", {"Location": "../article"}),
        "/redirect-ftp": (302, None, b"", {"Location": "ftp://files.example.com/a.txt"}),
        "/big": (200, html, BIG.encode(), {}),
        "/doc.pdf": (200, "application/pdf", PDF, {}),
        "/logo.png": (200, "image/png", PNG, {}),
        "/mislabelled": (200, "text/html", PNG, {}),
        "/missing": (404, html, NOT_FOUND.encode(), {}),
        "/gone": (410, None, b"", {}),
        "/fragment": (200, html, b"<h1>Only a heading</h1>", {}),
        "/plain": (200, "text/plain; charset=utf-8", "Ferry times\n\n08:00 departs — 09:10 arrives\n".encode(), {}),
        "/untyped": (200, None, ARTICLE.encode(), {}),
        "/latin1": (
            200,
            "text/html; charset=iso-8859-1",
            "<html><body><p>Caf\xe9 du port, cr\xe8me br\xfbl\xe9e.</p></body></html>".encode("latin-1"),
            {},
        ),
        "/meta-charset": (
            200,
            "text/html",
            '<html><head><meta charset="windows-1252"></head><body><p>Na\xefve caf\xe9 \u2013 ferry \u20ac5.</p></body></html>'.encode(
                "cp1252"
            ),
            {},
        ),
        "/js-only": (200, html, JS_ONLY.encode(), {}),
        "/gzip": (200, html, gzip.compress(ARTICLE.encode()), {"Content-Encoding": "gzip"}),
        "/cookie": (200, html, ARTICLE.encode(), {"Set-Cookie": "session=abc123; Path=/"}),
        "/json": (200, "application/json", b'{"a": 1}', {}),
    }
    if path == "/huge":  # 6 MB of HTML, sent in pieces
        return handler.stream(200, html, (HUGE_CHUNK for _ in range(6 * 1024 * 1024 // len(HUGE_CHUNK) + 1)))
    if path == "/slow":
        time.sleep(2)
        return handler.answer(200, ARTICLE.encode(), content_type=html)
    if path == "/trickle":
        return handler.stream(200, html, (b"<p>tick</p>" for _ in range(30)), pause=0.1)
    if path not in routes:
        return handler.answer(404, b"", content_type=None)
    status, content_type, body, headers = routes[path]
    handler.answer(
        status, body, content_type=content_type, **{k.lower().replace("-", "_"): v for k, v in headers.items()}
    )


class Handler(BaseHTTPRequestHandler):
    site: Site

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.site.hits.append(self.path)
        _pages(self)

    def answer(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str | None = "text/html",
        location: str | None = None,
        content_encoding: str | None = None,
        set_cookie: str | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in (
            ("Content-Type", content_type),
            ("Location", location),
            ("Content-Encoding", content_encoding),
            ("Set-Cookie", set_cookie),
        ):
            if value is not None:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader refused the body (a PDF, say) and hung up

    def stream(self, status: int, content_type: str, chunks: Iterator[bytes], pause: float = 0.0) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                if pause:
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader stopped at its cap


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    s = Site(base="")
    handler = type("SiteHandler", (Handler,), {"site": s})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    s.base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield s
    server.shutdown()
    server.server_close()


def kernel_like_client(**kwargs: object) -> httpx.AsyncClient:
    """Built as the kernel builds `ctx.http`: it follows redirects unless told not to."""
    return httpx.AsyncClient(timeout=httpx.Timeout(15.0), follow_redirects=True, **kwargs)  # type: ignore[arg-type]


def value(url: str) -> WebReadInput:
    v = msgspec.convert({"url": url}, WebReadInput, strict=True)
    check(v)
    return v


async def read(
    url: str, *, allow_private: bool = True, http: httpx.AsyncClient | None = None, **settings: str
) -> WebReadResult:
    s = {ALLOW_PRIVATE_ADDRESSES.name: "true" if allow_private else "false", **settings}
    async with http or kernel_like_client() as client:
        return await WEB_READ.run(
            value(url), ToolContext(request_id="req_test", agent_id=None, http=client, settings=s)
        )


async def failure(url: str, **kwargs: object) -> ToolError:
    with pytest.raises(ToolError) as info:
        await read(url, **kwargs)  # type: ignore[arg-type]
    return info.value


# --- reading pages ------------------------------------------------------------------


async def test_article_main_content_as_markdown_without_boilerplate(site: Site) -> None:
    result = await read(site.url("/article"))
    md = result.markdown
    assert md.startswith("# The Lighthouse Keeper")
    assert "For forty years Elias Morgan climbed the hundred and twelve steps" in md
    assert "## The logbook" in md
    assert "**more than eleven thousand**" in md
    assert f"[container ships]({site.base}/ships)" in md  # links kept, made absolute
    assert "- Fog days: 214 a year" in md
    for boilerplate in ("Harbour desk", "Subscribe today", "Copyright 2024", "Privacy policy"):
        assert boilerplate not in md
    assert result.url == site.url("/article")
    assert result.truncated is False
    assert result.screenshot_url is None
    meta = result.metadata
    assert meta.title == "The Lighthouse Keeper"  # trafilatura drops the " | Coastal News" site suffix
    assert meta.description == "A profile of the last keeper of the Point Reyes light."
    assert meta.status_code == 200


async def test_result_serialises_with_the_spec_field_names(site: Site) -> None:
    body = msgspec.to_builtins(await read(site.url("/article")))
    assert set(body) == {"url", "markdown", "screenshot_url", "metadata", "truncated"}
    assert set(body["metadata"]) == {"title", "description", "statusCode"}


async def test_redirect_is_followed_and_final_url_reported(site: Site) -> None:
    result = await read(site.url("/redirect"))
    assert result.url == site.url("/article")
    assert "Elias Morgan" in result.markdown
    assert result.metadata.status_code == 200


async def test_relative_redirect_resolves_against_the_current_url(site: Site) -> None:
    result = await read(site.url("/redirect-relative/"))
    assert result.url == site.url("/article")


async def test_five_redirects_are_followed(site: Site) -> None:
    result = await read(site.url("/redirect-chain/4"))  # 4 -> ... -> 0 -> /article: 5 redirects
    assert result.url == site.url("/article")


async def test_more_than_five_redirects_is_source_unsupported(site: Site) -> None:
    err = await failure(site.url("/redirect-chain/5"))
    assert (err.code, err.status, err.details["reason"]) == ("source_unsupported", 422, "too_many_redirects")


async def test_redirect_to_another_scheme_is_source_unsupported(site: Site) -> None:
    err = await failure(site.url("/redirect-ftp"))
    assert (err.code, err.details["reason"]) == ("source_unsupported", "bad_redirect")


async def test_page_over_50_kb_is_truncated_on_a_character_boundary(site: Site) -> None:
    result = await read(site.url("/big"))
    size = len(result.markdown.encode("utf-8"))
    assert result.truncated is True
    assert 51_200 - 4 < size <= 51_200
    assert result.markdown.startswith("# Harbour archive")
    assert "\ufffd" not in result.markdown


async def test_body_over_5_mb_is_read_up_to_the_cap(site: Site) -> None:
    result = await read(site.url("/huge"))
    assert result.truncated is True
    assert len(result.markdown.encode("utf-8")) <= 51_200
    assert "Tide tables" in result.markdown


@pytest.mark.parametrize(
    ("path", "media"), [("/doc.pdf", "application/pdf"), ("/logo.png", "image/png"), ("/json", "application/json")]
)
async def test_non_html_content_types_are_source_unsupported(site: Site, path: str, media: str) -> None:
    err = await failure(site.url(path))
    assert (err.code, err.status) == ("source_unsupported", 422)
    assert err.details == {"reason": "content_type", "content_type": media, "upstream_status": 200}


async def test_binary_body_labelled_html_is_source_unsupported(site: Site) -> None:
    err = await failure(site.url("/mislabelled"))
    assert (err.code, err.details["reason"]) == ("source_unsupported", "binary_body")


async def test_404_page_with_a_body_is_a_result_with_its_status(site: Site) -> None:
    result = await read(site.url("/missing"))
    assert result.metadata.status_code == 404
    assert result.metadata.title == "Page not found"
    assert "has moved or never existed" in result.markdown


async def test_error_status_with_nothing_to_read_is_source_unsupported(site: Site) -> None:
    err = await failure(site.url("/gone"))
    assert (err.code, err.status) == ("source_unsupported", 422)
    assert err.details == {"reason": "http_error", "upstream_status": 410}


async def test_javascript_only_page_is_source_unsupported(site: Site) -> None:
    err = await failure(site.url("/js-only"))
    assert (err.code, err.details["reason"]) == ("source_unsupported", "no_text")


async def test_bare_fragment_page_is_read(site: Site) -> None:
    result = await read(site.url("/fragment"))
    assert "Only a heading" in result.markdown


async def test_plain_text_is_returned_as_sent(site: Site) -> None:
    result = await read(site.url("/plain"))
    assert result.markdown == "Ferry times\n\n08:00 departs — 09:10 arrives"
    assert (result.metadata.title, result.metadata.description) == (None, None)


async def test_page_without_content_type_is_sniffed_as_html(site: Site) -> None:
    result = await read(site.url("/untyped"))
    assert "Elias Morgan" in result.markdown and "Copyright 2024" not in result.markdown


async def test_charsets_from_header_and_from_meta(site: Site) -> None:
    assert "Café du port, crème brûlée." in (await read(site.url("/latin1"))).markdown
    assert "Naïve café – ferry €5." in (await read(site.url("/meta-charset"))).markdown


async def test_gzip_body_is_decoded(site: Site) -> None:
    assert "Elias Morgan" in (await read(site.url("/gzip"))).markdown


async def test_cookies_set_by_the_target_are_not_kept(site: Site) -> None:
    async with kernel_like_client() as http:
        s = {ALLOW_PRIVATE_ADDRESSES.name: "true"}
        await WEB_READ.run(
            value(site.url("/cookie")), ToolContext(request_id="r", agent_id=None, http=http, settings=s)
        )
        assert len(http.cookies.jar) == 0


async def test_screenshot_url_from_the_configured_template(site: Site) -> None:
    result = await read(site.url("/redirect"), screenshot_url_template="https://shots.example/render?url={url}&w=1280")
    assert (
        result.screenshot_url == "https://shots.example/render?url=" + quote(site.url("/article"), safe="") + "&w=1280"
    )
    assert result.screenshot_url.startswith("https://shots.example/render?url=http%3A%2F%2F127.0.0.1%3A")
    assert (
        await read(site.url("/article"), screenshot_url_template="https://shots.example/no-placeholder")
    ).screenshot_url is None


# --- reaching the target ----------------------------------------------------------------


async def test_unresolvable_host_is_target_unreachable() -> None:
    err = await failure("http://no-such-host.invalid/page")
    assert (err.code, err.status) == ("target_unreachable", 400)
    assert err.details == {"reason": "dns", "host": "no-such-host.invalid"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_refused_connection_is_target_unreachable() -> None:
    err = await failure(f"http://127.0.0.1:{_closed_port()}/")
    assert (err.code, err.status, err.details["reason"]) == ("target_unreachable", 502, "connect_failed")


async def test_slow_answer_is_target_unreachable(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "REQUEST_TIMEOUT", httpx.Timeout(0.5))
    err = await failure(site.url("/slow"))
    assert (err.code, err.status, err.details["reason"]) == ("target_unreachable", 504, "timeout")


async def test_whole_fetch_has_a_deadline(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "FETCH_DEADLINE_S", 0.5)  # each read is quick; the body never ends in time
    err = await failure(site.url("/trickle"))
    assert (err.code, err.status, err.details["reason"]) == ("target_unreachable", 504, "timeout")


async def test_a_host_name_is_read_and_reported_by_name(site: Site) -> None:
    port = site.base.rsplit(":", 1)[1]
    result = await read(f"http://localhost:{port}/article")
    assert result.url == f"http://localhost:{port}/article"
    assert "Elias Morgan" in result.markdown


async def test_addresses_are_tried_in_turn_until_one_connects(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    # 127.0.0.2 is loopback too, but the server listens on 127.0.0.1 only: refused.
    monkeypatch.setattr(fetch, "resolve", fake_resolver({"twohomes.test": ["127.0.0.2", "127.0.0.1"]}))
    port = site.base.rsplit(":", 1)[1]
    result = await read(f"http://twohomes.test:{port}/article")
    assert result.url == f"http://twohomes.test:{port}/article"
    assert "Elias Morgan" in result.markdown


# --- private addresses ----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433"])
async def test_private_addresses_are_refused_before_connecting(site: Site, host: str) -> None:
    port = site.base.rsplit(":", 1)[1]
    before = len(site.hits)
    err = await failure(f"http://{host}:{port}/article", allow_private=False)
    assert (err.code, err.status, err.details["reason"]) == ("target_unreachable", 400, "private_address")
    assert len(site.hits) == before  # nothing was sent


async def test_private_addresses_are_refused_by_default(site: Site) -> None:
    async with kernel_like_client() as http:
        with pytest.raises(ToolError) as info:
            await WEB_READ.run(
                value(site.url("/article")), ToolContext(request_id="r", agent_id=None, http=http, settings={})
            )
    assert info.value.details["reason"] == "private_address"


async def test_private_setting_from_the_environment(site: Site, kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_web"}, env={"TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES": " TRUE "})
    settings = kernel.family_settings("web")
    async with kernel_like_client() as http:
        result = await WEB_READ.run(
            value(site.url("/article")), ToolContext(request_id="r", agent_id=None, http=http, settings=settings)
        )
    assert result.metadata.status_code == 200


async def test_redirect_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A public page may not bounce the fetch into the private network."""
    monkeypatch.setattr(fetch, "resolve", fake_resolver({"news.example.com": ["93.184.215.14"]}))
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(302, headers={"Location": "http://169.254.169.254/latest/meta-data/"})

    err = await failure("http://news.example.com/", allow_private=False, http=mock_client(handler))
    assert err.details["reason"] == "private_address"
    assert len(seen) == 1


def fake_resolver(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]  # a literal address needs no DNS
        except ValueError:
            pass
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return resolve


def mock_client(handler) -> httpx.AsyncClient:
    return kernel_like_client(transport=httpx.MockTransport(handler))


async def test_public_host_is_fetched_at_the_checked_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "resolve", fake_resolver({"news.example.com": ["93.184.215.14"]}))
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=ARTICLE.encode(), headers={"content-type": "text/html"})

    result = await read("https://news.example.com/story#top", allow_private=False, http=mock_client(handler))
    (request,) = seen
    assert str(request.url) == "https://93.184.215.14/story"
    assert request.headers["host"] == "news.example.com"
    assert request.extensions["sni_hostname"] == "news.example.com"
    assert result.url == "https://news.example.com/story#top"
    assert "[container ships](https://news.example.com/ships)" in result.markdown


async def test_a_name_with_any_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch, "resolve", fake_resolver({"mixed.example.com": ["93.184.215.14", "10.0.0.7"]}))

    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("nothing may be sent")

    err = await failure("http://mixed.example.com/", allow_private=False, http=mock_client(handler))
    assert err.details["reason"] == "private_address"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("255.255.255.255", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("64:ff9b::5db8:d70e", True),  # NAT64 of 93.184.215.14
    ],
)
def test_is_public(address: str, public: bool) -> None:
    assert fetch.is_public(ipaddress.ip_address(address)) is public


# --- extraction details --------------------------------------------------------------------


def test_baseline_stands_in_when_main_content_extraction_finds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract.trafilatura, "extract", lambda *a, **k: None)
    found = extract.extract_page(ARTICLE.encode(), "text/html", "utf-8", "http://x.test/a")
    assert "Elias Morgan" in found.markdown
    assert found.title == "The Lighthouse Keeper"


@pytest.mark.parametrize("text", ["a" * 51_199 + "é", "é" * 30_000, "€" * 20_000, "x" * 10])
def test_truncate_utf8_cuts_on_a_character_boundary(text: str) -> None:
    cut, truncated = extract.truncate_utf8(text)
    assert len(cut.encode("utf-8")) <= 51_200
    assert text.startswith(cut)
    assert truncated is (len(text.encode("utf-8")) > 51_200)


async def test_extraction_runs_off_the_event_loop(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    loop_thread: list[int] = []
    real = extract.extract_page

    def spy(*args: object):
        loop_thread.append(threading.get_ident())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(extract, "extract_page", spy)
    await read(site.url("/article"))
    assert loop_thread and loop_thread[0] != threading.get_ident()


# --- input rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "http://example.com",
        "HTTPS://Example.COM/a?b=c#d",
        "https://bücher.example/",
        "http://127.0.0.1:8080/x",
        "http://[::1]:8080/",
        "https://example.com/" + "a" * 2028,
    ],
)
def test_good_urls_pass(url: str) -> None:
    assert len(url) <= 2048
    value(url)


@pytest.mark.parametrize(
    "url",
    [
        "example.com",
        "ftp://example.com/",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://",
        "http:///path",
        "https://exa mple.com/",
        " https://example.com/",
        "https://example.com/\n",
        "http://example.com:99999/",
        "http://example.com:0/",
        "mailto:someone@example.com",
        "//example.com/",
    ],
)
def test_check_refuses_bad_urls(url: str) -> None:
    v = msgspec.convert({"url": url}, WebReadInput, strict=True)
    with pytest.raises(FieldError) as info:
        check(v)
    assert info.value.field == "url"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"url": ""},
        {"url": 42},
        {"url": None},
        {"url": "https://example.com/" + "a" * 2029},
        {"url": "https://a.b/", "x": 1},
    ],
)
def test_msgspec_refuses_bad_shapes(body: dict) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(body, WebReadInput, strict=True)


def test_declaration() -> None:
    t = WEB_READ
    assert (t.name, t.path, t.category, t.subcategory, t.family) == (
        "web_read",
        "/v1/tools/web-read",
        "data",
        "web_read",
        "web",
    )
    assert (t.mode, t.payment_header, t.idempotency, t.rate_limit, t.time_limit_s) == (
        "job",
        "X-Payment-Proof",
        "optional",
        "paid",
        60,
    )
    assert t.quote(value("https://example.com/")) == 20_000  # 0.02 USDC
    for example in t.examples:
        value(example.input["url"])
    # The fetch finishes (or gives up) well inside the job's time limit.
    assert t.time_limit_s > fetch.FETCH_DEADLINE_S + 15


async def test_concurrent_reads_share_one_client(site: Site) -> None:
    async with kernel_like_client() as http:
        s = {ALLOW_PRIVATE_ADDRESSES.name: "true"}
        results = await asyncio.gather(
            *(
                WEB_READ.run(value(site.url(p)), ToolContext(request_id="r", agent_id=None, http=http, settings=s))
                for p in ("/article", "/missing", "/redirect", "/plain")
            )
        )
    assert [r.metadata.status_code for r in results] == [200, 404, 200, 200]
