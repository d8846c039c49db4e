"""The GitHub App client against a local stand-in that speaks GitHub's App REST API and its OAuth code exchange."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from github_standin import CLIENT_ID, CLIENT_SECRET, GitHubStandin, github_standin, rsa_keypair

from tollway_goals.github_app import (
    AuthorizationRefused,
    GitHubApp,
    Installation,
    InstallationGone,
    ProviderAuthError,
    ProviderError,
    ProviderUnavailable,
    RepositoryNotInScope,
    RepoToken,
)

APP_ID = 424242
SLUG = "tollway-test"
INSTALLATION = 7


@pytest.fixture(scope="module")
def foreign_keys() -> tuple[str, str]:
    return rsa_keypair()


@pytest.fixture
def standin(keys: tuple[str, str]) -> Iterator[GitHubStandin]:
    with github_standin(APP_ID, keys[1]) as server:
        server.install(INSTALLATION, "acme", ["api", "web", "docs"])
        yield server


def make_app(
    http: httpx.AsyncClient, url: str, private_pem: str, client_secret: str = CLIENT_SECRET, app_id: int = APP_ID
) -> GitHubApp:
    return GitHubApp(
        http,
        url,
        app_id=app_id,
        app_slug=SLUG,
        private_key_pem=private_pem,
        web_url=url,
        client_id=CLIENT_ID,
        client_secret=client_secret,
    )


@pytest.fixture
def app(http: httpx.AsyncClient, standin: GitHubStandin, keys: tuple[str, str]) -> GitHubApp:
    return make_app(http, standin.url, keys[0])


def test_install_url_sends_the_user_to_the_apps_installation_page(
    http: httpx.AsyncClient, keys: tuple[str, str]
) -> None:
    app = GitHubApp(http, app_id=APP_ID, app_slug=SLUG, private_key_pem=keys[0])
    url = urlsplit(app.install_url("s t&ate=1"))
    assert (url.scheme, url.netloc, url.path) == ("https", "github.com", f"/apps/{SLUG}/installations/new")
    assert parse_qs(url.query) == {"state": ["s t&ate=1"]}


def test_app_jwt_is_rs256_with_the_app_as_issuer_and_under_ten_minutes(app: GitHubApp, keys: tuple[str, str]) -> None:
    now = 1_700_000_000
    token = app.app_jwt(now_s=now)
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(token, keys[1], algorithms=["RS256"], options={"verify_exp": False, "verify_iat": False})
    assert claims == {"iat": now - 60, "exp": now + 540, "iss": str(APP_ID)}


async def test_standin_refuses_a_jwt_that_is_expired_foreign_or_too_long_lived(
    http: httpx.AsyncClient,
    app: GitHubApp,
    standin: GitHubStandin,
    foreign_keys: tuple[str, str],
    keys: tuple[str, str],
) -> None:
    url = f"{standin.url}/app/installations/{INSTALLATION}"
    now = time.time()
    too_long = jwt.encode(
        {"iat": int(now) - 60, "exp": int(now) + 3600, "iss": str(APP_ID)}, keys[0], algorithm="RS256"
    )
    foreign = make_app(http, standin.url, foreign_keys[0]).app_jwt()
    for bearer, status in [(app.app_jwt(), 200), (app.app_jwt(now - 3600), 401), (foreign, 401), (too_long, 401)]:
        response = await http.get(url, headers={"Authorization": f"Bearer {bearer}"})
        assert response.status_code == status


async def test_an_app_signing_with_another_key_is_refused(
    http: httpx.AsyncClient, standin: GitHubStandin, foreign_keys: tuple[str, str]
) -> None:
    with pytest.raises(ProviderAuthError):
        await make_app(http, standin.url, foreign_keys[0]).installation(INSTALLATION)


async def test_installation_is_read_with_githubs_headers(app: GitHubApp, standin: GitHubStandin) -> None:
    assert await app.installation(INSTALLATION) == Installation(INSTALLATION, "acme", "selected")
    [request] = standin.calls("GET", "/app/installations/")
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.headers["authorization"].startswith("Bearer ey")


async def test_repository_token_covers_exactly_one_repository_for_an_hour_at_most(
    app: GitHubApp, standin: GitHubStandin, http: httpx.AsyncClient
) -> None:
    before = datetime.now(UTC)
    token = await app.repository_token(INSTALLATION, "acme/api")
    assert token.repositories == ("acme/api",)
    assert before < token.expires_at <= before + timedelta(hours=1, seconds=1)
    [request] = standin.calls("POST", "/app/installations/")
    assert request.path == f"/app/installations/{INSTALLATION}/access_tokens"
    assert request.body == {"repositories": ["api"], "permissions": {"contents": "read"}}
    listed = await http.get(
        f"{standin.url}/installation/repositories", headers={"Authorization": f"token {token.token}"}
    )
    assert [repo["full_name"] for repo in listed.json()["repositories"]] == ["acme/api"]


async def test_repository_token_permissions_can_be_raised_within_the_installation(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    standin.install(8, "acme", ["api"], {"contents": "write", "metadata": "read"})
    await app.repository_token(8, "acme/api", permissions={"contents": "write"})
    assert standin.calls("POST")[-1].body["permissions"] == {"contents": "write"}
    with pytest.raises(RepositoryNotInScope):
        await app.repository_token(INSTALLATION, "acme/api", permissions={"contents": "write"})


async def test_a_repository_outside_the_installation_is_refused(app: GitHubApp, standin: GitHubStandin) -> None:
    with pytest.raises(RepositoryNotInScope, match="acme/secret"):
        await app.repository_token(INSTALLATION, "acme/secret")
    assert standin.issued == []


async def test_a_same_named_repository_of_another_owner_is_refused_and_its_token_revoked(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    with pytest.raises(RepositoryNotInScope):
        await app.repository_token(INSTALLATION, "evil/api")
    [minted] = standin.issued
    assert not standin.token_is_live(minted)
    assert standin.calls("DELETE", "/installation/token")


async def test_a_malformed_repository_name_sends_nothing(app: GitHubApp, standin: GitHubStandin) -> None:
    for name in ("api", "acme/", "acme/api/x"):
        with pytest.raises(ValueError):
            await app.repository_token(INSTALLATION, name)
    assert standin.requests == []


async def test_after_uninstall_the_installation_and_its_tokens_are_gone(app: GitHubApp, standin: GitHubStandin) -> None:
    earlier = await app.repository_token(INSTALLATION, "acme/web")
    standin.uninstall(INSTALLATION)
    assert await app.installation(INSTALLATION) is None
    with pytest.raises(InstallationGone):
        await app.repository_token(INSTALLATION, "acme/web")
    with pytest.raises(InstallationGone):
        await app.repositories(INSTALLATION)
    assert not standin.token_is_live(earlier.token)


async def test_revoke_deletes_the_installation_and_tolerates_it_being_gone(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    await app.revoke(INSTALLATION)
    assert INSTALLATION not in standin.installations
    assert [r.path for r in standin.calls("DELETE")] == [f"/app/installations/{INSTALLATION}"]
    await app.revoke(INSTALLATION)
    assert await app.installation(INSTALLATION) is None


async def test_user_installations_exchanges_the_code_lists_what_that_user_reaches_and_gives_the_token_up(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    standin.install(INSTALLATION, "acme", ["api"], members=["alice", "carol"])
    standin.install(8, "alice", ["dotfiles"])
    standin.install(9, "victim-org", ["payroll"], members=["bob"])
    found = await app.user_installations(standin.authorize("Alice"))
    assert found == [Installation(INSTALLATION, "acme", "selected"), Installation(8, "alice", "selected")]
    [exchange] = standin.calls("POST", "/login/oauth/access_token")
    assert exchange.body == {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "code": exchange.body["code"]}
    assert exchange.headers["accept"] == "application/json"
    assert exchange.headers["content-type"] == "application/x-www-form-urlencoded"
    [listing] = standin.calls("GET", "/user/installations")
    token = listing.headers["authorization"].removeprefix("Bearer ")
    assert token.startswith("ghu_") and not standin.user_token_is_live(token)
    [revoked] = standin.calls("DELETE", "/applications/")
    assert revoked.path == f"/applications/{CLIENT_ID}/token" and revoked.body == {"access_token": token}


async def test_user_installations_pages_through_a_user_with_many(app: GitHubApp, standin: GitHubStandin) -> None:
    for number in range(100, 231):
        standin.install(number, f"org-{number}", ["r"], members=["dana"])
    found = await app.user_installations(standin.authorize("dana"))
    assert [i.id for i in found] == list(range(100, 231))
    assert [int(r.query["page"]) for r in standin.calls("GET", "/user/installations")] == [1, 2]


async def test_a_wrong_expired_or_used_code_is_refused_and_a_wrong_client_secret_is_the_apps_fault(
    http: httpx.AsyncClient, app: GitHubApp, standin: GitHubStandin, keys: tuple[str, str]
) -> None:
    used = standin.authorize("alice")
    await app.user_installations(used)
    for code in ("0" * 20, standin.authorize("alice", expires_in_s=-1), used):
        with pytest.raises(AuthorizationRefused):
            await app.user_installations(code)
    wrong = make_app(http, standin.url, keys[0], client_secret="not-it")
    with pytest.raises(ProviderAuthError) as caught:
        await wrong.user_installations(standin.authorize("alice"))
    assert "incorrect_client_credentials" in str(caught.value) and "not-it" not in str(caught.value)
    assert CLIENT_SECRET not in repr(app) and len(standin.calls("GET", "/user/installations")) == 1


async def test_standin_answers_the_code_exchange_form_encoded_unless_json_is_asked_for(
    http: httpx.AsyncClient, standin: GitHubStandin
) -> None:
    form = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "code": standin.authorize("alice")}
    answer = await http.post(f"{standin.url}/login/oauth/access_token", params=form)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/x-www-form-urlencoded")
    fields = parse_qs(answer.text)
    assert fields["token_type"] == ["bearer"] and fields["access_token"][0].startswith("ghu_")
    refused = await http.post(
        f"{standin.url}/login/oauth/access_token", json=form, headers={"Accept": "application/json"}
    )
    assert refused.status_code == 200 and refused.json()["error"] == "bad_verification_code"
    as_installation = await http.get(f"{standin.url}/user/installations", headers={"Authorization": "Bearer nonsense"})
    assert as_installation.status_code == 401


@pytest.mark.parametrize(("count", "pages"), [(230, [1, 2, 3]), (200, [1, 2, 3]), (3, [1])])
async def test_repositories_pages_through_everything_and_revokes_its_listing_token(
    app: GitHubApp, standin: GitHubStandin, count: int, pages: list[int]
) -> None:
    names = [f"repo-{i:03d}" for i in range(count)]
    standin.install(9, "bigco", names)
    assert await app.repositories(9) == [f"bigco/{name}" for name in names]
    listing = standin.calls("GET", "/installation/repositories")
    assert [int(r.query["page"]) for r in listing] == pages
    assert {r.query["per_page"] for r in listing} == {"100"}
    assert standin.calls("POST")[-1].body == {"permissions": {"metadata": "read"}}
    assert not any(standin.token_is_live(token) for token in standin.issued)


async def test_outages_timeouts_and_refused_connections_are_unavailable(
    http: httpx.AsyncClient, app: GitHubApp, standin: GitHubStandin, keys: tuple[str, str]
) -> None:
    standin.outage = 503
    with pytest.raises(ProviderUnavailable):
        await app.repository_token(INSTALLATION, "acme/api")
    standin.outage, standin.delay_s = None, 0.5
    async with httpx.AsyncClient(timeout=0.1) as impatient:
        with pytest.raises(ProviderUnavailable, match="timed out"):
            await make_app(impatient, standin.url, keys[0]).installation(INSTALLATION)
    with pytest.raises(ProviderUnavailable):
        await make_app(http, f"http://127.0.0.1:{closed_port()}", keys[0]).installation(INSTALLATION)


async def test_no_token_or_key_shows_in_reprs_or_errors(
    http: httpx.AsyncClient,
    app: GitHubApp,
    standin: GitHubStandin,
    keys: tuple[str, str],
    foreign_keys: tuple[str, str],
) -> None:
    token = await app.repository_token(INSTALLATION, "acme/api")
    assert token.token.startswith("ghs_") and token.token not in repr(token) and "***" in repr(token)
    assert isinstance(token, RepoToken)
    errors = [await raised(app.repository_token(INSTALLATION, "evil/api"))]
    errors.append(await raised(make_app(http, standin.url, foreign_keys[0]).repository_token(INSTALLATION, "acme/api")))
    standin.uninstall(INSTALLATION)
    errors.append(await raised(app.repository_token(INSTALLATION, "acme/api")))
    assert len(standin.issued) == 2
    secrets = [*standin.issued, key_body(keys[0]), key_body(foreign_keys[0])]
    for shown in [repr(app), *map(str, errors), *map(repr, errors)]:
        assert not any(secret in shown for secret in secrets)


async def raised(call) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await call
    return caught.value


def key_body(pem: str) -> str:
    return pem.splitlines()[1]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
