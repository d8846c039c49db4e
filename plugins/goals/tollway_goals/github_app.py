"""The GitHub App side of code-host connections: install link, app JWT, the installing user's installations, repository tokens, revocation."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
from cryptography.hazmat.primitives.serialization import load_pem_private_key

API_VERSION = "2022-11-28"
MEDIA_TYPE = "application/vnd.github+json"
PAGE_SIZE = 100
READ_CONTENTS: Mapping[str, str] = {"contents": "read"}
# Listing repositories needs only the metadata every installation grants.
LIST_ONLY: Mapping[str, str] = {"metadata": "read"}


class ProviderError(Exception):
    """GitHub refused or failed a request; the message names the route and status, never a secret."""


class ProviderAuthError(ProviderError):
    """GitHub refused the app's credentials (401/403)."""


class ProviderUnavailable(ProviderError):
    """GitHub did not answer usefully: 5xx, rate limit, timeout or connection failure."""


class AuthorizationRefused(ProviderError):
    """GitHub would not exchange the user's authorization code: wrong, expired or already used."""


class InstallationGone(ProviderError):
    """The installation no longer exists: the account uninstalled the app."""


class RepositoryNotInScope(ProviderError):
    """The repository is not one the installation can reach."""


@dataclass(frozen=True)
class Installation:
    id: int
    account: str
    repository_selection: str


@dataclass(frozen=True, repr=False)
class RepoToken:
    token: str
    expires_at: datetime
    repositories: tuple[str, ...]

    def __repr__(self) -> str:
        return f"RepoToken(token='***', expires_at={self.expires_at.isoformat()!r}, repositories={self.repositories!r})"


class GitHubApp:
    def __init__(
        self,
        http: httpx.AsyncClient,
        api_url: str = "https://api.github.com",
        *,
        app_id: int | str,
        app_slug: str,
        private_key_pem: str | bytes,
        web_url: str = "https://github.com",
        client_id: str = "",
        client_secret: str = "",
    ) -> None:
        pem = private_key_pem.encode() if isinstance(private_key_pem, str) else private_key_pem
        try:
            self._key = load_pem_private_key(pem, password=None)
        except (ValueError, TypeError):
            raise ValueError("the GitHub App private key is not an unencrypted PEM private key") from None
        self._http = http
        self.api_url = api_url.rstrip("/")
        self.web_url = web_url.rstrip("/")
        self.app_id = str(app_id)
        self.app_slug = app_slug
        self.client_id = client_id
        self._client_secret = client_secret

    @property
    def http(self) -> httpx.AsyncClient:
        return self._http

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.app_id!r}, app_slug={self.app_slug!r}, api_url={self.api_url!r})"

    def install_url(self, state: str) -> str:
        return f"{self.web_url}/apps/{self.app_slug}/installations/new?{urlencode({'state': state})}"

    def app_jwt(self, now_s: float | None = None) -> str:
        now = int(time.time() if now_s is None else now_s)
        claims = {"iat": now - 60, "exp": now + 540, "iss": self.app_id}
        return jwt.encode(claims, self._key, algorithm="RS256")

    async def installation(self, installation_id: int) -> Installation | None:
        response = await self._send("GET", f"/app/installations/{installation_id}", self.app_jwt())
        if response.status_code == 404:
            return None
        body = _expect(response, 200)
        return Installation(int(body["id"]), body["account"]["login"], body["repository_selection"])

    async def user_installations(self, code: str) -> list[Installation]:
        """The app's installations reachable by the user whose authorization `code` GitHub put on the callback.

        The code is exchanged for a user access token, which lists them and is then given up; AuthorizationRefused
        when GitHub will not exchange the code."""
        token = await self._user_token(code)
        try:
            return [
                Installation(int(found["id"]), found["account"]["login"], found["repository_selection"])
                async for found in self._pages("/user/installations", token, "installations")
            ]
        finally:
            await self._revoke_user_token(token)

    async def repositories(self, installation_id: int) -> list[str]:
        grant = await self._installation_token(installation_id, {"permissions": dict(LIST_ONLY)})
        try:
            return await self._list_repositories(grant["token"])
        finally:
            await self.revoke_token(grant["token"])

    async def repository_token(
        self, installation_id: int, repository: str, permissions: Mapping[str, str] = READ_CONTENTS
    ) -> RepoToken:
        owner, name = split_repository(repository)
        body = await self._installation_token(
            installation_id, {"repositories": [name], "permissions": dict(permissions)}, repository
        )
        covered = tuple(repo["full_name"] for repo in body.get("repositories", ()))
        if [full.lower() for full in covered] != [f"{owner}/{name}".lower()]:
            await self.revoke_token(body["token"])
            raise RepositoryNotInScope(f"installation {installation_id} does not reach {repository}")
        return RepoToken(body["token"], _parse_time(body["expires_at"]), covered)

    async def revoke(self, installation_id: int) -> None:
        response = await self._send("DELETE", f"/app/installations/{installation_id}", self.app_jwt())
        if response.status_code != 404:
            _expect(response, 204)

    async def _installation_token(
        self, installation_id: int, payload: dict[str, Any], repository: str | None = None
    ) -> dict[str, Any]:
        path = f"/app/installations/{installation_id}/access_tokens"
        response = await self._send("POST", path, self.app_jwt(), json=payload)
        if response.status_code == 404:
            raise InstallationGone(f"installation {installation_id} no longer exists (POST {path}: 404)")
        if response.status_code == 422:
            raise RepositoryNotInScope(
                f"installation {installation_id} cannot grant {repository or 'these permissions'} (POST {path}: 422)"
            )
        return _expect(response, 201)

    async def _list_repositories(self, token: str) -> list[str]:
        return [repo["full_name"] async for repo in self._pages("/installation/repositories", token, "repositories")]

    async def _pages(self, path: str, token: str, key: str) -> AsyncIterator[dict[str, Any]]:
        page = 1
        while True:
            response = await self._send("GET", path, token, params={"per_page": PAGE_SIZE, "page": page})
            batch = _expect(response, 200)[key]
            for item in batch:
                yield item
            if len(batch) < PAGE_SIZE:
                return
            page += 1

    async def _user_token(self, code: str) -> str:
        """POST <web>/login/oauth/access_token: GitHub answers 200 with an `error` field when it refuses."""
        route = "POST /login/oauth/access_token"
        form = {"client_id": self.client_id, "client_secret": self._client_secret, "code": code}
        response = await self._request(
            route, "POST", f"{self.web_url}/login/oauth/access_token", {"Accept": "application/json"}, data=form
        )
        try:
            body = _expect(response, 200)
        except ValueError:
            raise ProviderError(f"unexpected answer from GitHub ({route}: not JSON)") from None
        error = body.get("error") if isinstance(body, dict) else "no answer"
        if error == "bad_verification_code":
            raise AuthorizationRefused(f"GitHub refused the authorization code ({route}: {error})")
        if error or not isinstance(body.get("access_token"), str):
            raise ProviderAuthError(
                f"GitHub refused the app's OAuth credentials ({route}: {error or 'no access_token'})"
            )
        return body["access_token"]

    async def _revoke_user_token(self, token: str) -> None:
        route = "DELETE /applications/{client_id}/token"
        try:
            await self._request(
                route,
                "DELETE",
                f"{self.api_url}/applications/{self.client_id}/token",
                self._headers(None),
                auth=(self.client_id, self._client_secret),
                json={"access_token": token},
            )
        except ProviderError:
            pass

    async def revoke_token(self, token: str) -> None:
        """Gives an installation token up at GitHub; a failure is ignored (the token expires within the hour anyway)."""
        try:
            await self._send("DELETE", "/installation/token", token)
        except ProviderError:
            pass

    async def _send(self, method: str, path: str, bearer: str, **kwargs: Any) -> httpx.Response:
        return await send(self._http, self.api_url, method, path, bearer, **kwargs)

    @staticmethod
    def _headers(bearer: str | None) -> dict[str, str]:
        return headers_for(bearer)

    async def _request(
        self, route: str, method: str, url: str, headers: dict[str, str], **kwargs: Any
    ) -> httpx.Response:
        return await request(self._http, route, method, url, headers, **kwargs)


