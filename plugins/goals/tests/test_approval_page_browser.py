"""The approval link in a real browser: headless Chromium opens, approves and reopens links."""

from __future__ import annotations

import hmac
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from browser import Browser, missing_chromium

from tollway_goals.approval_links import Refusal, make_token, read_token, shown_hash
from tollway_goals.approval_pages import REFUSALS, approval_page, approved_page, pretty_shown, refusal_page

CHROMIUM_MISSING = missing_chromium()
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "approvals"
SECRET = b"approval-links-test-secret-32byte"
SHOWN = {
    "action": "merge pull request",
    "repository": "acme/web",
    "pull_request": 42,
    "title": "Fix <script>alert('checkout')</script> escaping",
    "changes": {"files": 3, "additions": 57, "deletions": 12},
    "reviewers": ["Zoë", "Kofi"],
}
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.fixture(scope="module", autouse=True)
def chromium_installed() -> None:
    if CHROMIUM_MISSING:
        pytest.fail(CHROMIUM_MISSING, pytrace=False)


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Ask:
    person_name: str
    question: str
    shown: object
    shown_hash: str
    expires_at_s: int
    approved_at: float | None = None


class Approvals:
    """The server side of the links, with an in-memory store of asks."""

    def __init__(self) -> None:
        self.asks: dict[str, Ask] = {}
        self.lock = threading.Lock()

    def ask(self, shown: object, *, expires_in_s: int = 600) -> tuple[str, Ask]:
        ask_id = str(uuid.uuid4())
        ask = Ask(
            "Ada Lovelace",
            "May the agent merge this pull request?",
            shown,
            shown_hash(shown),
            int(time.time()) + expires_in_s,
        )
        self.asks[ask_id] = ask
        return make_token(SECRET, ask_id, ask.shown_hash, ask.expires_at_s), ask

    def _read(self, token: str) -> tuple[str, Ask] | Refusal:
        found = read_token(
            SECRET,
            token,
            now_s=time.time(),
            shown_hash_of=lambda ask_id: self.asks[ask_id].shown_hash if ask_id in self.asks else None,
            is_used=lambda ask_id: self.asks[ask_id].approved_at is not None,
        )
        return found if isinstance(found, Refusal) else (found.ask_id, self.asks[found.ask_id])

    def get(self, token: str) -> tuple[int, str]:
        found = self._read(token)
        if isinstance(found, Refusal):
            return found.status, refusal_page(found)
        _, ask = found
        return 200, approval_page(
            person_name=ask.person_name,
            question=ask.question,
            shown=ask.shown,
            shown_hash=ask.shown_hash,
            action_path=f"/v1/approvals/{token}",
            expires_at_iso=iso(ask.expires_at_s),
        )

    def post(self, token: str, displayed_hash: str) -> tuple[int, str]:
        with self.lock:
            found = self._read(token)
            if isinstance(found, Refusal):
                return found.status, refusal_page(found)
            _, ask = found
            if not hmac.compare_digest(displayed_hash.encode(), ask.shown_hash.encode()):
                return Refusal.ALTERED.status, refusal_page(Refusal.ALTERED)
            ask.approved_at = time.time()
        return 200, approved_page(who=ask.person_name, when_iso=iso(ask.approved_at), shown_hash=ask.shown_hash)


def handler_for(approvals: Approvals) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        prefix = "/v1/approvals/"

        def log_message(self, *_args: object) -> None:
            pass

        def _token(self) -> str | None:
            path = urllib.parse.urlsplit(self.path).path
            return path[len(self.prefix) :] if path.startswith(self.prefix) else None

        def _send(self, status: int, html: str) -> None:
            body = html.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            token = self._token()
            self._send(*(approvals.get(token) if token is not None else (404, "not found")))

        def do_POST(self) -> None:
            token = self._token()
            length = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(length).decode("ascii", "replace"))
            displayed = form.get("shown_hash", [""])[0]
            self._send(*(approvals.post(token, displayed) if token is not None else (404, "not found")))

    return Handler


