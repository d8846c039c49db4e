"""What the console's tests share: a seed plugin whose paid tools fill the receipts through
the real pipeline, signing in over HTTP, and the secrets no page may show."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Annotated

import msgspec
from msgspec import Meta

import tollway
from tollway.testing import OPERATOR

OPERATOR_TOKEN = OPERATOR["Authorization"].removeprefix("Bearer ")
PROVIDER_SECRET = "sk-console-test-provider-secret-8d1f"  # set as a provider's key in the service's env
DAY_MS = 86_400_000
REAL_TIME_NS = time.time_ns  # the clock itself, whatever a test has patched since


class Echo(msgspec.Struct):
    text: str


@tollway.tool(path="/v1/tools/seed/lookup", price="0.250000", category="data", family="seed", examples={"text": "a"})
async def seed_lookup(text: Annotated[str, Meta(max_length=40)]) -> Echo:
    """A paid data lookup that echoes its input."""
    return Echo(text=text)


@tollway.tool(
    path="/v1/tools/seed/verify", price="0.100000", category="verification", family="seed", examples={"text": "a"}
)
async def seed_verify(text: Annotated[str, Meta(max_length=40)]) -> Echo:
    """A paid verification that fails when asked to."""
    if text == "fail":
        raise tollway.ToolError("seed_failed", "Failing as asked.", 502)
    return Echo(text=text)


@tollway.tool(
    path="/v1/tools/seed/report", price="0.050000", category="data", family="seed", examples={"text": "a"}, mode="job"
)
async def seed_report(text: Annotated[str, Meta(max_length=40)]) -> Echo:
    """A paid report run as a job."""
    return Echo(text=text)


@tollway.tool(
    path="/v1/tools/seed/wait", price="0.010000", category="infrastructure", family="seed", examples={"ms": 1}
)
async def seed_wait(ms: Annotated[int, Meta(ge=0, le=1000)]) -> Echo:
    """A paid call that takes `ms` milliseconds."""
    await asyncio.sleep(ms / 1000)
    return Echo(text=str(ms))


class SeedPlugin:
    @tollway.hookimpl
    def register_tools(self, register):
        register(seed_lookup)
        register(seed_verify)
        register(seed_report)
        register(seed_wait)

    @tollway.hookimpl
    def register_settings(self, register):
        register(tollway.Setting("seed", "api_key", None, "A provider's key (no page may show it).", secret=True))


def at_day(monkeypatch, days_ago: int) -> None:
    """The service's clock `days_ago` days back (noon UTC), for the calls made next."""
    now = REAL_TIME_NS() // 1_000_000
    day_start = now // DAY_MS * DAY_MS
    moment = (day_start - days_ago * DAY_MS + DAY_MS // 2) * 1_000_000
    monkeypatch.setattr(time, "time_ns", lambda: moment)


CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')


async def sign_in(client) -> str:
    """Sign `client` (an httpx client over the app) in; the CSRF token of its session."""
    page = await client.get("/console/sign-in")
    csrf = CSRF.search(page.text).group(1)
    answer = await client.post("/console/sign-in", data={"csrf": csrf, "token": OPERATOR_TOKEN})
    assert answer.status_code == 303 and answer.headers["location"] == "/console", answer.text
    home = await client.get("/console")
    assert home.status_code == 200, home.text
    return CSRF.search(home.text).group(1)
