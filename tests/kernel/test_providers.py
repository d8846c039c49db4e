"""Providers: which one of a kind is chosen (`TOLLWAY_<KIND>_PROVIDER`, else the only one),
what makes it configured, the client built once per HTTP client with its cost estimate,
the health check, the declaration's own checks, and `tollway plugins` (text and JSON)
showing each kind without a secret."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from tollway._core.plugin_api.providers import Provider, Providers
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import ToolContext, ToolError

KEY = Setting("search", "alpha_api_key", None, "key", secret=True)
URL = Setting("search", "beta_url", None, "url")


def _alpha(settings, http):
    return ("alpha", settings.get("alpha_api_key"))


def _beta(settings, http):
    return ("beta", settings.get("beta_url"))


ALPHA = Provider(kind="search", name="alpha", build=_alpha, settings=(KEY,), requires=(KEY,), cost_estimate="0.004")
BETA = Provider(kind="search", name="beta", build=_beta, settings=(URL,), requires=(URL,), cost_estimate=lambda s: 9)


def providers(values: dict[str, str], *declared: Provider) -> Providers:
    registered: dict[str, dict[str, Provider]] = {}
    for p in declared:
        registered.setdefault(p.kind, {})[p.name] = p
    return Providers(registered, lambda kind: values if kind == "search" else {})


def test_the_only_provider_of_a_kind_is_chosen_by_default() -> None:
    state = providers({"alpha_api_key": "k"}, ALPHA).status("search")
    assert (state.provider, state.configured, state.unset_settings, state.available) == ("alpha", True, [], ["alpha"])


def test_several_configured_providers_need_a_choice() -> None:
    state = providers({"alpha_api_key": "k", "beta_url": "http://b"}, ALPHA, BETA).status("search")
    assert state.provider is None and not state.configured
    assert state.unset_settings == ["TOLLWAY_SEARCH_PROVIDER"] and "alpha, beta" in (state.problem or "")
    nothing = providers({}, ALPHA, BETA).status("search")
    assert nothing.provider is None and nothing.unset_settings == ["TOLLWAY_SEARCH_PROVIDER"]


def test_of_several_installed_the_only_configured_one_is_chosen() -> None:
    state = providers({"beta_url": "http://b"}, ALPHA, BETA).status("search")
    assert (state.provider, state.configured, state.unset_settings) == ("beta", True, [])


def test_the_choice_names_one_and_its_required_settings_decide() -> None:
    chosen = providers({"provider": "BETA", "alpha_api_key": "k"}, ALPHA, BETA).status("search")
    assert chosen.provider == "beta" and not chosen.configured and chosen.unset_settings == ["TOLLWAY_SEARCH_BETA_URL"]
    unknown = providers({"provider": "gamma"}, ALPHA, BETA).status("search")
    assert unknown.provider is None and "gamma" in (unknown.problem or "")
    none = providers({}).status("search")
    assert none.available == [] and none.unset_settings == ["TOLLWAY_SEARCH_PROVIDER"]


def test_the_client_is_built_once_per_http_client_with_its_cost() -> None:
    p = providers({"provider": "beta", "beta_url": "http://b"}, ALPHA, BETA)
    one, two = httpx.AsyncClient(), httpx.AsyncClient()
    first, cost = p.client("search", one)
    assert first == ("beta", "http://b") and cost == 9
    assert p.client("search", one)[0] is first
    assert p.client("search", two)[0] is not first
    with pytest.raises(LookupError):
        providers({}, ALPHA, BETA).client("search", one)


def test_ctx_provider_adds_the_cost_and_refuses_when_unconfigured() -> None:
    http = httpx.AsyncClient()
    ctx = ToolContext(
        request_id="req_1", agent_id=None, http=http, settings={}, providers=providers({"alpha_api_key": "k"}, ALPHA)
    )
    assert ctx.provider("search") == ("alpha", "k")
    ctx.provider("search")
    assert ctx.provider_cost == 8_000  # two calls at 0.004
    bare = ToolContext(request_id="req_2", agent_id=None, http=http, settings={}, providers=providers({}, ALPHA))
    with pytest.raises(ToolError) as failure:
        bare.provider("search")
    assert failure.value.code == "provider_unavailable" and failure.value.status == 503


async def test_health_is_none_when_configured_and_passing_else_a_reason() -> None:
    async def down(services):
        raise RuntimeError("connection refused")

    async def up(services):
        return None

    sick = Provider(kind="search", name="alpha", build=_alpha, settings=(KEY,), requires=(KEY,), health=down)
    well = Provider(kind="search", name="alpha", build=_alpha, settings=(KEY,), requires=(KEY,), health=up)
    assert "connection refused" in (await providers({"alpha_api_key": "k"}, sick).check("search", None) or "")
    assert await providers({"alpha_api_key": "k"}, well).check("search", None) is None
    assert "TOLLWAY_SEARCH_ALPHA_API_KEY" in (await providers({}, well).check("search", None) or "")


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "Search"},
        {"name": "provider"},
        {"settings": (Setting("other", "x", None, "x"),), "requires": ()},
        {"requires": (URL,)},
        {"cost_estimate": -1},
    ],
)
def test_a_bad_declaration_is_refused(fields) -> None:
    base = dict(kind="search", name="alpha", build=_alpha, settings=(KEY,), requires=(KEY,))
    with pytest.raises(ValueError):
        Provider(**{**base, **fields})


def _cli_env(monkeypatch, tmp_path, **env: str) -> None:
    home = tmp_path / "home"
    for name, value in {
        "TOLLWAY_HOME": str(home), "TOLLWAY_DATABASE_URL": f"sqlite:///{home / 'tollway.db'}",
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x05" * 32).decode(), "TOLLWAY_OFFLINE": "1", **env,
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    for name in ("TOLLWAY_SEARCH_PROVIDER", "TOLLWAY_SEARCH_BRAVE_API_KEY", "TOLLWAY_SEARCH_SEARXNG_URL"):
        if name not in env:
            monkeypatch.delenv(name, raising=False)


def _with_web_only(monkeypatch) -> None:
    from tollway._runtime import plugins, service

    real = service.build_kernel

    def build(settings, **kw):
        kernel = real(settings, load_installed=False)
        plugins.load_entry_point_plugins(kernel, strict=True, only={"tollway_web"})
        return kernel

    monkeypatch.setattr(service, "build_kernel", build)


def test_plugins_command_shows_each_kind_and_never_a_secret(monkeypatch, tmp_path, capsys) -> None:
    from tollway._runtime import cli

    _with_web_only(monkeypatch)
    _cli_env(
        monkeypatch, tmp_path, TOLLWAY_SEARCH_PROVIDER="brave", TOLLWAY_SEARCH_BRAVE_API_KEY="brave-cli-secret-123"
    )
    assert cli.main(["plugins", "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert "brave-cli-secret-123" not in out
    (search,) = [p for p in doc["providers"] if p["kind"] == "search"]
    assert (
        search["provider"] == "brave" and search["configured"] is True and search["available"] == ["brave", "searxng"]
    )
    (row,) = [r for r in doc["tools"] if r["tool"] == "web_search"]
    assert row["configured"] is True

    _cli_env(monkeypatch, tmp_path)
    assert cli.main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert next(r for r in lines if r.startswith("web_search")).endswith("NOT CONFIGURED: set TOLLWAY_SEARCH_PROVIDER")
    provider_line = next(r for r in lines if r.startswith("provider search"))
    assert (
        "NOT CONFIGURED" in provider_line
        and "TOLLWAY_SEARCH_PROVIDER" in provider_line
        and "brave, searxng" in provider_line
    )


def test_plugins_check_runs_the_health_check(monkeypatch, tmp_path, capsys) -> None:
    from tollway._runtime import cli

    _with_web_only(monkeypatch)
    _cli_env(monkeypatch, tmp_path, TOLLWAY_SEARCH_PROVIDER="searxng", TOLLWAY_SEARCH_SEARXNG_URL="http://127.0.0.1:9")
    assert cli.main(["plugins", "--json", "--check"]) == 0
    (search,) = [p for p in json.loads(capsys.readouterr().out)["providers"] if p["kind"] == "search"]
    assert search["configured"] is True and search["health"] != "ok" and "SearXNG" in search["health"]