@dataclass
class Site:
    approvals: Approvals
    base: str

    def link(self, token: str) -> str:
        return f"{self.base}/v1/approvals/{token}"


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    approvals = Approvals()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(approvals))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Site(approvals, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser(chromium_installed: None) -> Iterator[Browser]:
    with Browser() as b:
        yield b


def post(url: str, shown_hash_value: str) -> int:
    data = urllib.parse.urlencode({"shown_hash": shown_hash_value}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def flip_mac_character(token: str) -> str:
    index = len(token) - 10
    return token[:index] + B64[(B64.index(token[index]) + 4) % 64] + token[index + 1 :]


def assert_refusal(browser: Browser, url: str, reason: Refusal, screenshot: str) -> None:
    assert browser.navigate(url) == reason.status
    assert browser.attribute_of("#reason", "data-reason") == reason.value
    assert browser.text_of("#reason") == REFUSALS[reason.value][1]
    assert browser.text_of("#approve") is None
    browser.screenshot(ARTIFACTS / screenshot)


def test_approve_once_then_the_link_is_used(site: Site, browser: Browser):
    token, ask = site.approvals.ask(SHOWN)
    assert browser.navigate(site.link(token)) == 200
    assert browser.text_of("#shown") == pretty_shown(SHOWN)
    assert "<script>alert('checkout')</script>" in browser.text_of("#shown")
    assert browser.evaluate("document.scripts.length") == 0
    assert browser.attribute_of("input[name=shown_hash]", "value") == ask.shown_hash
    assert browser.text_of("#shown-hash") == ask.shown_hash
    assert browser.evaluate("document.title") == "Approval requested · Tollway"
    browser.screenshot(ARTIFACTS / "approval.png")

    assert browser.click("#approve") == 200
    assert "Approved by Ada Lovelace" in browser.text_of("#approved")
    assert browser.evaluate("location.pathname") == f"/v1/approvals/{token}"
    assert ask.approved_at is not None
    approved_at = ask.approved_at
    browser.screenshot(ARTIFACTS / "approved.png")

    assert_refusal(browser, site.link(token), Refusal.USED, "refused-used.png")
    assert post(site.link(token), ask.shown_hash) == 410
    assert ask.approved_at == approved_at


def test_the_page_needs_no_script(site: Site, browser: Browser):
    token, ask = site.approvals.ask({"action": "close issue", "issue": 7})
    browser.set_page_scripts(False)
    try:
        assert browser.navigate(site.link(token)) == 200
        assert browser.text_of("#shown") == pretty_shown(ask.shown)
        assert browser.click("#approve") == 200
        assert browser.text_of("#approved").startswith("Approved by Ada Lovelace")
    finally:
        browser.set_page_scripts(True)
    assert ask.approved_at is not None


def test_altered_link_is_refused(site: Site, browser: Browser):
    token, ask = site.approvals.ask(SHOWN)
    altered = flip_mac_character(token)
    assert altered != token
    assert_refusal(browser, site.link(altered), Refusal.ALTERED, "refused-altered.png")
    assert post(site.link(altered), ask.shown_hash) == 403
    assert ask.approved_at is None
    assert browser.navigate(site.link(token)) == 200


def test_expired_link_is_refused(site: Site, browser: Browser):
    token, ask = site.approvals.ask({"action": "deploy", "to": "production"}, expires_in_s=-5)
    assert_refusal(browser, site.link(token), Refusal.EXPIRED, "refused-expired.png")
    assert post(site.link(token), ask.shown_hash) == 410
    assert ask.approved_at is None


def test_unknown_ask_is_refused(site: Site, browser: Browser):
    token = make_token(SECRET, str(uuid.uuid4()), shown_hash(SHOWN), int(time.time()) + 600)
    assert_refusal(browser, site.link(token), Refusal.UNKNOWN, "refused-unknown.png")


def test_post_of_other_content_than_shown_is_refused(site: Site):
    shown = {"action": "delete branch", "branch": "main"}
    token, ask = site.approvals.ask(shown)
    assert post(site.link(token), shown_hash({"action": "delete branch", "branch": "gh-pages"})) == 403
    assert post(site.link(token), shown_hash(shown)) == 200
    assert post(site.link(token), shown_hash(shown)) == 410
