"""Code-host connections over HTTP on SQLite and PostgreSQL against the GitHub stand-in: the
one-time link, the return from GitHub (once, and only for an installation the returning user's
authorization code proves they reach), listing, revocation, one-repository tokens, and the case
tool that reads a file without the token ever reaching its result."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from github_standin import CLIENT_ID, CLIENT_SECRET, GitHubStandin, github_standin
from goal_support import goals_kernel

from tollway import storage
from tollway.testing import credits_session, http_client
from tollway_goals.case_tools import CallRefused, Where
from tollway_goals.connections import (
    ConnectionNotActive,
    ConnectionNotFound,
    ConnectionRevoked,
    RepositoryOutOfScope,
    repository_token_for,
)
from tollway_goals.masking import mask
from tollway_goals.repo_tools import READ_REPOSITORY_FILE, read_repository_file

APP_ID = 515151
SLUG = "tollway-goals-test"
INSTALLATION = 41
INSTALLER = "alice"
SETTINGS = (
    "TOLLWAY_GOALS_GITHUB_APP_ID",
    "TOLLWAY_GOALS_GITHUB_APP_SLUG",
    "TOLLWAY_GOALS_GITHUB_PRIVATE_KEY",
    "TOLLWAY_GOALS_GITHUB_CLIENT_ID",
    "TOLLWAY_GOALS_GITHUB_CLIENT_SECRET",
)


@pytest.fixture
def standin(keys: tuple[str, str]) -> Iterator[GitHubStandin]:
    with github_standin(APP_ID, keys[1]) as server:
        server.install(INSTALLATION, "acme", ["api", "web"], members=[INSTALLER])
        server.put_file("acme/api", "docs/README.md", "# The API\nIt answers.\n")
        server.put_file("acme/web", "index.html", "<h1>web</h1>")
        yield server


@pytest.fixture
async def kernel(kernel_factory: Any, standin: GitHubStandin, keys: tuple[str, str]) -> Any:
    return await goals_kernel(kernel_factory, env=github_env(standin, keys[0]))


def github_env(standin: GitHubStandin, private_key: str, **changed: str) -> dict[str, str]:
    """The goals plugin's GitHub App settings pointing at the stand-in (its API and its web OAuth endpoint)."""
    env = {
        "TOLLWAY_GOALS_GITHUB_API_URL": standin.url,
        "TOLLWAY_GOALS_GITHUB_WEB_URL": standin.url,
        "TOLLWAY_GOALS_GITHUB_APP_ID": str(APP_ID),
        "TOLLWAY_GOALS_GITHUB_APP_SLUG": SLUG,
        "TOLLWAY_GOALS_GITHUB_PRIVATE_KEY": private_key,
        "TOLLWAY_GOALS_GITHUB_CLIENT_ID": CLIENT_ID,
        "TOLLWAY_GOALS_GITHUB_CLIENT_SECRET": CLIENT_SECRET,
    }
    return {**env, **{f"TOLLWAY_GOALS_GITHUB_{name.upper()}": value for name, value in changed.items()}}


def state_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["state"][0]


def reason(page: Any) -> str:
    found = re.search(r'data-reason="([a-z_]+)"', page.text)
    return found[1] if found else ""


async def create(client: Any, headers: dict[str, str], name: str = "acme code") -> dict[str, Any]:
    resp = await client.post("/v1/connections", json={"name": name, "kind": "github"}, headers=headers)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


async def returned(client: Any, state: str, installation_id: int, code: str | None) -> Any:
    """The browser's return from GitHub as GitHub sends it when the app asks for the user's authorization on installation."""
    params: dict[str, Any] = {"installation_id": installation_id, "setup_action": "install", "state": state}
    if code is not None:
        params["code"] = code
    return await client.get("/v1/connections/callback", params=params)


async def callback(
    client: Any, github: GitHubStandin, state: str, installation_id: int = INSTALLATION, user: str = INSTALLER
) -> Any:
    """`user` authorizes the app at GitHub and comes back naming `installation_id`."""
    return await returned(client, state, installation_id, github.authorize(user))


async def connected(client: Any, headers: dict[str, str], github: GitHubStandin) -> str:
    created = await create(client, headers)
    resp = await callback(client, github, state_of(created["link"]))
    assert resp.status_code == 200, resp.text
    return created["id"]


async def listing(client: Any, headers: dict[str, str]) -> Any:
    resp = await client.get("/v1/connections", headers=headers)
    assert resp.status_code == 200, resp.text
    return resp


