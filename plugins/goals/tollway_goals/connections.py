"""Code-host connections: a GitHub App installation an agent approves through a one-time link (activated only for an
installation the returning GitHub user proves they reach), and the one-repository tokens goals get."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from html import escape
from typing import Annotated, Any, Literal

import httpx
import msgspec
from msgspec import Meta

from tollway import Page, Refusal, Route, RouteCall, RouteReply, storage

from .github_app import (
    READ_CONTENTS,
    AuthorizationRefused,
    GitHubApp,
    InstallationGone,
    ProviderError,
    ProviderUnavailable,
    RepositoryNotInScope,
    RepoToken,
)
from .github_pages import DEFAULT_BRANCH, PagesPublication, checked_branch, publish_pages, site_files
from .ids import iso, new_id, now_ms
from .settings import (
    FAMILY,
    GITHUB_API_URL,
    GITHUB_APP,
    GITHUB_APP_ID,
    GITHUB_APP_SLUG,
    GITHUB_CLIENT_ID,
    GITHUB_CLIENT_SECRET,
    GITHUB_PRIVATE_KEY,
    GITHUB_WEB_URL,
)
from .tables import Connection as ConnectionRow

__all__ = [
    "CONNECTION_ROUTES",
    "ConnectionNotActive",
    "ConnectionNotFound",
    "ConnectionRefusal",
    "ConnectionRevoked",
    "PAGES_WRITE",
    "PagesPublication",
    "ProviderDown",
    "ProviderFailed",
    "ProviderNotConfigured",
    "RepositoryOutOfScope",
    "api_url",
    "github",
    "publish_pages_for",
    "repository_token_for",
]

LINK_LIFETIME_MS = 3_600_000
# What publishing a site to a repository's Pages branch needs of the installation.
PAGES_WRITE: Mapping[str, str] = {"contents": "write", "pages": "write"}
HTTP_TIMEOUT_S = 15.0
NO_STORE = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
TAGS = ("connections",)
_INSTALLATION_ID = re.compile(r"^[1-9][0-9]{0,17}$")
# GitHub's OAuth codes are short hex strings; anything else is not sent on.
_CODE = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class ConnectionRefusal(Refusal):
    """A refused use of a connection; `message` never holds a secret."""

    CODE = "connection_refused"
    STATUS = 400

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(self.CODE, message, status=self.STATUS, details=details)


class ConnectionNotFound(ConnectionRefusal):
    CODE, STATUS = "not_found", 404


class ConnectionRevoked(ConnectionRefusal):
    CODE, STATUS = "connection_revoked", 409


class ConnectionNotActive(ConnectionRefusal):
    CODE, STATUS = "connection_pending", 409


class RepositoryOutOfScope(ConnectionRefusal):
    CODE, STATUS = "repository_not_in_scope", 403


class ProviderNotConfigured(ConnectionRefusal):
    CODE, STATUS = "provider_unavailable", 503


class ProviderDown(ConnectionRefusal):
    CODE, STATUS = "provider_unavailable", 503


class ProviderFailed(ConnectionRefusal):
    CODE, STATUS = "provider_error", 502


class ConnectionRequest(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=100)]
    kind: Literal["github"]


class Scope(msgspec.Struct):
    repositories: list[str]


class Connection(msgspec.Struct):
    id: str
    name: str
    kind: str
    status: Literal["pending", "active", "revoked"]
    scope: Scope
    created_at: str


class NewConnection(msgspec.Struct):
    id: str
    name: str
    kind: str
    status: Literal["pending"]
    scope: Scope
    created_at: str
    link: str
    link_expires_at: str


class ConnectionAnswer(msgspec.Struct):
    success: bool
    data: Connection


class NewConnectionAnswer(msgspec.Struct):
    success: bool
    data: NewConnection


class ConnectionList(msgspec.Struct):
    success: bool
    data: list[Connection]


def _setting(settings: Mapping[str, str], setting: Any) -> str:
    return (settings.get(setting.name) or setting.default or "").strip()


def api_url(platform: Any) -> str:
    return _setting(platform.settings(FAMILY), GITHUB_API_URL).rstrip("/")


@asynccontextmanager
async def github(platform: Any) -> AsyncIterator[GitHubApp]:
    """The configured GitHub App over the service's HTTP client; ProviderNotConfigured naming what is missing."""
    settings = platform.settings(FAMILY) if platform is not None else {}
    missing = [s.env_var for s in GITHUB_APP if not _setting(settings, s)]
    if missing:
        raise ProviderNotConfigured(
            f"Code-host connections are not configured on this service: {', '.join(missing)} not set.",
            {"settings": missing},
        )
    pem = _setting(settings, GITHUB_PRIVATE_KEY)
    if "\\n" in pem and "\n" not in pem:
        pem = pem.replace("\\n", "\n")
    shared = getattr(platform, "http", None)
    async with _client(shared) as http:
        try:
            app = GitHubApp(
                http,
                _setting(settings, GITHUB_API_URL),
                app_id=_setting(settings, GITHUB_APP_ID),
                app_slug=_setting(settings, GITHUB_APP_SLUG),
                private_key_pem=pem,
                web_url=_setting(settings, GITHUB_WEB_URL),
                client_id=_setting(settings, GITHUB_CLIENT_ID),
                client_secret=_setting(settings, GITHUB_CLIENT_SECRET),
            )
        except ValueError:
            raise ProviderNotConfigured(
                f"{GITHUB_PRIVATE_KEY.env_var} is not an unencrypted PEM private key.",
                {"settings": [GITHUB_PRIVATE_KEY.env_var]},
            ) from None
        yield app


