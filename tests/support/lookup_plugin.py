"""A lookup tool for kernel tests that calls an HTTP upstream: `lookup_word` asks a
word list service for a word's senses through the kernel's outbound client.

The upstream is ours too: `word_list_transport()` answers in-process kernels (an
`httpx.MockTransport`), `word_list_app()` serves the same answers over real HTTP
for `tollway serve`/`tollway mcp` children (TOLLWAY_LOOKUP_API_URL points at it).
Both note every request they were asked, so tests can count upstream calls.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import parse_qs

import httpx
import msgspec

from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Example, Tool, ToolContext, ToolError

DEFAULT_URL = "https://words.tollway.test"
URL_SETTING = Setting(
    family="lookup", name="api_url", default=DEFAULT_URL, description="Base URL of the test word list service."
)
WORDS_PATH = "/v1/words"

# What the word list service knows; `total` may exceed the senses it sends (like a paged upstream).
WORDS: dict[str, dict[str, Any]] = {
    "ship": {
        "word": "ship",
        "total": 3,
        "senses": [
            {
                "id": "ship-n-1",
                "part": "noun",
                "gloss": "a large vessel that travels on water",
                "first_seen": "12/01/0890",
            },
            {"id": "ship-v-1", "part": "verb", "gloss": "to send goods to a buyer", "first_seen": "05/07/1300"},
        ],
    },
}


class LookupInput(msgspec.Struct, forbid_unknown_fields=True):
    word: Annotated[str, msgspec.Meta(min_length=1, max_length=40, pattern=r"^[A-Za-z]+$")]
    limit: Annotated[int, msgspec.Meta(ge=1, le=10)] = 10


class Sense(msgspec.Struct):
    id: str
    part: str
    gloss: str
    first_seen: str  # ISO date (the upstream writes day/month/year)


class LookupResult(msgspec.Struct):
    word: str
    total: int  # the upstream's own count (it may send fewer senses)
    senses: list[Sense]


class Evidence(msgspec.Struct):
    source: str
    url: str  # what was asked of the upstream


class LookupAnswer(msgspec.Struct):
    result: LookupResult
    evidence: Evidence


def _iso(day_month_year: str) -> str:
    day, month, year = day_month_year.split("/")
    return f"{year}-{month}-{day}"


def _base_url(settings: Any) -> str:
    return (
        settings.get(URL_SETTING.name)
        or settings.get(URL_SETTING.env_var)
        or os.environ.get(URL_SETTING.env_var)
        or DEFAULT_URL
    ).rstrip("/")


async def run_lookup(value: LookupInput, ctx: ToolContext) -> LookupAnswer:
    url = f"{_base_url(ctx.settings)}{WORDS_PATH}"
    try:
        response = await ctx.http.get(url, params={"word": value.word.lower()}, timeout=10.0)
    except httpx.HTTPError as exc:
        raise ToolError("provider_unavailable", f"the word list did not answer: {exc}", status=503) from None
    if response.status_code != 200:
        raise ToolError("provider_unavailable", f"the word list answered {response.status_code}", status=503)
    body = response.json()
    ctx.provider_cost = 100
    senses = [
        Sense(id=s["id"], part=s["part"], gloss=s["gloss"], first_seen=_iso(s["first_seen"]))
        for s in body["senses"][: value.limit]
    ]
    result = LookupResult(word=body["word"], total=body["total"], senses=senses)
    return LookupAnswer(result=result, evidence=Evidence(source="test word list", url=str(response.request.url)))


LOOKUP = Tool(
    name="lookup_word",
    path="/v1/tools/test/lookup",
    title="Word lookup",
    description="Senses of an English word from a word list service (kernel tests).",
    category="data",
    input_type=LookupInput,
    output_type=LookupAnswer,
    run=run_lookup,
    price="0.005",
    family="lookup",
    examples=(Example("ship", {"word": "ship"}),),
)


class LookupPlugin:
    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        register(LOOKUP)

    @hookimpl
    def register_settings(self, register: Callable[[Setting], None]) -> None:
        register(URL_SETTING)


def _answer(path: str, query: dict[str, str]) -> tuple[int, bytes]:
    known = WORDS.get(query.get("word", "")) if path == WORDS_PATH and set(query) == {"word"} else None
    return (200, json.dumps(known).encode()) if known else (404, b'{"error": "unknown word"}')


class WordListTransport(httpx.MockTransport):
    """The word list service for an in-process kernel; `served` lists the paths asked
    with a known answer, `unexpected` every other request."""

    def __init__(self) -> None:
        self.served: list[httpx.Request] = []
        self.unexpected: list[httpx.Request] = []
        super().__init__(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        same_host = str(request.url).startswith(DEFAULT_URL)
        status, body = _answer(request.url.path, dict(request.url.params)) if same_host else (599, b"{}")
        (self.served if status == 200 else self.unexpected).append(request)
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})


def word_list_transport() -> WordListTransport:
    return WordListTransport()


def word_list_app(served: list[str]) -> Any:
    """The word list service as an ASGI app (for a child process); appends each path asked to `served`."""

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        served.append(scope["path"])
        status, body = _answer(scope["path"], query)
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": body})

    return app


__all__ = [
    "LOOKUP",
    "LookupPlugin",
    "URL_SETTING",
    "WORDS",
    "WordListTransport",
    "word_list_app",
    "word_list_transport",
]
