"""`tollway.Upstream`, `tollway.Evidence` and `ToolContext.setting`: the settings an
upstream declares and how they are read, the one mapping of upstream failures to
tool failures, and that no plugin reads the environment itself."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import Evidence, Setting, ToolContext, ToolError, Upstream, hookimpl, source_int, source_text
from tollway._core.plugin_api.upstream import retry_after_s

REPO = Path(__file__).resolve().parents[2]
BASE = "https://registry.example.org/v2"

REGISTRY = Upstream(
    family="hooks", name="registry", label="The Registry", default_base_url=BASE,
    description="Base URL of the registry.", api_key="Optional registry key.",
)  # fmt: skip


def ctx(handler: Callable[[httpx.Request], httpx.Response], **settings: str) -> ToolContext:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings)


def answering(
    status: int, content: bytes = b"{}", headers: dict[str, str] | None = None, **settings: str
) -> ToolContext:
    return ctx(lambda request: httpx.Response(status, content=content, headers=headers or {}), **settings)


async def failure(context: ToolContext) -> ToolError:
    with pytest.raises(ToolError) as info:
        await REGISTRY.get_json(context, "/items")
    return info.value


# -- settings -----------------------------------------------------------------------
def test_declares_a_url_setting_and_an_optional_key_setting() -> None:
    url, key = REGISTRY.settings
    assert (url.family, url.name, url.default, url.env_var) == (
        "hooks",
        "registry_api_url",
        BASE,
        "TOLLWAY_HOOKS_REGISTRY_API_URL",
    )
    assert (key.name, key.default, key.env_var) == ("registry_api_key", None, "TOLLWAY_HOOKS_REGISTRY_API_KEY")
    bare = Upstream(
        family="hooks", name="lists", label="L", default_base_url=BASE, description="d", url_setting="lists_url"
    )
    assert [s.name for s in bare.settings] == ["lists_url"] and bare.api_key({"registry_api_key": "k"}) is None


def test_base_url_and_key_read_by_setting_name() -> None:
    assert REGISTRY.base_url({}) == BASE
    assert REGISTRY.base_url({"registry_api_url": " http://mirror.test/reg/ "}) == "http://mirror.test/reg"
    assert REGISTRY.base_url({"registry_api_url": "   "}) == BASE  # blank is unset
    assert REGISTRY.base_url({"TOLLWAY_HOOKS_REGISTRY_API_URL": "http://other"}) == BASE  # names, not variables
    assert REGISTRY.api_key({}) is None and REGISTRY.api_key({"registry_api_key": " "}) is None
    assert REGISTRY.api_key(answering(200, registry_api_key=" k1 ")) == "k1"


def test_tool_context_setting_falls_back_to_the_declared_default() -> None:
    units = Setting("hooks", "units", "metric", "Unit system.")
    context = ToolContext(request_id="r", agent_id=None, http=None, settings={"token": " t0k ", "blank": ""})  # type: ignore[arg-type]
    assert context.setting("token") == "t0k"
    assert context.setting(units) == "metric"
    assert context.setting("blank", "fallback") == "fallback" and context.setting("missing") is None
    assert (
        ToolContext(request_id="r", agent_id=None, http=None, settings={"units": "imperial"}).setting(units)
        == "imperial"
    )  # type: ignore[arg-type]


class RegistryPlugin:
    @hookimpl
    def register_settings(self, register: Callable[[Setting], None]) -> None:
        for setting in REGISTRY.settings:
            register(setting)


async def test_environment_reaches_the_tool_through_the_kernel(kernel_factory) -> None:
    env = {"TOLLWAY_HOOKS_REGISTRY_API_URL": "http://mirror.test/", "TOLLWAY_HOOKS_REGISTRY_API_KEY": "k2"}
    kernel = await kernel_factory(plugins=[("registry", RegistryPlugin())], env=env)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True})

    context = ctx(handler, **kernel.family_settings("hooks"))
    assert REGISTRY.api_key(context) == "k2"
    assert await REGISTRY.get_json(context, "/items", params={"q": "x"}) == {"ok": True}
    assert str(seen[0].url) == "http://mirror.test/items?q=x"


# -- the failure mapping ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("exc", "reason"),
    [(lambda r: httpx.ReadTimeout("t", request=r), "timeout"), (lambda r: httpx.ConnectTimeout("t", request=r), "timeout"),
     (lambda r: httpx.ConnectError("refused", request=r), "ConnectError"), (lambda r: httpx.RemoteProtocolError("x", request=r), "RemoteProtocolError")],
)  # fmt: skip
async def test_transport_failures_are_provider_unavailable(exc, reason: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    err = await failure(ctx(handler))
    assert (err.code, err.status, err.details) == ("provider_unavailable", 503, {"reason": reason})
    assert err.message.startswith("The Registry ")


@pytest.mark.parametrize("status", [400, 404, 409, 500, 502, 503, 504, 302])
async def test_other_statuses_are_provider_unavailable(status: int) -> None:
    err = await failure(answering(status, b'{"error": "x"}'))
    assert (err.code, err.status, err.details) == ("provider_unavailable", 503, {"upstream_status": status})


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_are_provider_auth(status: int) -> None:
    err = await failure(answering(status))
    assert (err.code, err.status, err.details) == ("provider_auth", 503, {"upstream_status": status})


@pytest.mark.parametrize(
    ("headers", "details"),
    [({"retry-after": "60"}, {"upstream_status": 429, "retry_after": 60}), ({}, {"upstream_status": 429}),
     ({"retry-after": "soon"}, {"upstream_status": 429})],
)  # fmt: skip
async def test_429_is_rate_limited_with_retry_after(headers: dict[str, str], details: dict[str, int]) -> None:
    err = await failure(answering(429, b"slow down", headers))
    assert (err.code, err.status, err.details) == ("rate_limited", 503, details)


async def test_429_with_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    err = await failure(answering(429, b"", {"Retry-After": when}))
    assert err.code == "rate_limited" and 115 <= err.details["retry_after"] <= 121


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    assert retry_after_s("7", now) == 7 and retry_after_s(" 0 ", now) == 0
    assert retry_after_s(email.utils.formatdate(now + 30, usegmt=True), now) == 30
    assert retry_after_s(email.utils.formatdate(now - 30, usegmt=True), now) == 0
    assert retry_after_s("-5", now) is None and retry_after_s("", now) is None and retry_after_s(None, now) is None


@pytest.mark.parametrize("body", [b"<html>maintenance</html>", b"", b"{not json"])
async def test_a_2xx_that_is_not_json_is_provider_unavailable(body: bytes) -> None:
    err = await failure(answering(200, body))
    assert (err.code, err.status, err.details) == ("provider_unavailable", 503, {"upstream_status": 200})
    assert "other than JSON" in err.message


async def test_send_returns_any_status_and_records_when_answered() -> None:
    calls: list[str] = []
    reply = await REGISTRY.send(answering(404, b'{"error": {"code": "NOT_FOUND"}}'), "/items", calls=calls)
    assert (reply.status, reply.ok, reply.body) == (404, False, {"error": {"code": "NOT_FOUND"}})
    assert len(calls) == 1 and re.match(r"^\d{4}-\d{2}-\d{2}T", calls[0])
    assert (await REGISTRY.send(answering(200, b"<xml/>"), "/x")).body is None
    err = REGISTRY.refusal(reply, upstream_code="NOT_FOUND")
    assert err.details == {"upstream_status": 404, "upstream_code": "NOT_FOUND"}


async def test_a_bare_client_needs_a_base_url() -> None:
    async with httpx.AsyncClient(
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json=[str(r.url)]))
    ) as http:
        assert await REGISTRY.get_json(http, "/p", base_url="http://h.test/") == ["http://h.test/p"]
        with pytest.raises(TypeError):
            await REGISTRY.send(http, "/p")


async def test_post_sends_the_form() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST" and request.content == b"name=aspirin"
        return httpx.Response(200, json={"ok": 1})

    assert await REGISTRY.get_json(ctx(handler), "/search", method="POST", data={"name": "aspirin"}) == {"ok": 1}


# -- evidence and value readers ----------------------------------------------------------
def test_evidence_serves_calls_only_when_given() -> None:
    plain = msgspec.to_builtins(Evidence.now("FDIC", as_of=None))
    assert set(plain) == {"source", "source_kind", "retrieved_at", "as_of"} and plain["source_kind"] == "public"
    with_calls = msgspec.to_builtins(Evidence.now("PubChem", as_of="2024-01-01", calls=["t1", "t2"]))
    assert with_calls["calls"] == [{"retrieved_at": "t1"}, {"retrieved_at": "t2"}]
    assert msgspec.json.schema(Evidence)["$defs"]["Evidence"]["required"] == [
        "source",
        "source_kind",
        "retrieved_at",
        "as_of",
    ]


def test_source_value_readers() -> None:
    assert [source_text(v) for v in ("  a ", "", None, True, 12, 1.5, [])] == ["a", None, None, None, "12", "1.5", None]

    class Text(str):
        """A str subclass (not the plain str the fast path takes): read the same way."""

    assert [source_text(Text(v)) for v in (" b ", "  ")] == ["b", None]
    assert [source_int(v) for v in (5, "07", " 8 ", 3.0, 3.5, "x", True, None, "-1")] == [
        5,
        7,
        8,
        3,
        None,
        None,
        None,
        None,
        None,
    ]


# -- no plugin reads the environment ----------------------------------------------------
_ENVIRONMENT = re.compile(
    r"\bos\.environ\b|\bos\.getenv\b|\bfrom\s+os\s+import\s+[^\n]*\b(environ|getenv)\b|\bgetenv\("
)


def plugin_code() -> list[Path]:
    files = [*REPO.glob("plugins/*/tollway_*/**/*.py"), *REPO.glob("plugin_template/tollway_*/**/*.py")]
    assert len(files) > 20
    return sorted(files)


def test_no_plugin_reads_the_environment() -> None:
    """Plugins read their settings from `ctx.setting` / `Services.settings`, which the
    kernel fills from TOLLWAY_<FAMILY>_<NAME> (and `.env`), never from os.environ."""
    found = [f"{p.relative_to(REPO)}:{n}" for p in plugin_code() for n, line in enumerate(p.read_text().splitlines(), 1)
             if _ENVIRONMENT.search(line)]  # fmt: skip
    assert found == []


def test_the_environment_check_sees_reads() -> None:
    for line in ("x = os.environ.get('A')", "os.getenv('A')", "from os import environ", "from os import path, getenv"):
        assert _ENVIRONMENT.search(line), line
    assert not _ENVIRONMENT.search("ctx.setting('api_url')")