async def test_creation_refuses_any_other_field_and_answers_a_one_time_link(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client)
        refused = {}
        for extra in (
            {"token": "ghp_" + "x" * 36},
            {"password": "hunter2"},
            {"key": "-----BEGIN RSA PRIVATE KEY-----"},
        ):
            resp = await client.post("/v1/connections", json={"name": "n", "kind": "github", **extra}, headers=headers)
            refused[next(iter(extra))] = (resp.status_code, resp.json())
        bad = await client.post("/v1/connections", json={"name": "", "kind": "gitlab", "scope": {}}, headers=headers)
        created = await create(client, headers)
        stored = await storage.row("SELECT * FROM goals_connections WHERE id = {}", created["id"])
    for field, (status, body) in refused.items():
        assert status == 400 and body["error"] == "invalid_request"
        assert [d["field"] for d in body["details"]] == [field]
    assert bad.status_code == 400 and {d["field"] for d in bad.json()["details"]} == {"name", "kind", "scope"}
    assert created["status"] == "pending" and created["kind"] == "github" and created["scope"] == {"repositories": []}
    link = urlsplit(created["link"])
    assert f"{link.scheme}://{link.netloc}{link.path}" == f"{standin.url}/apps/{SLUG}/installations/new"
    connection_id, _, secret = state_of(created["link"]).partition(".")
    assert connection_id == created["id"] and len(secret) >= 32
    expires = datetime.fromisoformat(created["link_expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=1)
    assert stored["state_hash"] == hashlib.sha256(secret.encode()).hexdigest() and secret not in json.dumps(stored)


async def test_creation_without_the_github_app_settings_is_503_naming_them(kernel_factory: Any) -> None:
    kernel = await goals_kernel(kernel_factory)
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client)
        resp = await client.post("/v1/connections", json={"name": "n", "kind": "github"}, headers=headers)
        rows = await storage.rows("SELECT id FROM goals_connections")
    assert resp.status_code == 503 and resp.json()["error"] == "provider_unavailable"
    assert all(name in resp.json()["message"] for name in SETTINGS) and rows == []


async def test_the_return_from_github_activates_the_connection_once(kernel: Any, standin: GitHubStandin) -> None:
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client)
        created = await create(client, headers)
        state = state_of(created["link"])
        altered = await callback(client, standin, state[:-1] + ("A" if state[-1] != "A" else "B"))
        unknown = await callback(client, standin, "nonsense")
        not_installed = await callback(client, standin, state, installation_id=999)
        first, second = await asyncio.gather(callback(client, standin, state), callback(client, standin, state))
        third = await callback(client, standin, state)
        listed = await listing(client, headers)
    assert altered.status_code == 403 and unknown.status_code == 403
    assert (
        not_installed.status_code == 403
        and reason(not_installed) == "not_yours"
        and "Nothing was connected" in not_installed.text
    )
    assert sorted([first.status_code, second.status_code]) == [200, 410]
    assert third.status_code == 410 and "already been used" in third.text
    ok = first if first.status_code == 200 else second
    assert (
        ok.headers["content-type"].startswith("text/html") and "acme/api" in ok.text and "Cache-Control" in ok.headers
    )
    data = listed.json()["data"]
    assert data == [
        {
            "id": created["id"],
            "name": "acme code",
            "kind": "github",
            "status": "active",
            "scope": {"repositories": ["acme/api", "acme/web"]},
            "created_at": created["created_at"],
        }
    ]
    assert "link" not in listed.text and state.split(".")[1] not in listed.text
    assert not any(token in listed.text for token in standin.issued) and "ghs_" not in listed.text


async def stored_link(connection_id: str) -> tuple[str, Any, Any, str]:
    row = await storage.row("SELECT * FROM goals_connections WHERE id = {}", connection_id)
    return row["status"], row["installation_id"], row["link_used_ms"], row["repositories"]


async def test_completing_ones_own_link_with_another_accounts_installation_is_refused_and_scopes_nothing(
    kernel: Any, standin: GitHubStandin
) -> None:
    standin.install(42, "mallory", ["tools"], members=["mallory"])
    standin.install(77, "victim-org", ["payroll"], members=["bob"])
    async with http_client(kernel) as client:
        _attacker, headers = await credits_session(client)
        created = await create(client, headers, name="mine")
        state = state_of(created["link"])
        attack = await callback(client, standin, state, installation_id=77, user="mallory")
        after_attack = await stored_link(created["id"])
        listed = (await listing(client, headers)).json()["data"]
        minted_for_victim = standin.calls("POST", "/app/installations/77/")
        honest = await callback(client, standin, state, installation_id=42, user="mallory")
        final = (await listing(client, headers)).json()["data"]
    assert attack.status_code == 403 and reason(attack) == "not_yours"
    assert "Nothing was connected" in attack.text and "payroll" not in attack.text
    assert after_attack == ("pending", None, None, "[]") and minted_for_victim == []
    assert [(c["status"], c["scope"]) for c in listed] == [("pending", {"repositories": []})]
    assert not any(standin.user_token_is_live(t) for t in standin.user_tokens) and standin.calls(
        "DELETE", "/applications/"
    )
    assert honest.status_code == 200, honest.text
    assert [(c["status"], c["scope"]) for c in final] == [("active", {"repositories": ["mallory/tools"]})]


