"""Private reads (docs/auth.md, "Private data"): a route declared `private`, or a handler
that asks `call.require_proof`, answers only a caller who proves the agent (a valid read or
write proof, an access token) whatever TOLLWAY_PROOF_ENFORCEMENT says; a bare X-Agent-ID
is refused 401 invalid_agent_proof even in log-only mode, and a failed proof is refused with
its reason instead of falling back to a bare read. Real proofs, real storage, over HTTP."""

from __future__ import annotations

import pytest
from eth_account import Account

from tollway import Route, RouteCall, hookimpl, query_flag
from tollway.testing import credits_session, http_client, proof_headers

SECRET = "the private words"
DIARY, NOTES = "/v1/privacy/diary", "/v1/privacy/notes"


async def diary(call: RouteCall) -> dict:
    return {"agent_id": call.agent_id, "text": SECRET}


async def notes(call: RouteCall) -> dict:
    if query_flag(call.query, "include_body"):
        call.require_proof("Note bodies")
        return {"titles": ["n1"], "bodies": [SECRET]}
    return {"titles": ["n1"]}


class Privacy:
    @hookimpl
    def register_routes(self, register):
        register(
            Route(
                method="GET",
                path=DIARY,
                name="privacy_diary",
                title="Diary",
                description="A private read.",
                handle=diary,
                private=True,
            )
        )
        register(
            Route(
                method="GET",
                path=NOTES,
                name="privacy_notes",
                title="Notes",
                description="Titles for anyone named; bodies only when proven.",
                handle=notes,
            )
        )


async def test_a_private_route_needs_a_proof_or_a_token_even_when_proofs_are_log_only(kernel_factory):
    kernel = await kernel_factory(plugins=[("privacy", Privacy())])
    owner = Account.create()
    async with http_client(kernel) as client:
        _agent, token = await credits_session(client, "1", wallet=owner.address)
        bare = await client.get(DIARY, headers={"X-Agent-ID": owner.address})
        wrong_path = await client.get(DIARY, headers=proof_headers(owner, scope="read", method="GET", path=NOTES))
        nobody = await client.get(DIARY)
        proved = await client.get(DIARY, headers=proof_headers(owner, scope="read", method="GET", path=DIARY))
        write = await client.get(DIARY, headers=proof_headers(owner, scope="write", method="GET", path=DIARY))
        tokened = await client.get(DIARY, headers=token)
    assert (
        bare.status_code == 401
        and bare.json()["error"] == "invalid_agent_proof"
        and bare.json()["details"]["reason"] == "missing"
    )
    assert wrong_path.status_code == 401 and wrong_path.json()["details"]["reason"] == "path_mismatch"
    assert nobody.status_code == 401
    assert all(SECRET not in r.text for r in (bare, wrong_path, nobody))
    assert [r.status_code for r in (proved, write, tokened)] == [200, 200, 200]
    assert all(r.json()["text"] == SECRET for r in (proved, write, tokened))


async def test_a_handler_asks_for_the_proof_only_for_what_is_private(kernel_factory):
    kernel = await kernel_factory(plugins=[("privacy", Privacy())])
    owner = Account.create()
    async with http_client(kernel) as client:
        await credits_session(client, "1", wallet=owner.address)
        titles = await client.get(NOTES, headers={"X-Agent-ID": owner.address})
        bodies_bare = await client.get(f"{NOTES}?include_body=true", headers={"X-Agent-ID": owner.address})
        expired = await client.get(
            f"{NOTES}?include_body=true", headers=proof_headers(owner, scope="read", method="GET", path=DIARY)
        )
        bodies = await client.get(
            f"{NOTES}?include_body=true", headers=proof_headers(owner, scope="read", method="GET", path=NOTES)
        )
    assert titles.status_code == 200 and titles.json() == {"titles": ["n1"]}  # no bodies: the log-only rule holds
    assert (
        bodies_bare.status_code == 401
        and bodies_bare.json()["details"]["reason"] == "missing"
        and SECRET not in bodies_bare.text
    )
    assert "Note bodies" in bodies_bare.json()["message"]
    assert expired.status_code == 401 and expired.json()["details"]["reason"] == "path_mismatch"
    assert bodies.status_code == 200 and bodies.json()["bodies"] == [SECRET]


def test_only_a_read_route_is_declared_private():
    for auth in ("write", "public", "operator"):
        with pytest.raises(ValueError, match="private"):
            Route(
                method="GET",
                path=DIARY,
                name="privacy_diary",
                title="Diary",
                description="A private read.",
                handle=diary,
                auth=auth,
                private=True,
            )
