"""Tests of `{{family}}_package`, the tool that asks PyPI through `tollway.Upstream`.

Every answer is replayed through an `httpx.MockTransport` whose handler first checks
the exact request PyPI would receive; `fixtures/pypi_httpx.json` is the replayed
answer (see fixtures/README.md). No test reaches the internet.
"""
from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import pytest

from tollway import ToolContext, ToolError
from tollway_{{family}}.registry import PACKAGE, PYPI, {{Family}}PackageInput, run

RECORDED = Path(__file__).resolve().parent / "fixtures" / "pypi_httpx.json"
URL = "https://pypi.org/pypi/httpx/json"


def replay(status: int, body: bytes, *, expect_url: str = URL, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        assert (request.method, str(request.url)) == ("GET", expect_url)
        return httpx.Response(status, content=body, headers={"content-type": "application/json", **(headers or {})})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def call(http: httpx.AsyncClient, name: str = "httpx", **settings: str):
    value = msgspec.convert({"name": name}, {{Family}}PackageInput, strict=True)
    async with http:
        return await run(value, ToolContext(request_id="req_test", agent_id=None, http=http, settings=settings))


async def test_replayed_answer_is_read() -> None:
    answer = await call(replay(200, RECORDED.read_bytes()))
    assert answer.result is not None
    assert (answer.result.name, answer.result.version, answer.result.releases) == ("httpx", "0.28.1", 2)
    assert answer.result.summary == "The next generation HTTP client." and answer.result.requires_python == ">=3.8"
    assert (answer.evidence.source, answer.evidence.source_kind) == ("PyPI", "public")
    assert answer.evidence.as_of == "2024-12-06T15:37:21.509070Z"  # the latest file of the latest release
    assert "calls" not in msgspec.to_builtins(answer.evidence)


async def test_unknown_project_is_an_empty_answer() -> None:
    answer = await call(replay(404, b'{"message": "Not Found"}', expect_url="https://pypi.org/pypi/no-such-thing/json"), "no-such-thing")
    assert answer.result is None and answer.evidence.as_of is None


async def test_base_url_setting_points_at_a_mirror() -> None:
    mirror = replay(200, RECORDED.read_bytes(), expect_url="http://127.0.0.1:8099/pypi/httpx/json")
    answer = await call(mirror, **{PYPI.base_url_setting.name: "http://127.0.0.1:8099/pypi/"})
    assert answer.result is not None and answer.result.name == "httpx"


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [(503, b"", "provider_unavailable"), (200, b"<html>maintenance</html>", "provider_unavailable"),
     (200, b'{"info": null}', "provider_unavailable"), (429, b"", "rate_limited"), (403, b"", "provider_auth")],
)  # fmt: skip
async def test_upstream_failures_are_tool_errors(status: int, body: bytes, code: str) -> None:
    with pytest.raises(ToolError) as info:
        await call(replay(status, body, headers={"retry-after": "3"}))
    assert (info.value.code, info.value.status) == (code, 503)
    if code == "rate_limited":
        assert info.value.details["retry_after"] == 3


def test_names_that_are_not_project_names_are_refused() -> None:
    for name in ("", "a/b", "-x", "x-", "a b", "x" * 101):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"name": name}, {{Family}}PackageInput, strict=True)
    assert PACKAGE.quote(msgspec.convert({"name": "httpx"}, {{Family}}PackageInput)) == 1_000
