"""Routes on a host of their own (`tollway.Route(host=setting)`): with the setting set, the
route is served only when the Host header names that setting's host, and that host serves
nothing else; unset, every host serves everything. A route bound to a setting no plugin
registers stops start-up, and such a route cannot be an MCP tool."""

from __future__ import annotations

import pytest

from tollway import Page, Route, Setting, hookimpl
from tollway._core.kernel import StartupError
from tollway.testing import http_client

HOST = Setting("hosted", "own_url", None, "The host the page is served on.")


async def page(call) -> Page:
    return Page("<p>here</p>")


class Hosted:
    def __init__(self, *, register_setting: bool = True) -> None:
        self.register_setting = register_setting

    @hookimpl
    def register_settings(self, register):
        if self.register_setting:
            register(HOST)

    @hookimpl
    def register_routes(self, register):
        register(
            Route(
                method="GET",
                path="/v1/hosted/page",
                name="hosted_page",
                title="Page",
                description="A page on its own host.",
                handle=page,
                auth="public",
                page=True,
                host=HOST,
            )
        )
        register(
            Route(
                method="GET",
                path="/v1/hosted/other",
                name="hosted_other",
                title="Other",
                description="A page on any host.",
                handle=page,
                auth="public",
                page=True,
            )
        )


async def test_the_host_header_decides_when_the_setting_is_set(kernel_factory) -> None:
    kernel = await kernel_factory(
        plugins=[("hosted", Hosted())], env={"TOLLWAY_HOSTED_OWN_URL": "https://own.example.test:8443/base"}
    )
    async with http_client(kernel) as client:
        answers = {
            "own page": await client.get("https://own.example.test/v1/hosted/page"),
            "own page, other case and port": await client.get(
                "/v1/hosted/page", headers={"Host": "OWN.example.test.:9"}
            ),
            "own host, other route": await client.get("https://own.example.test/v1/hosted/other"),
            "own host, kernel route": await client.get("https://own.example.test/healthz"),
            "own host, unknown path": await client.get("https://own.example.test/v1/nothing"),
            "own host, mcp": await client.post("https://own.example.test/mcp", json={}),
            "api host, own page": await client.get("/v1/hosted/page"),
            "api host, other route": await client.get("/v1/hosted/other"),
            "api host, kernel route": await client.get("/healthz"),
            "similar host, own page": await client.get("https://own.example.test.evil.test/v1/hosted/page"),
        }
    assert {name: answer.status_code for name, answer in answers.items()} == {
        "own page": 200,
        "own page, other case and port": 200,
        "own host, other route": 404,
        "own host, kernel route": 404,
        "own host, unknown path": 404,
        "own host, mcp": 404,
        "api host, own page": 404,
        "api host, other route": 200,
        "api host, kernel route": 200,
        "similar host, own page": 404,
    }
    assert answers["api host, own page"].json()["error"] == "not_found"


async def test_a_bare_host_name_binds_too(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("hosted", Hosted())], env={"TOLLWAY_HOSTED_OWN_URL": "own.example.test"})
    async with http_client(kernel) as client:
        statuses = [
            (await client.get(url)).status_code
            for url in ("https://own.example.test/v1/hosted/page", "/v1/hosted/page")
        ]
    assert statuses == [200, 404]


async def test_unset_every_host_serves_every_route(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("hosted", Hosted())])
    async with http_client(kernel) as client:
        statuses = [
            (await client.get(url)).status_code
            for url in ("/v1/hosted/page", "https://any.example.test/v1/hosted/page", "/healthz")
        ]
    assert statuses == [200, 200, 200]


async def test_a_host_setting_nobody_registers_stops_start_up(kernel_factory) -> None:
    kernel = await kernel_factory(plugins=[("hosted", Hosted(register_setting=False))], start=False)
    with pytest.raises(StartupError, match="TOLLWAY_HOSTED_OWN_URL"):
        kernel.collect()


def test_a_route_on_its_own_host_is_not_an_mcp_tool() -> None:
    with pytest.raises(ValueError, match="not an MCP tool"):
        Route(
            method="GET",
            path="/v1/hosted/page",
            name="hosted_page",
            title="Page",
            description="Page.",
            handle=page,
            host=HOST,
            mcp=True,
        )