@asynccontextmanager
async def _client(shared: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    if shared is not None:
        yield shared
        return
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as own:
        yield own


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _record(row: Mapping[str, Any]) -> Connection:
    return Connection(
        id=row["id"],
        name=row["name"],
        kind=row["kind"],
        status=row["status"],
        scope=Scope(repositories=list(storage.loads(row["repositories"]) or [])),
        created_at=iso(int(row["created_ms"])),
    )


async def owned(connection_id: str, agent_id: str) -> dict[str, Any]:
    row = await _row(connection_id)
    if row is None or row["agent_id"] != agent_id:
        raise ConnectionNotFound(f"No connection {connection_id!r} of yours.")
    return row


async def _row(connection_id: str) -> dict[str, Any] | None:
    return await ConnectionRow.select().where(ConnectionRow.id == connection_id).first()


async def _mark_revoked(connection_id: str) -> None:
    now = now_ms()
    await ConnectionRow.update(
        {ConnectionRow.status: "revoked", ConnectionRow.revoked_ms: now, ConnectionRow.updated_ms: now}
    ).where(
        ConnectionRow.id == connection_id,
        ConnectionRow.status != "revoked",
    )


async def create(call: RouteCall) -> RouteReply:
    asked: ConnectionRequest = call.body
    secret = secrets.token_urlsafe(32)
    connection_id = new_id("con")
    async with github(call.platform) as app:
        link = app.install_url(f"{connection_id}.{secret}")
    now = now_ms()
    await ConnectionRow.insert(
        ConnectionRow(
            id=connection_id,
            agent_id=call.agent_id,
            name=asked.name,
            kind=asked.kind,
            status="pending",
            state_hash=_hash(secret),
            link_expires_ms=now + LINK_LIFETIME_MS,
            link_used_ms=None,
            installation_id=None,
            repositories="[]",
            created_ms=now,
            updated_ms=now,
            revoked_ms=None,
        )
    )
    data = NewConnection(
        id=connection_id,
        name=asked.name,
        kind=asked.kind,
        status="pending",
        scope=Scope(repositories=[]),
        created_at=iso(now),
        link=link,
        link_expires_at=iso(now + LINK_LIFETIME_MS),
    )
    return RouteReply(201, NewConnectionAnswer(success=True, data=data))


async def listing(call: RouteCall) -> ConnectionList:
    found = (
        await ConnectionRow.select()
        .where(ConnectionRow.agent_id == call.agent_id)
        .order_by(
            ConnectionRow.created_ms,
            ConnectionRow.id,
            ascending=False,
        )
    )
    return ConnectionList(success=True, data=[_record(row) for row in found])


async def delete(call: RouteCall) -> ConnectionAnswer:
    row = await owned(call.params["connection_id"], call.agent_id)
    if row["status"] != "revoked":
        if row["installation_id"] is not None:
            try:
                async with github(call.platform) as app:
                    await app.revoke(int(row["installation_id"]))
            except ProviderUnavailable:
                raise ProviderDown("GitHub did not answer; the connection is unchanged, try again.") from None
            except ProviderError:
                raise ProviderFailed("GitHub refused to end the grant; the connection is unchanged.") from None
        await _mark_revoked(row["id"])
        row = await owned(row["id"], call.agent_id)
    return ConnectionAnswer(success=True, data=_record(row))


_REFUSED: dict[str, tuple[int, str, str]] = {
    "altered": (
        403,
        "Link not valid",
        "This link has been altered or was not issued by this service. Nothing was connected.",
    ),
    "used": (
        410,
        "Link already used",
        "This connection link has already been used; each link works once. Nothing more is needed from you.",
    ),
    "expired": (
        410,
        "Link expired",
        "This connection link has expired (links work for one hour). Nothing was connected; ask for a new link.",
    ),
    "revoked": (
        410,
        "Connection revoked",
        "This connection was revoked before it was completed. Nothing was connected.",
    ),
    "bad_request": (
        400,
        "Installation not recognised",
        "GitHub's answer did not name an installation of this service's app. Nothing was connected.",
    ),
    "no_code": (
        400,
        "Authorization missing",
        "GitHub's answer carried no authorization of your GitHub account, so the installation "
        "could not be confirmed as yours. Nothing was connected; open the link again and authorize the app when GitHub asks.",
    ),
    "code_refused": (
        403,
        "Authorization not confirmed",
        "GitHub did not confirm the authorization (it was wrong, expired or already used). "
        "Nothing was connected; open the link again.",
    ),
    "not_yours": (
        403,
        "Installation not yours",
        "The installation named is not one your GitHub account can reach. Nothing was connected.",
    ),
    "unconfigured": (
        503,
        "Connections unavailable",
        "Code-host connections are not configured on this service. Nothing was connected.",
    ),
    "unavailable": (
        503,
        "GitHub unavailable",
        "GitHub did not answer. Nothing was connected; open the link again in a few minutes.",
    ),
    "provider_error": (502, "GitHub refused", "GitHub refused this service's request. Nothing was connected."),
}


def _html(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n<meta name="robots" content="noindex">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'\">\n"
        f"<title>{escape(title)} · Tollway</title>\n"
        "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2.5rem auto;padding:0 1rem;color:#1d2330}</style>\n"
        f"</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _refused(reason: str) -> Page:
    status, title, sentence = _REFUSED[reason]
    return Page(
        _html(title, f'<h1>{escape(title)}</h1>\n<p id="reason" data-reason="{reason}">{escape(sentence)}</p>'),
        status=status,
        headers=NO_STORE,
    )


def _link_problem(row: Mapping[str, Any] | None, secret: str, now: int) -> str | None:
    if row is None or not hmac.compare_digest(str(row["state_hash"]), _hash(secret)):
        return "altered"
    if row["link_used_ms"] is not None:
        return "used"
    if row["status"] == "revoked":
        return "revoked"
    if row["status"] != "pending":
        return "used"
    if int(row["link_expires_ms"]) <= now:
        return "expired"
    return None


async def callback(call: RouteCall) -> Page:
    query = call.query
    connection_id, _, secret = str(query.get("state") or "").partition(".")
    row = await _row(connection_id) if connection_id and secret else None
    problem = _link_problem(row, secret, now_ms())
    if problem is not None:
        return _refused(problem)
    assert row is not None
    action = query.get("setup_action") or "install"
    if action == "request":
        body = (
            '<h1>Waiting for approval</h1>\n<p id="reason" data-reason="requested">The installation was requested; an owner of the '
            "account must approve it at GitHub. Nothing is connected yet.</p>"
        )
        return Page(_html("Waiting for approval", body), headers=NO_STORE)
    installation_id = str(query.get("installation_id") or "")
    if action not in ("install", "update") or not _INSTALLATION_ID.match(installation_id):
        return _refused("bad_request")
    code = str(query.get("code") or "")
    if not _CODE.match(code):
        return _refused("no_code")
    try:
        async with github(call.platform) as app:
            # The id on the callback is only a claim: the user's own token must list it.
            if int(installation_id) not in {found.id for found in await app.user_installations(code)}:
                return _refused("not_yours")
            repositories = await app.repositories(int(installation_id))
    except ProviderNotConfigured:
        return _refused("unconfigured")
    except AuthorizationRefused:
        return _refused("code_refused")
    except ProviderUnavailable:
        return _refused("unavailable")
    except ProviderError:
        return _refused("provider_error")
    now = now_ms()
    won = (
        await ConnectionRow.update(
            {
                ConnectionRow.status: "active",
                ConnectionRow.installation_id: int(installation_id),
                ConnectionRow.repositories: storage.dumps(repositories),
                ConnectionRow.link_used_ms: now,
                ConnectionRow.updated_ms: now,
            }
        )
        .where(
            ConnectionRow.id == row["id"],
            ConnectionRow.state_hash == row["state_hash"],
            ConnectionRow.status == "pending",
            ConnectionRow.link_used_ms.is_null(),
            ConnectionRow.link_expires_ms > now,
        )
        .returning(ConnectionRow.id)
    )
    if not won:
        again = await _row(row["id"])
        return _refused(_link_problem(again, secret, now) or "used")
    names = "".join(f"<li>{escape(name)}</li>" for name in repositories) or "<li>(none yet)</li>"
    body = (
        f'<h1>Connection active</h1>\n<p id="active">The connection <strong>{escape(row["name"])}</strong> is active. '
        f'You can close this page.</p>\n<p>Repositories it reaches:</p>\n<ul id="repositories">{names}</ul>'
    )
    return Page(_html("Connection active", body), headers=NO_STORE)


def _in_scope(row: Mapping[str, Any], repository: str) -> str | None:
    wanted = repository.strip().lower()
    return next((name for name in storage.loads(row["repositories"]) or [] if name.lower() == wanted), None)


async def _usable(agent_id: str, connection_id: str, repository: str) -> tuple[dict[str, Any], str]:
    """The caller's active connection and the repository's name as its scope spells it, or the refusal."""
    row = await owned(connection_id, agent_id)
    if row["status"] == "revoked":
        raise ConnectionRevoked(f"Connection {connection_id} is revoked.")
    if row["status"] != "active" or row["installation_id"] is None:
        raise ConnectionNotActive(
            f"Connection {connection_id} is not active yet: its approval at GitHub has not completed."
        )
    full_name = _in_scope(row, repository)
    if full_name is None:
        raise RepositoryOutOfScope(f"{repository} is not in the scope of connection {connection_id}.")
    return row, full_name


@asynccontextmanager
async def _refusals(row: Mapping[str, Any], full_name: str, permissions: Mapping[str, str]) -> AsyncIterator[None]:
    """GitHub's answers as the connection's refusals; an uninstalled app revokes the connection."""
    connection_id = row["id"]
    try:
        yield
    except InstallationGone:
        await _mark_revoked(connection_id)
        raise ConnectionRevoked(f"Connection {connection_id} is revoked: the app was uninstalled at GitHub.") from None
    except RepositoryNotInScope:
        wanted = "" if permissions == READ_CONTENTS else f" or does not grant {_named(permissions)} on it"
        raise RepositoryOutOfScope(
            f"The installation behind connection {connection_id} no longer reaches {full_name}{wanted}."
        ) from None
    except ProviderUnavailable:
        raise ProviderDown("GitHub did not answer; try again later.") from None
    except ProviderError as exc:
        raise ProviderFailed(f"GitHub refused this service's request: {exc}") from None


def _named(permissions: Mapping[str, str]) -> str:
    return ", ".join(f"{name.capitalize()}: {level}" for name, level in sorted(permissions.items()))


async def repository_token_for(
    agent_id: str,
    connection_id: str,
    repository: str,
    platform: Any,
    permissions: Mapping[str, str] = READ_CONTENTS,
) -> RepoToken:
    """A token for `repository` alone (read-only unless `permissions` says more, expiring within the hour) through the
    caller's active connection."""
    row, full_name = await _usable(agent_id, connection_id, repository)
    async with _refusals(row, full_name, permissions), github(platform) as app:
        return await app.repository_token(int(row["installation_id"]), full_name, permissions)


async def publish_pages_for(
    agent_id: str,
    connection_id: str,
    repository: str,
    files: Mapping[str, bytes],
    platform: Any,
    *,
    message: str,
    cname: str | None = None,
    branch: str = DEFAULT_BRANCH,
) -> PagesPublication:
    """Publishes `files` as the whole of `repository`'s Pages branch (see github_pages.publish_pages) with a token for that
    repository alone (Contents and Pages write) through the caller's active connection; the token is given up afterwards.

    The refusals of repository_token_for; ValueError for a file path, cname or branch that cannot be published."""
    site_files(files, cname)
    checked_branch(branch)
    row, full_name = await _usable(agent_id, connection_id, repository)
    async with _refusals(row, full_name, PAGES_WRITE), github(platform) as app:
        grant = await app.repository_token(int(row["installation_id"]), full_name, PAGES_WRITE)
        try:
            return await publish_pages(
                app.http, app.api_url, grant.token, full_name, files, branch=branch, message=message, cname=cname
            )
        finally:
            await app.revoke_token(grant.token)


PATH = "/v1/connections"
CONNECTION_ROUTES = (
    Route(
        method="POST",
        path=PATH,
        name="connection_create",
        title="Create a code-host connection",
        description="Starts a connection to a code host (`kind`: github). The answer holds a one-time `link` (one hour) to the app's "
        "installation page at GitHub; once approved there the connection is active for the repositories chosen. "
        "No key, password or token is ever accepted.",
        handle=create,
        auth="write",
        body_type=ConnectionRequest,
        answer_type=NewConnectionAnswer,
        status=201,
        tags=TAGS,
        mcp=True,
        statuses=(400, 401, 429, 503),
    ),
    Route(
        method="GET",
        path=PATH,
        name="connections_list",
        title="List your connections",
        description="Your code-host connections, newest first: status (pending, active, revoked) and the repositories each reaches.",
        handle=listing,
        auth="read",
        answer_type=ConnectionList,
        tags=TAGS,
        mcp=True,
        statuses=(401, 429),
    ),
    Route(
        method="GET",
        path=f"{PATH}/callback",
        name="connection_callback",
        title="Return from GitHub",
        description="Where GitHub sends the browser back after the app's installation and the user's authorization (the app's Callback "
        "URL): the one-time link's state activates its connection once (altered 403, used or expired 410), and only for an "
        "installation that the user whose authorization code comes back can reach (no code 400, a refused code or another "
        "account's installation 403).",
        handle=callback,
        auth="public",
        page=True,
        tags=TAGS,
        statuses=(400, 403, 410, 502, 503),
        query=(
            ("installation_id", "GitHub's installation id."),
            ("setup_action", "install, update or request."),
            ("code", "GitHub's one-time authorization code of the user who installed."),
            ("state", "The one-time link's state."),
        ),
    ),
    Route(
        method="DELETE",
        path=f"{PATH}/{{connection_id}}",
        name="connection_delete",
        title="Revoke a connection",
        description="Ends the grant at GitHub (the app's installation is removed) and marks the connection revoked.",
        handle=delete,
        auth="write",
        answer_type=ConnectionAnswer,
        tags=TAGS,
        mcp=True,
        statuses=(401, 404, 429, 502, 503),
    ),
)
