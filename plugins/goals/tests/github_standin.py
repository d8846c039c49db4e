"""A local stand-in for GitHub's App REST API (installations, installation tokens, revocation, repository contents, the Git
Database and Pages endpoints over a real in-memory git store) and its OAuth side (a user's authorization code exchanged for a user access token, the installations that user reaches) for tests."""

from __future__ import annotations

import base64
import json
import re
import secrets
import string
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from git_store import Commit, GitInvalid, GitStore

TOKEN_LIFETIME_S = 3600
# A user access token lives eight hours, its authorization code ten minutes (once).
USER_TOKEN_LIFETIME_S = 28_800
CODE_LIFETIME_S = 600
CLIENT_ID = "Iv23liStandinClient01"
CLIENT_SECRET = "standin-client-secret-0123456789abcdef0123"
# GitHub refuses an app JWT whose expiry is more than ten minutes ahead.
MAX_JWT_LIFETIME_S = 600
INSTALLATION_PATH = re.compile(r"^/app/installations/(\d+)$")
ACCESS_TOKENS_PATH = re.compile(r"^/app/installations/(\d+)/access_tokens$")
CONTENTS_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/contents/(.+)$")
APP_TOKEN_PATH = re.compile(r"^/applications/([^/]+)/token$")
REPO_API_PATH = re.compile(r"^/repos/([^/]+)/([^/]+)/(git/.+|pages)$")
BOT = {"name": "tollway-standin[bot]", "email": "1+tollway-standin[bot]@users.noreply.github.com"}
NOT_ACCESSIBLE = {"message": "Resource not accessible by integration"}
OAUTH_ERRORS = {
    "bad_verification_code": "The code passed is incorrect or expired.",
    "incorrect_client_credentials": "The client_id and/or client_secret passed are incorrect.",
}
RAW_MEDIA_TYPE = "application/vnd.github.raw+json"
_BASE62 = string.ascii_letters + string.digits


def rsa_keypair() -> tuple[str, str]:
    """A fresh RSA key pair as (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


@dataclass
class FakeInstallation:
    id: int
    account: str
    repositories: list[str]
    permissions: dict[str, str]
    repository_selection: str = "selected"
    # The GitHub users with access to this installation (/user/installations lists it for them).
    members: frozenset[str] = frozenset()


@dataclass(frozen=True)
class IssuedToken:
    installation_id: int
    repositories: tuple[str, ...]
    permissions: dict[str, str]
    expires_at: float


@dataclass(frozen=True)
class UserGrant:
    """A user's authorization code or user access token: whose, and until when."""

    login: str
    expires_at: float