async def test_a_return_without_a_code_or_with_an_unknown_expired_or_replayed_code_activates_nothing(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client)
        first = await create(client, headers, name="first")
        second = await create(client, headers, name="second")
        state = state_of(second["link"])
        used_code = standin.authorize(INSTALLER)
        honest = await returned(client, state_of(first["link"]), INSTALLATION, used_code)
        refused = {
            "none": await returned(client, state, INSTALLATION, None),
            "empty": await returned(client, state, INSTALLATION, ""),
            "unknown": await returned(client, state, INSTALLATION, "0123456789abcdef0123"),
            "expired": await returned(client, state, INSTALLATION, standin.authorize(INSTALLER, expires_in_s=-1)),
            "replayed": await returned(client, state, INSTALLATION, used_code),
        }
        still = await stored_link(second["id"])
        last = await callback(client, standin, state)
    assert honest.status_code == 200, honest.text
    assert {k: (r.status_code, reason(r)) for k, r in refused.items()} == {
        "none": (400, "no_code"),
        "empty": (400, "no_code"),
        "unknown": (403, "code_refused"),
        "expired": (403, "code_refused"),
        "replayed": (403, "code_refused"),
    }
    assert all("Nothing was connected" in r.text and r.headers["cache-control"] == "no-store" for r in refused.values())
    assert still == ("pending", None, None, "[]")
    exchanges = standin.calls("POST", "/login/oauth/access_token")
    assert len(exchanges) == 5 and {(e.body["client_id"], e.body["client_secret"]) for e in exchanges} == {
        (CLIENT_ID, CLIENT_SECRET)
    }
    assert all(e.headers["accept"] == "application/json" for e in exchanges)
    assert last.status_code == 200 and "acme/api" in last.text


async def test_a_wrong_client_secret_is_a_provider_error_not_a_refused_user(
    kernel_factory: Any, standin: GitHubStandin, keys: tuple[str, str]
) -> None:
    kernel = await goals_kernel(kernel_factory, env=github_env(standin, keys[0], client_secret="not-the-secret"))
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client)
        created = await create(client, headers)
        resp = await callback(client, standin, state_of(created["link"]))
        still = await stored_link(created["id"])
    assert resp.status_code == 502 and reason(resp) == "provider_error" and "not-the-secret" not in resp.text
    assert still == ("pending", None, None, "[]")


