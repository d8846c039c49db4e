"""An agent's access tokens on its console page (SQLite and PostgreSQL): listed by id with
where they came from and when they expire, never the token or its hash; revoked from the
form (the session's CSRF token wanted), after which a call with the token is refused 401
`invalid_access_token`, at once on this process and, on a second kernel sharing the
database, once its memory of the token is older than the documented bound; revoking twice
changes nothing."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time

import pytest
from console_support import OPERATOR_TOKEN, REAL_TIME_NS, SeedPlugin, sign_in

from tollway.testing import OPERATOR, credits_session, http_client
from tollway_console import plugin as hooks

TOKEN_ROW = re.compile(r'<tr data-token="(at_[0-9a-f]{16})" data-state="(\w+)">')
BOUND = re.compile(r'data-bound="(\d+)"')


def token_hash(token: str) -> str:
    """What the service stores of a token (its SHA-256), which no page may show either."""
    return hashlib.sha256(token.encode()).hexdigest()


async def _issue(client, agent_id: str) -> str:
    answer = await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent_id}, headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    return answer.json()["token"]


async def test_an_agents_tokens_are_listed_and_revoked_from_its_page(kernel_factory):
    kernel = await kernel_factory(plugins=[("tollway_console", hooks), ("seed", SeedPlugin())])
    async with http_client(kernel) as client:
        agent, auth = await credits_session(client, "2")
        first = auth["Authorization"].removeprefix("Bearer ")
        await asyncio.sleep(0.005)  # issued in a later millisecond: the rows list newest first, ties in either order
        second = await _issue(client, agent)
        page = f"/console/agents/{agent}"
        assert (await client.get(page)).headers["location"] == "/console/sign-in"
        csrf = await sign_in(client)

        html = (await client.get(page)).text
        rows = TOKEN_ROW.findall(html)
        assert [state for _, state in rows] == ["live", "live"]
        for secret in (first, second, token_hash(first), token_hash(second), OPERATOR_TOKEN):
            assert secret not in html
        newest, oldest = rows[0][0], rows[1][0]  # the first token was issued first
        revoke = f"{page}/tokens/{oldest}/revoke"

        assert (await client.post(revoke, data={})).status_code == 403
        assert (await client.post(revoke, data={"csrf": "0" * 64})).status_code == 403
        assert (await client.get("/v1/balance", headers=auth)).status_code == 200  # untouched
        client.cookies.clear()
        assert (await client.post(revoke, data={"csrf": csrf})).headers["location"] == "/console/sign-in"
        csrf = await sign_in(client)

        answer = await client.post(revoke, data={"csrf": csrf})
        assert answer.status_code == 303 and answer.headers["location"] == f"{page}#tokens"
        refused = await client.get("/v1/balance", headers=auth)
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_access_token"
        paid = await client.post("/v1/tools/seed/lookup", json={"text": "x"}, headers=auth)
        assert paid.status_code == 401 and paid.json()["error"] == "invalid_access_token"
        other = {"Authorization": f"Bearer {second}"}
        assert (await client.get("/v1/balance", headers=other)).status_code == 200  # the other one still works

        html = (await client.get(page)).text
        assert dict(TOKEN_ROW.findall(html)) == {newest: "live", oldest: "revoked"}
        when = re.search(rf'data-token="{oldest}".*?revoked (\S+)</td>', html).group(1)
        again = await client.post(revoke, data={"csrf": csrf})  # harmless: the first time stays
        assert again.status_code == 303
        assert re.search(rf'data-token="{oldest}".*?revoked (\S+)</td>', (await client.get(page)).text).group(1) == when
        assert (await client.get("/v1/balance", headers=auth)).status_code == 401

        missing = await client.post(f"{page}/tokens/at_0000000000000000/revoke", data={"csrf": csrf})
        assert missing.status_code == 404
        elsewhere, _ = await credits_session(client, "1")  # another agent cannot be made to revoke it
        foreign = await client.post(f"/console/agents/{elsewhere}/tokens/{newest}/revoke", data={"csrf": csrf})
        assert foreign.status_code == 404
        assert (await client.get("/v1/balance", headers=other)).status_code == 200


@pytest.mark.parametrize("db_kind", ["postgres"], indirect=True)  # the embedded SQLite serves one process only
async def test_a_revocation_reaches_a_second_process_within_the_bound(kernel_factory, monkeypatch):
    console = await kernel_factory(plugins=[("tollway_console", hooks)])
    other = await kernel_factory()  # its own token memory: a second API process on the database
    async with http_client(console) as first, http_client(other) as second:
        agent, auth = await credits_session(first, "1")
        assert (await second.get("/v1/balance", headers=auth)).status_code == 200  # now remembered there
        csrf = await sign_in(first)
        page = (await first.get(f"/console/agents/{agent}")).text
        token_id, bound_s = TOKEN_ROW.search(page).group(1), int(BOUND.search(page).group(1))
        assert bound_s == 10  # the bound docs/auth.md promises
        revoked = await first.post(f"/console/agents/{agent}/tokens/{token_id}/revoke", data={"csrf": csrf})
        assert revoked.status_code == 303
        assert (await first.get("/v1/balance", headers=auth)).status_code == 401  # at once where revoked
        # the second process trusts what it checked for up to the bound the page states
        assert (await second.get("/v1/balance", headers=auth)).status_code == 200
        later = REAL_TIME_NS() + (bound_s + 1) * 1_000_000_000
        monkeypatch.setattr(time, "time_ns", lambda: later)
        refused = await second.get("/v1/balance", headers=auth)
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_access_token"