@dataclass(frozen=True)
class Raw:
    """A non-JSON answer body (a file's raw content)."""

    body: bytes
    content_type: str = RAW_MEDIA_TYPE


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class GitHubStandin:
    app_id: str
    public_key_pem: str
    url: str = ""
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    installations: dict[int, FakeInstallation] = field(default_factory=dict)
    tokens: dict[str, IssuedToken] = field(default_factory=dict)
    requests: list[LoggedRequest] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    codes: dict[str, UserGrant] = field(default_factory=dict)
    user_tokens: dict[str, UserGrant] = field(default_factory=dict)
    git: dict[str, GitStore] = field(default_factory=dict)
    empty: set[str] = field(default_factory=set)
    sites: dict[str, dict[str, Any]] = field(default_factory=dict)
    outage: int | None = None
    # (method, path prefix) -> status answered instead, to break one endpoint.
    failing: dict[tuple[str, str], int] = field(default_factory=dict)
    delay_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(
        self,
        installation_id: int,
        account: str,
        repositories: list[str],
        permissions: dict[str, str] | None = None,
        members: list[str] | None = None,
    ) -> FakeInstallation:
        """`account` installs the app; `members` (default: the account itself) are the users who reach the installation."""
        grant = permissions or {"contents": "read", "metadata": "read"}
        who = frozenset(login.lower() for login in (members if members is not None else [account]))
        installation = FakeInstallation(installation_id, account, list(repositories), dict(grant), members=who)
        with self.lock:
            self.installations[installation_id] = installation
        return installation

    def authorize(self, login: str, *, expires_in_s: float = CODE_LIFETIME_S) -> str:
        """The code GitHub puts on the callback once `login` has authorized the app in the browser (single use)."""
        code = secrets.token_hex(10)
        with self.lock:
            self.codes[code] = UserGrant(login.lower(), time.time() + expires_in_s)
        return code

    def user_token_is_live(self, token: str) -> bool:
        with self.lock:
            grant = self.user_tokens.get(token)
            return grant is not None and grant.expires_at > time.time()

    def put_file(self, repo_full_name: str, path: str, text: str) -> None:
        """A file of `owner/name` that the contents API serves to a token covering that repository."""
        with self.lock:
            self.files.setdefault(repo_full_name.lower(), {})[path.strip("/")] = text

    def empty_repository(self, repo_full_name: str) -> None:
        """`owner/name` has no commit at all (GitHub's Git Database API answers 409 for it)."""
        with self.lock:
            self.empty.add(repo_full_name.lower())
            self.git.pop(repo_full_name.lower(), None)

    def files_at(self, repo_full_name: str, branch: str) -> dict[str, bytes]:
        """Every file of `branch` of `owner/name` by path, as its last commit holds them."""
        with self.lock:
            store = self._store(repo_full_name)
            return store.files(store.refs[f"refs/heads/{branch}"])

    def commit_at(self, repo_full_name: str, branch: str) -> tuple[str, Commit]:
        with self.lock:
            store = self._store(repo_full_name)
            sha = store.refs[f"refs/heads/{branch}"]
            return sha, store.commits[sha]

    def site(self, repo_full_name: str) -> dict[str, Any] | None:
        with self.lock:
            return self.sites.get(repo_full_name.lower())

    def _store(self, full_name: str) -> GitStore:
        """The repository's git store; one never given otherwise starts with a README on main."""
        key = full_name.lower()
        if key not in self.git:
            store = self.git[key] = GitStore()
            if key not in self.empty:
                tree = store.tree(
                    [{"path": "README.md", "mode": "100644", "type": "blob", "sha": store.blob(b"# repo\n")}]
                )
                store.refs["refs/heads/main"] = store.commit(tree, [], "Initial commit", *_signed(BOT))
        return self.git[key]

    def uninstall(self, installation_id: int) -> None:
        """What GitHub does when the account removes the app: the installation and its tokens go."""
        with self.lock:
            self._delete_installation(installation_id)

    def calls(self, method: str, path_prefix: str = "/") -> list[LoggedRequest]:
        with self.lock:
            return [r for r in self.requests if r.method == method and r.path.startswith(path_prefix)]

    def token_is_live(self, token: str) -> bool:
        with self.lock:
            return self._live(token) is not None

    def _live(self, token: str) -> IssuedToken | None:
        issued = self.tokens.get(token)
        return issued if issued is not None and issued.expires_at > time.time() else None

    def handle(self, method: str, target: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        split = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        with self.lock:
            self.requests.append(LoggedRequest(method, split.path, query, headers, body))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.outage:
            return self.outage, {"message": "Service unavailable"}
        for (failing_method, prefix), status in self.failing.items():
            if method == failing_method and split.path.startswith(prefix):
                return status, {"message": "Server Error"}
        if split.path == "/login/oauth/access_token" and method == "POST":
            return self._exchange_code({**query, **(body or {})}, headers)
        if split.path == "/user/installations" and method == "GET":
            return self._user_installations(query, headers)
        if (found := APP_TOKEN_PATH.match(split.path)) and method == "DELETE":
            return self._delete_user_token(unquote(found[1]), body or {}, headers)
        if split.path.startswith("/app/"):
            return self._app_route(method, split.path, headers, body)
        if split.path.startswith("/installation/"):
            return self._installation_route(method, split.path, query, headers)
        if (found := CONTENTS_PATH.match(split.path)) and method == "GET":
            return self._contents(f"{found[1]}/{found[2]}", unquote(found[3]), headers)
        if found := REPO_API_PATH.match(split.path):
            return self._repository_api(method, found[1], found[2], unquote(found[3]), query, headers, body)
        return 404, {"message": "Not Found"}

    def _reached(self, full_name: str, headers: dict[str, str]) -> tuple[int, Any] | tuple[IssuedToken, str]:
        """The live token and the repository's name as installed, or GitHub's refusal: 401 without a live token, 404 (as
        GitHub hides what a token cannot see) for a repository it does not cover."""
        issued = self._live(_presented_token(headers))
        if issued is None:
            return 401, {"message": "Bad credentials"}
        installation = self.installations.get(issued.installation_id)
        names = (
            {f"{installation.account}/{name}".lower(): f"{installation.account}/{name}" for name in issued.repositories}
            if installation
            else {}
        )
        if full_name.lower() not in names:
            return 404, {"message": "Not Found"}
        return issued, names[full_name.lower()]

    def _repository_api(
        self, method: str, owner: str, repo: str, rest: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> tuple[int, Any]:
        """The Git Database (/git/...) and Pages (/pages) endpoints: reads need the area's read permission, writes its write."""
        with self.lock:
            reached = self._reached(f"{owner}/{repo}", headers)
            if isinstance(reached[0], int):
                return reached  # type: ignore[return-value]
            issued, full_name = reached
            area = "pages" if rest == "pages" else "contents"
            if issued.permissions.get(area) not in (("read", "write") if method == "GET" else ("write",)):
                return 403, NOT_ACCESSIBLE
            if rest == "pages":
                return self._pages(method, full_name, body or {})
            if full_name.lower() in self.empty:
                return 409, {"message": "Git Repository is empty."}
            try:
                return self._git(method, full_name, rest, query, body or {})
            except GitInvalid as exc:
                return 422, {"message": str(exc)}

    def _git(
        self, method: str, full_name: str, rest: str, query: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, Any]:
        store, base = self._store(full_name), f"{self.url}/repos/{full_name}/git"
        if rest.startswith("git/ref/heads/") and method == "GET":
            ref = "refs/" + rest.removeprefix("git/ref/")
            return (
                (200, self._ref_body(base, ref, store.refs[ref]))
                if ref in store.refs
                else (404, {"message": "Not Found"})
            )
        if rest == "git/blobs" and method == "POST":
            try:
                content = (
                    base64.b64decode(body["content"], validate=True)
                    if body.get("encoding") == "base64"
                    else str(body["content"]).encode()
                )
            except (KeyError, ValueError):
                raise GitInvalid("content is not valid for its encoding") from None
            sha = store.blob(content)
            return 201, {"sha": sha, "url": f"{base}/blobs/{sha}"}
        if rest.startswith("git/trees/") and method == "GET":
            return self._tree_body(store, base, rest.removeprefix("git/trees/"), "recursive" in query)
        if rest == "git/trees" and method == "POST":
            if "base_tree" in body:
                raise GitInvalid("base_tree is not supported by the stand-in")
            sha = store.tree(list(body.get("tree") or []))
            return 201, self._tree_body(store, base, sha, False)[1]
        if rest == "git/commits" and method == "POST":
            author = _signed(body.get("author") or BOT)
            sha = store.commit(
                str(body.get("tree")), list(body.get("parents") or []), str(body.get("message")), *author
            )
            return 201, self._commit_body(store, base, sha)
        if rest == "git/refs" and method == "POST":
            ref, sha = str(body.get("ref") or ""), str(body.get("sha") or "")
            if not ref.startswith("refs/") or ref.count("/") < 2:
                raise GitInvalid("Reference name must start with 'refs/' and have at least two slashes.")
            if ref in store.refs:
                raise GitInvalid("Reference already exists")
            if store.kind(sha) is None:
                raise GitInvalid("Object does not exist")
            store.refs[ref] = sha
            return 201, self._ref_body(base, ref, sha)
        if rest.startswith("git/refs/heads/") and method == "PATCH":
            ref, sha = "refs/" + rest.removeprefix("git/refs/"), str(body.get("sha") or "")
            if ref not in store.refs:
                raise GitInvalid("Reference does not exist")
            if store.kind(sha) != "commit":
                raise GitInvalid("Object does not exist")
            if not body.get("force") and not store.descends(sha, store.refs[ref]):
                raise GitInvalid("Update is not a fast forward")
            store.refs[ref] = sha
            return 200, self._ref_body(base, ref, sha)
        return 404, {"message": "Not Found"}

    @staticmethod
    def _ref_body(base: str, ref: str, sha: str) -> dict[str, Any]:
        return {
            "ref": ref,
            "node_id": "REF_" + sha[:12],
            "url": f"{base}/{ref}",
            "object": {"sha": sha, "type": "commit", "url": f"{base}/commits/{sha}"},
        }

    @staticmethod
    def _tree_body(store: GitStore, base: str, tree_ish: str, recursive: bool) -> tuple[int, Any]:
        """GET /git/trees/{tree_sha}: a tree, or a commit's or branch's tree (GitHub takes any tree-ish)."""
        sha = store.refs.get(f"refs/heads/{tree_ish}", tree_ish)
        sha = store.commits[sha].tree if store.kind(sha) == "commit" else sha
        if store.kind(sha) != "tree":
            return 404, {"message": "Not Found"}
        rows = store.walk(sha) if recursive else [(name, mode, kind, s) for mode, kind, s, name in store.trees[sha]]
        entries = []
        for path, mode, kind, entry_sha in rows:
            entry: dict[str, Any] = {"path": path, "mode": mode, "type": kind, "sha": entry_sha}
            if kind == "blob":
                entry["size"] = len(store.blob_content(entry_sha))
            entry["url"] = f"{base}/{kind}s/{entry_sha}"
            entries.append(entry)
        return 200, {"sha": sha, "url": f"{base}/trees/{sha}", "tree": entries, "truncated": False}

    def _commit_body(self, store: GitStore, base: str, sha: str) -> dict[str, Any]:
        commit = store.commits[sha]
        web = f"{self.url}/{base.split('/repos/', 1)[1].removesuffix('/git')}/commit"
        person = lambda who: {"name": who["name"], "email": who["email"], "date": who["date"]}  # noqa: E731
        return {
            "sha": sha,
            "node_id": "C_" + sha[:12],
            "url": f"{base}/commits/{sha}",
            "html_url": f"{web}/{sha}",
            "author": person(commit.author),
            "committer": person(commit.committer),
            "message": commit.message,
            "tree": {"sha": commit.tree, "url": f"{base}/trees/{commit.tree}"},
            "parents": [{"sha": p, "url": f"{base}/commits/{p}", "html_url": f"{web}/{p}"} for p in commit.parents],
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        }

    def _pages(self, method: str, full_name: str, body: dict[str, Any]) -> tuple[int, Any]:
        """GET, POST (create: 201, 409 when there is one) and PUT (update: 204) /repos/{owner}/{repo}/pages."""
        key = full_name.lower()
        site = self.sites.get(key)
        if method == "GET":
            return (200, self._site_body(full_name, site)) if site else (404, {"message": "Not Found"})
        if method not in ("POST", "PUT"):
            return 404, {"message": "Not Found"}
        if method == "POST" and site is not None:
            return 409, {"message": "GitHub Pages is already enabled."}
        if method == "PUT" and site is None:
            return 404, {"message": "Not Found"}
        source = body.get("source")
        if source is not None:
            if not isinstance(source, dict) or source.get("path", "/") not in ("/", "/docs"):
                return 422, {"message": "Invalid request.", "errors": ["source.path must be / or /docs"]}
            if f"refs/heads/{source.get('branch')}" not in self._store(full_name).refs:
                return 422, {"message": "The selected branch does not exist."}
        elif method == "POST":
            return 422, {"message": "Invalid request.", "errors": ["source is required"]}
        merged = {
            **(site or {}),
            **({"source": {"branch": source["branch"], "path": source.get("path", "/")}} if source else {}),
        }
        if "cname" in body:
            merged["cname"] = body["cname"]
        self.sites[key] = merged
        return (201, self._site_body(full_name, merged)) if method == "POST" else (204, None)

    def _site_body(self, full_name: str, site: dict[str, Any]) -> dict[str, Any]:
        """The site as GitHub reports it once built: a CNAME file on the source branch gives it its custom domain."""
        owner, name = full_name.split("/")
        store = self._store(full_name)
        head = store.refs.get(f"refs/heads/{site['source']['branch']}")
        folder = site["source"]["path"].strip("/")
        cname_file = store.files(head).get(f"{folder}/CNAME" if folder else "CNAME") if head else None
        cname = cname_file.decode().strip() if cname_file else site.get("cname")
        return {
            "url": f"{self.url}/repos/{full_name}/pages",
            "status": "built",
            "cname": cname,
            "custom_404": False,
            "html_url": f"https://{cname}/" if cname else f"https://{owner.lower()}.github.io/{name}/",
            "source": dict(site["source"]),
            "public": True,
            "https_enforced": True,
            "build_type": "legacy",
        }

    def _app_route(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if not self._jwt_ok(headers):
            return 401, {"message": "A JSON web token could not be decoded"}
        with self.lock:
            if (found := INSTALLATION_PATH.match(path)) and method == "GET":
                return self._show_installation(int(found[1]))
            if found and method == "DELETE":
                return self._delete_installation(int(found[1]))
            if (found := ACCESS_TOKENS_PATH.match(path)) and method == "POST":
                return self._issue_token(int(found[1]), body or {})
        return 404, {"message": "Not Found"}

    def _installation_route(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, Any]:
        token = _presented_token(headers)
        with self.lock:
            issued = self._live(token)
            if issued is None:
                return 401, {"message": "Bad credentials"}
            if path == "/installation/repositories" and method == "GET":
                return self._list_repositories(issued, query)
            if path == "/installation/token" and method == "DELETE":
                del self.tokens[token]
                return 204, None
        return 404, {"message": "Not Found"}

    def _contents(self, full_name: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
        """GET /repos/{owner}/{repo}/contents/{path}: 401 without a live token, 404 (as GitHub hides
        what a token cannot see) for a repository it does not cover, 403 without contents permission."""
        with self.lock:
            reached = self._reached(full_name, headers)
            if isinstance(reached[0], int):
                return reached  # type: ignore[return-value]
            issued, _ = reached
            if issued.permissions.get("contents") not in ("read", "write"):
                return 403, NOT_ACCESSIBLE
            text = self.files.get(full_name.lower(), {}).get(path.strip("/"))
        if text is None:
            return 404, {"message": "Not Found"}
        if "application/vnd.github.raw" in headers.get("accept", ""):
            return 200, Raw(text.encode())
        data = text.encode()
        return 200, {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": base64.b64encode(data).decode(),
        }

    def _exchange_code(self, form: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        """POST /login/oauth/access_token: GitHub answers 200 even when it refuses, with an `error` field."""
        with self.lock:
            grant = self.codes.pop(str(form.get("code") or ""), None)
            if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
                error = "incorrect_client_credentials"
            elif grant is None or grant.expires_at <= time.time():
                error = "bad_verification_code"
            else:
                error = None
                token = "ghu_" + "".join(secrets.choice(_BASE62) for _ in range(36))
                self.user_tokens[token] = UserGrant(grant.login, time.time() + USER_TOKEN_LIFETIME_S)
        if error is not None:
            answer: dict[str, Any] = {
                "error": error,
                "error_description": OAUTH_ERRORS[error],
                "error_uri": f"https://docs.github.com/apps/troubleshooting#{error.replace('_', '-')}",
            }
        else:
            refresh = "ghr_" + "".join(secrets.choice(_BASE62) for _ in range(76))
            answer = {
                "access_token": token,
                "expires_in": USER_TOKEN_LIFETIME_S,
                "refresh_token": refresh,
                "refresh_token_expires_in": 15_897_600,
                "scope": "",
                "token_type": "bearer",
            }
        if "application/json" in headers.get("accept", ""):
            return 200, answer
        return 200, Raw(urlencode(answer).encode(), "application/x-www-form-urlencoded; charset=utf-8")

    def _user_installations(self, query: dict[str, str], headers: dict[str, str]) -> tuple[int, Any]:
        """GET /user/installations: the app's installations the user access token's user reaches, paged."""
        token = _presented_token(headers)
        with self.lock:
            grant = self.user_tokens.get(token)
            if grant is None or grant.expires_at <= time.time():
                if self._live(token) is not None:
                    return 403, {
                        "message": "You must authenticate with an access token authorized to a GitHub App in order to list installations"
                    }
                return 401, {"message": "Bad credentials"}
            reached = [i for _, i in sorted(self.installations.items()) if grant.login in i.members]
        per_page = min(int(query.get("per_page", 30)), 100)
        page = max(int(query.get("page", 1)), 1)
        shown = reached[(page - 1) * per_page : page * per_page]
        return 200, {"total_count": len(reached), "installations": [self._installation_body(i) for i in shown]}

    def _delete_user_token(self, client_id: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        """DELETE /applications/{client_id}/token: the app (Basic client_id:client_secret) gives up a user access token."""
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if client_id != self.client_id or headers.get("authorization", "") != f"Basic {expected}":
            return 404, {"message": "Not Found"}
        with self.lock:
            if self.user_tokens.pop(str(body.get("access_token") or ""), None) is None:
                return 404, {"message": "Not Found"}
        return 204, None

    def _jwt_ok(self, headers: dict[str, str]) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        try:
            claims = jwt.decode(
                value,
                self.public_key_pem,
                algorithms=["RS256"],
                issuer=self.app_id,
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.InvalidTokenError:
            return False
        return claims["exp"] - time.time() <= MAX_JWT_LIFETIME_S

    def _show_installation(self, installation_id: int) -> tuple[int, Any]:
        installation = self.installations.get(installation_id)
        if installation is None:
            return 404, {"message": "Not Found"}
        return 200, self._installation_body(installation)

    def _installation_body(self, installation: FakeInstallation) -> dict[str, Any]:
        return {
            "id": installation.id,
            "account": {"login": installation.account, "type": "Organization"},
            "repository_selection": installation.repository_selection,
            "app_id": int(self.app_id),
            "target_type": "Organization",
            "permissions": installation.permissions,
        }

    def _delete_installation(self, installation_id: int) -> tuple[int, Any]:
        if installation_id not in self.installations:
            return 404, {"message": "Not Found"}
        del self.installations[installation_id]
        self.tokens = {t: i for t, i in self.tokens.items() if i.installation_id != installation_id}
        return 204, None

    def _issue_token(self, installation_id: int, body: dict[str, Any]) -> tuple[int, Any]:
        installation = self.installations.get(installation_id)
        if installation is None:
            return 404, {"message": "Not Found"}
        wanted = body.get("repositories")
        permissions = body.get("permissions") or installation.permissions
        if wanted is not None and not set(wanted) <= set(installation.repositories):
            return 422, {"message": "A requested repository is not accessible to this installation."}
        if any(installation.permissions.get(k) not in _covering(v) for k, v in permissions.items()):
            return 422, {"message": "The permissions requested are not granted to this installation."}
        covered = tuple(wanted if wanted is not None else installation.repositories)
        token = "ghs_" + "".join(secrets.choice(_BASE62) for _ in range(36))
        expires_at = time.time() + TOKEN_LIFETIME_S
        self.tokens[token] = IssuedToken(installation_id, covered, dict(permissions), expires_at)
        self.issued.append(token)
        answer = {
            "token": token,
            "expires_at": datetime.fromtimestamp(int(expires_at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": permissions,
            "repository_selection": "selected" if wanted is not None else installation.repository_selection,
        }
        if wanted is not None:
            answer["repositories"] = [_repository(installation, name) for name in covered]
        return 201, answer

    def _list_repositories(self, issued: IssuedToken, query: dict[str, str]) -> tuple[int, Any]:
        installation = self.installations[issued.installation_id]
        per_page = min(int(query.get("per_page", 30)), 100)
        page = max(int(query.get("page", 1)), 1)
        names = issued.repositories[(page - 1) * per_page : page * per_page]
        return 200, {
            "total_count": len(issued.repositories),
            "repository_selection": installation.repository_selection,
            "repositories": [_repository(installation, name) for name in names],
        }


def _signed(person: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Author and committer as the store keeps them: name, email, the time as git and as GitHub write it."""
    now = int(time.time())
    who = {
        "name": person["name"],
        "email": person["email"],
        "unix": str(now),
        "date": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return who, dict(who)


def _covering(level: str) -> set[str]:
    return {"read", "write"} if level == "read" else {level}


def _repository(installation: FakeInstallation, name: str) -> dict[str, Any]:
    index = installation.repositories.index(name)
    full_name = f"{installation.account}/{name}"
    return {"id": installation.id * 100_000 + index, "name": name, "full_name": full_name, "private": True}


def _presented_token(headers: dict[str, str]) -> str:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value if scheme.lower() in ("token", "bearer") else ""


def _handler(standin: GitHubStandin) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            form = "application/x-www-form-urlencoded" in self.headers.get("Content-Type", "")
            body = ({k: v[-1] for k, v in parse_qs(raw.decode()).items()} if form else json.loads(raw)) if raw else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, answer = standin.handle(self.command, self.path, headers, body)
            if isinstance(answer, Raw):
                payload, content_type = answer.body, answer.content_type
            else:
                payload, content_type = (
                    (b"" if answer is None else json.dumps(answer).encode()),
                    "application/json; charset=utf-8",
                )
            self.send_response(status)
            if payload:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def github_standin(app_id: int | str, public_key_pem: str) -> Iterator[GitHubStandin]:
    """Serves a GitHubStandin (GitHub's API and its web OAuth endpoint) on 127.0.0.1 at a free port for the duration of the block."""
    standin = GitHubStandin(str(app_id), public_key_pem)
    server = _Server(("127.0.0.1", 0), _handler(standin))
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), name="github-standin", daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
