"""TOLLWAY_TRUSTED_PROXIES through a real `tollway serve` on 127.0.0.1 (uvicorn's own
proxy-headers middleware, runtime/proxies.py): X-Forwarded-For and X-Forwarded-Proto
count only when the peer is a trusted proxy. From any other peer, forged headers change
neither the rate limiter's per-IP counter nor the scheme of the links the service
builds (the `resource.url` of a 402)."""

from __future__ import annotations

import httpx
import pytest

from tests.support.serve_process import tollway_serve
from tollway._core.payments import x402
from tollway._runtime.proxies import TRUSTED_PROXIES_ENV as TRUSTED
from tollway._runtime.proxies import parse_trusted_proxies, uvicorn_proxy_options
from tollway._runtime.settings import load_settings
from tollway.testing import serve_http, settings_for

DAY = 86_400  # a day-long window: a test cannot straddle a window boundary
AGENT = {"X-Agent-ID": "0x" + "ab" * 20}  # proves nothing: counted by the caller's IP
START_S = 240.0  # a `tollway serve` imports every installed plugin: slow on a busy machine


async def remaining(http: httpx.AsyncClient, url: str, forwarded_for: str) -> str:
    """RateLimit-Remaining of one counted free read sent with X-Forwarded-For `forwarded_for`."""
    resp = await http.get(f"{url}/v1/balance", headers={**AGENT, "X-Forwarded-For": forwarded_for})
    assert resp.status_code == 200, resp.text
    return resp.headers["RateLimit-Remaining"]


async def top_up_resource(http: httpx.AsyncClient, url: str) -> str:
    """The resource URL of the 402 a top-up without payment gets, asked as if over https."""
    resp = await http.post(
        f"{url}/v1/credits/top-up", json={"amount": "1"}, headers={**AGENT, "X-Forwarded-Proto": "https"}
    )
    assert resp.status_code == 402, resp.text
    return x402.decode_header(resp.headers[x402.PAYMENT_REQUIRED_HEADER])["resource"]["url"]


def serve_env(tmp_path, db_kind: str, trusted: str | None) -> dict[str, str]:
    settings = settings_for(tmp_path, db_kind)
    env = {
        "TOLLWAY_HOME": str(tmp_path / "home"),
        "TOLLWAY_DATABASE_URL": settings.database_url,
        "TOLLWAY_RECEIPT_KEY": settings.env["TOLLWAY_RECEIPT_KEY"],
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_OFFLINE": "1",
        "TOLLWAY_RATE_LIMIT_FREE_READ": f"3/{DAY}",
        "FORWARDED_ALLOW_IPS": "*",  # uvicorn's own variable: the setting decides, never this
    }
    if trusted is not None:
        env[TRUSTED] = trusted
    return env


async def untrusted_answers(url: str) -> tuple[list[str], str]:
    async with httpx.AsyncClient() as http:
        counts = [await remaining(http, url, client) for client in ("203.0.113.7", "198.51.100.9", "203.0.113.8")]
        return counts, await top_up_resource(http, url)


async def test_without_the_setting_no_peer_is_trusted_not_even_loopback(tmp_path):
    async with tollway_serve(serve_env(tmp_path, "sqlite", None), cwd=tmp_path, timeout_s=START_S) as served:
        counts, resource = await untrusted_answers(served.url)
    assert counts == ["2", "1", "0"]  # one counter, the socket's 127.0.0.1, whatever the header says
    assert resource == f"{served.url}/v1/credits/top-up"  # http: X-Forwarded-Proto ignored


async def test_forged_headers_from_a_peer_not_listed_are_ignored(kernel_factory):
    kernel = await kernel_factory(env={"TOLLWAY_RATE_LIMIT_FREE_READ": f"3/{DAY}"})
    async with serve_http(kernel, trusted_proxies=parse_trusted_proxies({TRUSTED: "10.0.0.0/8, 192.0.2.1"})) as url:
        counts, resource = await untrusted_answers(url)
    assert counts == ["2", "1", "0"]
    assert resource == f"{url}/v1/credits/top-up"


@pytest.mark.parametrize(
    ("db_kind", "processes"),
    [("sqlite", "1"), pytest.param("postgres", "2", marks=pytest.mark.postgres)],
    ids=["one-process", "two-processes"],
)
async def test_a_trusted_proxy_names_the_client_and_the_scheme(tmp_path, db_kind, processes):
    env = serve_env(tmp_path, db_kind, "127.0.0.1/32, 10.0.0.0/8")
    serving = tollway_serve(env, cwd=tmp_path, args=("--processes", processes), timeout_s=START_S)
    async with serving as served, httpx.AsyncClient() as http:
        first = [await remaining(http, served.url, "203.0.113.7") for _ in range(2)]
        # a second proxy hop that is trusted too: the client is the last untrusted address
        first.append(await remaining(http, served.url, "203.0.113.7, 10.1.2.3"))
        second = await remaining(http, served.url, "198.51.100.9")
        resource = await top_up_resource(http, served.url)
    assert first == ["2", "1", "0"] and second == "2"  # a counter each
    assert resource == f"https://127.0.0.1:{served.port}/v1/credits/top-up"


def test_the_setting_is_addresses_and_networks_and_defaults_to_none():
    assert parse_trusted_proxies({}) == ()
    assert parse_trusted_proxies({"TOLLWAY_TRUSTED_PROXIES": " 10.0.0.5 , 10.0.0.0/8,,fd00::/8"}) == (
        "10.0.0.5/32",
        "10.0.0.0/8",
        "fd00::/8",
    )
    # uvicorn's loopback default is never used: no proxy headers at all without the setting
    assert uvicorn_proxy_options(()) == {"proxy_headers": False, "forwarded_allow_ips": []}
    assert uvicorn_proxy_options(("10.0.0.0/8",)) == {"proxy_headers": True, "forwarded_allow_ips": ["10.0.0.0/8"]}
    for bad in ("*", "proxy.internal", "10.0.0.1/8", "10.0.0.0/33"):
        with pytest.raises(ValueError, match="TOLLWAY_TRUSTED_PROXIES must be"):
            parse_trusted_proxies({"TOLLWAY_TRUSTED_PROXIES": bad})


def test_settings_carry_the_trusted_proxies(tmp_path):
    env = {"TOLLWAY_HOME": str(tmp_path / "home"), "TOLLWAY_TRUSTED_PROXIES": "192.0.2.10"}
    assert load_settings(env).trusted_proxies == ("192.0.2.10/32",)
    with pytest.raises(ValueError, match="TOLLWAY_TRUSTED_PROXIES"):
        load_settings({**env, "TOLLWAY_TRUSTED_PROXIES": "*"})