async def test_a_link_older_than_an_hour_is_refused_and_the_connection_stays_pending(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        _agent, headers = await credits_session(client)
        created = await create(client, headers)
        await storage.rows(
            "UPDATE goals_connections SET link_expires_ms = link_expires_ms - 3600001 WHERE id = {}", created["id"]
        )
        resp = await callback(client, standin, state_of(created["link"]))
        listed = (await listing(client, headers)).json()["data"]
    assert resp.status_code == 410 and "expired" in resp.text
    assert [c["status"] for c in listed] == ["pending"]


async def test_only_the_owner_sees_and_revokes_it_and_revoking_ends_the_grant_at_github(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        _other, other_headers = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        seen_by_other = (await listing(client, other_headers)).json()["data"]
        deleted_by_other = await client.delete(f"/v1/connections/{connection_id}", headers=other_headers)
        still_installed = INSTALLATION in standin.installations
        unknown = await client.delete("/v1/connections/con_000000000000000000000000", headers=headers)
        deleted = await client.delete(f"/v1/connections/{connection_id}", headers=headers)
        again = await client.delete(f"/v1/connections/{connection_id}", headers=headers)
        listed = (await listing(client, headers)).json()["data"]
        with pytest.raises(ConnectionRevoked):
            await repository_token_for(owner, connection_id, "acme/api", kernel.platform)
    assert (
        seen_by_other == [] and deleted_by_other.status_code == 404 and deleted_by_other.json()["error"] == "not_found"
    )
    assert still_installed and unknown.status_code == 404
    assert deleted.status_code == 200 and deleted.json()["data"]["status"] == "revoked"
    assert INSTALLATION not in standin.installations and standin.calls("DELETE", f"/app/installations/{INSTALLATION}")
    assert again.status_code == 200 and [c["status"] for c in listed] == ["revoked"]


async def test_a_goal_gets_a_token_for_one_repository_expiring_within_the_hour(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        other, _other_headers = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        pending_id = (await create(client, headers, name="not yet"))["id"]
        grant = await repository_token_for(owner, connection_id, "ACME/api", kernel.platform)
        refusals = {}
        for who, cid, repo in (
            (owner, connection_id, "acme/secret"),
            (other, connection_id, "acme/api"),
            (owner, pending_id, "acme/api"),
            (owner, "con_unknown", "acme/api"),
        ):
            with pytest.raises(Exception) as caught:
                await repository_token_for(who, cid, repo, kernel.platform)
            refusals[(who, cid, repo)] = caught.value
    assert grant.repositories == ("acme/api",) and standin.tokens[grant.token].repositories == ("api",)
    assert standin.tokens[grant.token].permissions == {"contents": "read"} and standin.token_is_live(grant.token)
    assert timedelta(0) < grant.expires_at - datetime.now(UTC) <= timedelta(hours=1)
    assert grant.token not in repr(grant)
    kinds = [type(e) for e in refusals.values()]
    assert kinds == [RepositoryOutOfScope, ConnectionNotFound, ConnectionNotActive, ConnectionNotFound]
    assert [e.status for e in refusals.values()] == [403, 404, 409, 404]


async def test_an_uninstalled_app_revokes_the_connection_at_its_next_use(kernel: Any, standin: GitHubStandin) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        standin.uninstall(INSTALLATION)
        with pytest.raises(ConnectionRevoked):
            await repository_token_for(owner, connection_id, "acme/api", kernel.platform)
        listed = (await listing(client, headers)).json()["data"]
    assert [c["status"] for c in listed] == ["revoked"]


async def test_reading_a_file_answers_its_content_and_never_the_token(kernel: Any, standin: GitHubStandin) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        where = Where(goal={"id": "goal_x", "agent_id": owner}, session_id="ses_x", case_id=None, depth=0)
        outcome = await read_repository_file(
            where,
            {"connection_id": connection_id, "repository": "acme/api", "path": "/docs/README.md"},
            kernel.platform,
        )
        token = standin.issued[-1]
        errors = []
        for args in (
            {"connection_id": connection_id, "repository": "acme/api", "path": "missing.txt"},
            {"connection_id": connection_id, "repository": "acme/other", "path": "x"},
            {"connection_id": connection_id, "repository": "acme/api", "path": "../x"},
            {"connection_id": connection_id, "repository": "acme/api", "path": "x", "token": "ghp_" + "y" * 36},
        ):
            with pytest.raises(CallRefused) as caught:
                await read_repository_file(where, args, kernel.platform)
            errors.append(str(caught.value))
    assert outcome.result == {
        "ok": True,
        "repository": "acme/api",
        "path": "docs/README.md",
        "content": "# The API\nIt answers.\n",
        "truncated": False,
    }
    assert not outcome.ends_session
    assert all(t not in json.dumps(outcome.result) for t in standin.issued) and token.startswith("ghs_")
    assert not standin.token_is_live(token)
    contents = standin.calls("GET", "/repos/acme/api/contents/")
    assert contents and contents[0].headers["authorization"] == f"Bearer {token}"
    assert contents[0].headers["accept"] == "application/vnd.github.raw+json"
    assert (
        "no file missing.txt" in errors[0]
        and "not in the scope" in errors[1]
        and ".." in errors[2]
        and "token" in errors[3]
    )
    assert not any("ghs_" in e or any(t in e for t in standin.issued) for e in errors)
    assert READ_REPOSITORY_FILE["function"]["name"] == "read_repository_file"
    assert set(READ_REPOSITORY_FILE["function"]["parameters"]["required"]) == {"connection_id", "repository", "path"}


async def test_an_issued_repository_token_is_masked_in_stored_text(kernel: Any, standin: GitHubStandin) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        grant = await repository_token_for(owner, connection_id, "acme/web", kernel.platform)
    text = f"cloning with x-access-token:{grant.token}@github.com"
    assert mask(text) == "cloning with x-access-token:***@github.com"
    assert mask({"steps": [text]}) == {"steps": ["cloning with x-access-token:***@github.com"]}
