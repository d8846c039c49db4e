"""`Tool.requires`: a tool that cannot run without a setting (an upstream's API key) stays
listed, but while the setting is unset every call is refused with 503
`provider_unavailable` naming the variable, before any quote, over HTTP and MCP, on
SQLite and PostgreSQL; once set, the call is quoted as usual. `tollway plugins` shows it."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import msgspec
import pytest

from tollway._core.basics.errors import ServiceError
from tollway._core.plugin_api.hookspecs import hookimpl
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Example, Tool, ToolContext, ToolContexts
from tollway.testing import count_quotes, http_client, mcp_server_for

KEY = Setting(family="keyed", name="upstream_api_key", default=None, description="The upstream's API key (test).")
URL = Setting(family="keyed", name="upstream_api_url", default="https://keyed.test", description="The upstream (test).")
PATH = "/v1/tools/test/keyed"


class KeyedInput(msgspec.Struct, forbid_unknown_fields=True):
    word: str


class KeyedOutput(msgspec.Struct):
    word: str


async def run(value: KeyedInput, ctx: ToolContext) -> KeyedOutput:
    return KeyedOutput(word=value.word)


def keyed_tool(**overrides: Any) -> Tool:
    fields: dict[str, Any] = dict(
        name="keyed_word", path=PATH, title="Keyed", description="Needs a key.", category="data",
        input_type=KeyedInput, output_type=KeyedOutput, run=run, price="0.001", family="keyed",
        examples=(Example("a word", {"word": "ship"}),), requires=(KEY,),
    )  # fmt: skip
    return Tool(**{**fields, **overrides})


class KeyedPlugin:
    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        register(keyed_tool())

    @hookimpl
    def register_settings(self, register: Callable[[Setting], None]) -> None:
        register(KEY)
        register(URL)


async def test_unset_key_is_503_before_any_quote(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("keyed", KeyedPlugin())])
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"word": "ship"})
        bad = await client.post(PATH, json={"word": 3})
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["error"] == "provider_unavailable"
    assert body["details"] == {"reason": "not_configured", "settings": ["TOLLWAY_KEYED_UPSTREAM_API_KEY"]}
    assert "TOLLWAY_KEYED_UPSTREAM_API_KEY" in body["message"]
    assert "PAYMENT-REQUIRED" not in resp.headers
    assert bad.status_code == 400  # input is judged first
    assert await count_quotes(kernel) == 0


@pytest.mark.parametrize("value", ["", "   "])
async def test_a_blank_key_counts_as_unset(kernel_factory, value: str) -> None:
    kernel = await kernel_factory(plugins=[("keyed", KeyedPlugin())], env={"TOLLWAY_KEYED_UPSTREAM_API_KEY": value})
    async with http_client(kernel) as client:
        assert (await client.post(PATH, json={"word": "ship"})).status_code == 503


async def test_set_key_gets_a_quote(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("keyed", KeyedPlugin())], env={"TOLLWAY_KEYED_UPSTREAM_API_KEY": "k"})
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json={"word": "ship"})
    assert resp.status_code == 402, resp.text
    assert await count_quotes(kernel) == 1


async def test_mcp_call_is_refused_the_same_way(kernel_factory) -> None:
    from mcp import Client

    kernel = await kernel_factory(plugins=[("keyed", KeyedPlugin())])
    async with Client(mcp_server_for(kernel), mode="legacy") as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("keyed_word", {"word": "ship"})
    assert "keyed_word" in listed  # still listed
    assert result.is_error
    assert result.structured_content["error"] == "provider_unavailable"
    assert result.structured_content["details"]["settings"] == ["TOLLWAY_KEYED_UPSTREAM_API_KEY"]
    assert await count_quotes(kernel) == 0


def test_unconfigured_reads_the_family_settings() -> None:
    tool = keyed_tool()
    assert tool.unconfigured({}) == (KEY,)
    assert tool.unconfigured({"upstream_api_key": " "}) == (KEY,)
    assert tool.unconfigured({"upstream_api_key": "k"}) == ()
    contexts = ToolContexts(
        http=None, family_settings=lambda family: {"upstream_api_key": "k"} if family == "keyed" else {}
    )  # type: ignore[arg-type]
    contexts.require_configured(tool)  # does not raise


def test_a_tool_found_configured_is_checked_again_when_its_familys_settings_change() -> None:
    """`require_configured` remembers the read-only mapping a tool was found complete in (the
    registry hands out the same one until a setting is declared): a new mapping is read
    again, and a plain dict (which could change in place) is never remembered."""
    tool = keyed_tool()
    complete = MappingProxyType({"upstream_api_key": "k"})
    current: dict[str, Any] = {"keyed": complete}
    contexts = ToolContexts(http=None, family_settings=lambda family: current.get(family, {}))  # type: ignore[arg-type]
    contexts.require_configured(tool)
    contexts.require_configured(tool)  # the same mapping: remembered, still fine
    current["keyed"] = MappingProxyType({"upstream_api_key": ""})  # a new mapping without the key
    with pytest.raises(ServiceError) as refused:
        contexts.require_configured(tool)
    assert refused.value.status == 503
    assert refused.value.details == {"reason": "not_configured", "settings": ["TOLLWAY_KEYED_UPSTREAM_API_KEY"]}
    with pytest.raises(ServiceError):  # still refused: a refusal is never remembered
        contexts.require_configured(tool)
    current["keyed"] = complete
    contexts.require_configured(tool)
    plain = {"upstream_api_key": "k"}
    current["keyed"] = plain
    contexts.require_configured(tool)
    del plain["upstream_api_key"]  # the same dict, changed in place: read again, refused
    with pytest.raises(ServiceError):
        contexts.require_configured(tool)


def test_a_required_setting_must_be_of_the_tools_family() -> None:
    other = Setting(family="other", name="api_key", default=None, description="x")
    with pytest.raises(ValueError, match="family"):
        keyed_tool(requires=(other,))


def test_plugins_command_shows_unset_settings(monkeypatch, tmp_path, capsys) -> None:
    import base64

    from tollway._runtime import cli, service

    home = tmp_path / "home"
    for name, value in {
        "TOLLWAY_HOME": str(home), "TOLLWAY_DATABASE_URL": f"sqlite:///{home / 'tollway.db'}",
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x05" * 32).decode(), "TOLLWAY_OFFLINE": "1",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TOLLWAY_KEYED_UPSTREAM_API_KEY", raising=False)
    real = service.build_kernel
    monkeypatch.setattr(
        service,
        "build_kernel",
        lambda settings, **kw: real(settings, plugins=[("keyed", KeyedPlugin())], load_installed=False),
    )
    assert cli.main(["plugins"]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("keyed_word"))
    assert line.endswith("NOT CONFIGURED: set TOLLWAY_KEYED_UPSTREAM_API_KEY")


def test_a_familys_values_are_read_only_and_follow_the_settings_declared() -> None:
    """`family_settings` hands out one read-only mapping per family (the paid path asks twice
    a call), made again once another setting of the family is declared."""
    from tollway._core.registry import Registry

    registry = Registry({KEY.env_var: "k-1"})
    registry._add_setting(KEY)
    values = registry.family_settings("keyed")
    assert dict(values) == {"upstream_api_key": "k-1"} and registry.family_settings("keyed") is values
    with pytest.raises(TypeError):
        values["upstream_api_key"] = "changed"  # type: ignore[index]
    registry._add_setting(URL)
    assert dict(registry.family_settings("keyed")) == {
        "upstream_api_key": "k-1",
        "upstream_api_url": "https://keyed.test",
    }
    assert registry.family_settings("other") == {}
