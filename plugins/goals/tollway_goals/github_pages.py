"""Publishing a static site to a repository's Pages branch through GitHub's Git Database and Pages REST APIs."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from .github_app import ProviderError, RepositoryNotInScope, send, split_repository

DEFAULT_BRANCH = "gh-pages"
FILE_MODE = "100644"
NOJEKYLL = ".nojekyll"
CNAME = "CNAME"
MAX_PATH = 1000
_HOST = re.compile(r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,62}$")
_BRANCH = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._/-]{0,199}$")


@dataclass(frozen=True)
class PagesPublication:
    """What a publication made: the site's address as GitHub reports it, the new commit and where it is."""

    url: str
    commit_sha: str
    branch: str
    repository: str


def blob_sha(content: bytes) -> str:
    """Git's object id of a blob holding `content`."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


def site_files(files: Mapping[str, bytes], cname: str | None = None) -> dict[str, bytes]:
    """The branch's whole content: `files` under checked paths, an empty `.nojekyll` and, with `cname`, a `CNAME` file.

    ValueError for a path that is not plain (absolute, empty, `.` or `..` segments, `.git`), a file that is also a
    folder, or a `cname` that is not a host name."""
    site: dict[str, bytes] = {}
    for raw, content in files.items():
        path = _checked_path(raw)
        if path in site:
            raise ValueError(f"the path {path!r} is given twice")
        site[path] = bytes(content)
    if cname is not None:
        host = cname.strip().lower().rstrip(".")
        if not _HOST.match(host):
            raise ValueError(f"cname must be a host name, got {cname!r}")
        site[CNAME] = f"{host}\n".encode()
    site.setdefault(NOJEKYLL, b"")
    folders = {path.rsplit("/", depth)[0] for path in site for depth in range(1, path.count("/") + 1)}
    clash = sorted(folders & set(site))
    if clash:
        raise ValueError(f"{clash[0]!r} cannot be both a file and a folder")
    return site


def checked_branch(branch: str) -> str:
    """`branch` when git and GitHub take it as a branch name; ValueError otherwise."""
    if not _BRANCH.match(branch) or ".." in branch or "//" in branch or branch.endswith((".lock", "/", ".")):
        raise ValueError(f"not a usable branch name: {branch!r}")
    return branch


def _checked_path(path: str) -> str:
    parts = path.split("/") if isinstance(path, str) else []
    if not parts or len(path) > MAX_PATH or any(part in ("", ".", "..") or "\0" in part for part in parts):
        raise ValueError(f"a site file's path must be plain (no leading /, empty, . or .. segments), got {path!r}")
    if parts[0].lower() == ".git":
        raise ValueError(f"a site file cannot be under .git, got {path!r}")
    return path


async def publish_pages(
    http: httpx.AsyncClient,
    api_url: str,
    token: str,
    repository: str,
    files: Mapping[str, bytes],
    *,
    branch: str = DEFAULT_BRANCH,
    message: str,
    cname: str | None = None,
) -> PagesPublication:
    """Makes `branch` of `repository` hold exactly `files` (plus `.nojekyll`, and `CNAME` for `cname`) as one new commit on
    top of the branch's last one, then has GitHub Pages serve that branch; the token needs Contents and Pages write.

    RepositoryNotInScope when the token does not reach the repository, ProviderAuthError when it lacks a permission,
    ProviderUnavailable when GitHub does not answer, ProviderError otherwise (the branch moved meanwhile, an empty
    repository); no message holds the token."""
    owner, name = split_repository(repository)
    checked_branch(branch)
    site = site_files(files, cname)
    repo = _Repository(http, api_url, token, f"{owner}/{name}")
    head = await repo.head(branch)
    known = await repo.blob_shas(head) if head is not None else set()
    entries = []
    for path, content in sorted(site.items()):
        sha = blob_sha(content)
        if sha not in known:
            made = await repo.call(
                "POST", "/git/blobs", 201, {"content": base64.b64encode(content).decode(), "encoding": "base64"}
            )
            if made.get("sha") != sha:
                raise ProviderError(f"GitHub stored {path} under an unexpected id (POST /repos/{repo.name}/git/blobs)")
            known.add(sha)
        entries.append({"path": path, "mode": FILE_MODE, "type": "blob", "sha": sha})
    tree = await repo.call("POST", "/git/trees", 201, {"tree": entries})
    parents = [head] if head is not None else []
    commit = await repo.call("POST", "/git/commits", 201, {"message": message, "tree": tree["sha"], "parents": parents})
    ref = quote(branch, safe="/")
    if head is not None:
        await repo.call("PATCH", f"/git/refs/heads/{ref}", 200, {"sha": commit["sha"], "force": False})
    else:
        await repo.call("POST", "/git/refs", 201, {"ref": f"refs/heads/{branch}", "sha": commit["sha"]})
    served = await repo.pages_site(branch)
    return PagesPublication(str(served["html_url"]), str(commit["sha"]), branch, repo.name)


class _Repository:
    """One repository's API under one token: each call's refusal named by its route, never by the token."""

    def __init__(self, http: httpx.AsyncClient, api_url: str, token: str, name: str) -> None:
        self._http, self._api_url, self._token, self.name = http, api_url, token, name
        self._base = f"/repos/{quote(name, safe='/')}"

    async def call(
        self, method: str, path: str, expected: int, body: Any = None, *, missing_ok: bool = False, **kwargs: Any
    ) -> Any:
        route = f"{method} {self._base}{path}"
        if body is not None:
            kwargs["json"] = body
        response = await send(self._http, self._api_url, method, f"{self._base}{path}", self._token, **kwargs)
        status = response.status_code
        if status == 404 and missing_ok:
            return None
        if status == 404:
            raise RepositoryNotInScope(f"{self.name} is not reachable with this token ({route}: 404)")
        if status == 409 and "Git Repository is empty" in response.text:
            raise ProviderError(
                f"{self.name} is empty: GitHub needs a first commit on it before publishing ({route}: 409)"
            )
        if status == 422 and method == "PATCH":
            raise ProviderError(f"the branch moved while publishing; publish again ({route}: 422)")
        if status != expected:
            raise ProviderError(f"unexpected answer from GitHub ({route}: {status})")
        return response.json() if response.content else None

    async def head(self, branch: str) -> str | None:
        """The branch's last commit, None while the branch does not exist."""
        found = await self.call("GET", f"/git/ref/heads/{quote(branch, safe='/')}", 200, missing_ok=True)
        if found is None:
            return None
        target = found.get("object") or {}
        if target.get("type") != "commit":
            raise ProviderError(f"refs/heads/{branch} of {self.name} does not point at a commit")
        return str(target["sha"])

    async def blob_shas(self, commit_sha: str) -> set[str]:
        """The blobs the commit's tree already holds: those are not uploaded again."""
        tree = await self.call("GET", f"/git/trees/{commit_sha}", 200, missing_ok=True, params={"recursive": "1"})
        entries = (tree or {}).get("tree") or []
        return {str(entry["sha"]) for entry in entries if entry.get("type") == "blob"}

    async def pages_site(self, branch: str) -> dict[str, Any]:
        """The Pages site, created (or pointed at `branch`) when it does not serve `branch` from its root yet."""
        source = {"branch": branch, "path": "/"}
        site = await self.call("GET", "/pages", 200, missing_ok=True)
        if site is None:
            made = await self._create_site(source)
            if made is not None:
                return made
            site = await self.call("GET", "/pages", 200)
        if site.get("source") != source:
            await self.call("PUT", "/pages", 204, {"source": source})
            site = await self.call("GET", "/pages", 200)
        return site

    async def _create_site(self, source: dict[str, str]) -> dict[str, Any] | None:
        route = f"POST {self._base}/pages"
        response = await send(
            self._http, self._api_url, "POST", f"{self._base}/pages", self._token, json={"source": source}
        )
        if response.status_code == 409:  # made meanwhile by another publication
            return None
        if response.status_code != 201:
            raise ProviderError(f"unexpected answer from GitHub ({route}: {response.status_code})")
        return response.json()
