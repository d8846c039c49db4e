"""Helpers for the research tests: a local site of articles, a searcher over it, and a
scripted OpenAI-compatible Chat Completions server, all real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
from research_pages import TOPICS, all_pages, page_path, page_title

from tollway_web.research import Hit


def _serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def reply(self, status: int, body: bytes, content_type: str | None) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@dataclass
class Site:
    base: str
    hits: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.base + path


def serve_site() -> Iterator[Site]:
    pages = all_pages()
    s = Site(base="")

    class Handler(_Quiet):
        def do_GET(self) -> None:
            s.hits.append(self.path)
            if self.path in pages:
                return self.reply(200, pages[self.path].encode(), "text/html; charset=utf-8")
            if self.path == "/fail/server-error":
                return self.reply(500, b"", None)
            if self.path == "/fail/report.pdf":
                return self.reply(200, b"%PDF-1.4\n%\xe2\xe3\n", "application/pdf")
            if self.path == "/fail/empty":
                return self.reply(200, b"<html><body><script>app()</script></body></html>", "text/html")
            if self.path in ("/fail/slow", "/fail/very-slow"):
                time.sleep(3 if self.path == "/fail/slow" else 8)
                return self.reply(200, b"<p>late</p>", "text/html")
            self.reply(404, b"", None)

    server, s.base = _serve(Handler)
    yield s
    server.shutdown()
    server.server_close()


class SiteSearcher:
    """Answers a query with the site's articles on the topic the query is about, in an
    order that depends on the query, in the web search result's shape (`query`, `results`
    of url/title/description, `result_count`). `failing` addresses come first when given;
    `per_page` caps a page of results below `max_results` (page 2, 3, ... give the next ones);
    `delay_s` makes every search that slow."""

    name = "test_search"

    def __init__(
        self,
        site: Site,
        *,
        failing: tuple[str, ...] = (),
        pages_per_topic: int | None = None,
        fail_with: Exception | None = None,
        per_page: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self.site = site
        self.failing = failing
        self.pages_per_topic = pages_per_topic
        self.fail_with = fail_with
        self.per_page = per_page
        self.delay_s = delay_s
        self.queries: list[tuple[str, int]] = []
        self.pages: list[tuple[str, int]] = []  # (query, page) of every search

    def answer(self, query: str, max_results: int, page: int = 1) -> dict[str, Any]:
        topic = next((t for t in TOPICS if t.split()[0] in query.lower()), None)
        results: list[dict[str, str]] = [
            {"url": self.site.url(p), "title": "Unavailable", "description": ""} for p in self.failing
        ]
        if topic is not None:
            entry = TOPICS[topic]
            count = self.pages_per_topic or int(entry["pages"])  # type: ignore[call-overload]
            shift = sum(map(ord, query)) % count
            for j in range(count):
                i = (j + shift) % count
                results.append(
                    {
                        "url": self.site.url(page_path(str(entry["slug"]), i)) + ("#top" if j % 5 == 4 else ""),
                        "title": page_title(topic, i),
                        "description": f"An article about {topic}.",
                    }
                )
        size = min(max_results, self.per_page or max_results)
        results = results[(page - 1) * size : page * size]
        return {"query": query, "results": results, "result_count": len(results)}

    async def search(self, query: str, max_results: int, page: int = 1) -> list[Hit]:
        self.queries.append((query, max_results))
        self.pages.append((query, page))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_with is not None:
            raise self.fail_with
        raw = json.dumps(self.answer(query, max_results, page)).encode()
        return [Hit(**r) for r in msgspec.json.decode(raw)["results"]]


@dataclass
class ChatServer:
    """A scripted Chat Completions server: `script(request_json) -> (status, body, delay_s)`."""

    base: str
    script: Callable[[dict[str, Any]], tuple[int, Any, float]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def completion(content: str | None, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def serve_chat() -> Iterator[ChatServer]:
    chat = ChatServer(base="", script=lambda body: (500, {"error": {"message": "unscripted"}}, 0.0))

    class Handler(_Quiet):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            chat.requests.append(body)
            chat.headers.append({k.lower(): v for k, v in self.headers.items()})
            chat.paths.append(self.path)
            status, answer, delay = chat.script(body)
            if delay:
                time.sleep(delay)
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.reply(status, data, "application/json")

    server, chat.base = _serve(Handler)
    chat.base += "/v1"
    yield chat
    server.shutdown()
    server.server_close()


SEARXNG_PAGE = 10  # results on one page of a SearXNG answer


def serve_searxng(searcher: SiteSearcher) -> tuple[ThreadingHTTPServer, str]:
    """A SearXNG stand-in on 127.0.0.1: `/search?q=…&format=json[&pageno=N]` answers SearXNG's
    documented shape (`query`, `results` of url/title/content) with `searcher`'s pages for the
    query, 10 a page; `searcher.queries` and `searcher.pages` note each search."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            asked = parse_qs(urlsplit(self.path).query)
            q, page = asked.get("q", [""])[0], int(asked.get("pageno", ["1"])[0])
            searcher.queries.append((q, SEARXNG_PAGE))
            searcher.pages.append((q, page))
            found = searcher.answer(q, SEARXNG_PAGE, page)["results"]
            body = json.dumps(
                {
                    "query": q,
                    "results": [{"url": r["url"], "title": r["title"], "content": r["description"]} for r in found],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def serve_brave(seen: list[dict[str, list[str]]]) -> tuple[ThreadingHTTPServer, str]:
    """A Brave Search stand-in on 127.0.0.1 answering `/res/v1/web/search` with the recorded
    answer in `fixtures/search`, noting each request's query parameters in `seen`."""
    body = (Path(__file__).parent / "fixtures" / "search" / "brave_web_search.json").read_bytes()

    class Handler(_Quiet):
        def do_GET(self) -> None:
            seen.append(parse_qs(urlsplit(self.path).query))
            self.reply(200, body, "application/json")

    return _serve(Handler)