def headers_for(bearer: str | None) -> dict[str, str]:
    headers = {"Accept": MEDIA_TYPE, "X-GitHub-Api-Version": API_VERSION}
    return {"Authorization": f"Bearer {bearer}", **headers} if bearer is not None else headers


async def send(
    http: httpx.AsyncClient, api_url: str, method: str, path: str, bearer: str, **kwargs: Any
) -> httpx.Response:
    """One API request with GitHub's headers and `bearer`; errors name the method and path, never the bearer."""
    return await request(
        http, f"{method} {path}", method, f"{api_url.rstrip('/')}{path}", headers_for(bearer), **kwargs
    )


async def request(
    http: httpx.AsyncClient, route: str, method: str, url: str, headers: dict[str, str], **kwargs: Any
) -> httpx.Response:
    """One request; `route` (never a secret) names it in errors."""
    try:
        response = await http.request(method, url, headers=headers, **kwargs)
    except httpx.TimeoutException:
        raise ProviderUnavailable(f"GitHub timed out ({route})") from None
    except httpx.TransportError as exc:
        raise ProviderUnavailable(f"GitHub unreachable ({route}: {type(exc).__name__})") from None
    _raise_for_common(response, route)
    return response


def _raise_for_common(response: httpx.Response, route: str) -> None:
    status = response.status_code
    rate_limited = status == 429 or (status == 403 and response.headers.get("x-ratelimit-remaining") == "0")
    if status >= 500 or rate_limited:
        raise ProviderUnavailable(f"GitHub unavailable ({route}: {status})")
    if status in (401, 403):
        raise ProviderAuthError(f"GitHub refused the app's credentials ({route}: {status})")


def _expect(response: httpx.Response, status: int) -> Any:
    if response.status_code != status:
        route = f"{response.request.method} {response.request.url.path}"
        raise ProviderError(f"unexpected answer from GitHub ({route}: {response.status_code})")
    return response.json() if response.content else None


def split_repository(repository: str) -> tuple[str, str]:
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"a repository is named owner/name, got {repository!r}")
    return owner, name


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
