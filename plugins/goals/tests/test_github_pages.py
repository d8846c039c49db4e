"""Publishing a site to a repository's Pages branch: the client against the GitHub stand-in's git store and Pages
endpoints, and through an activated connection on SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from github_standin import GitHubStandin, github_standin
from goal_support import goals_kernel
from test_connections import connected, create, github_env
from test_github_app import make_app

from tollway.testing import credits_session, http_client
from tollway_goals.connections import (
    PAGES_WRITE,
    ConnectionNotActive,
    ConnectionNotFound,
    ConnectionRefusal,
    ConnectionRevoked,
    PagesPublication,
    ProviderDown,
    RepositoryOutOfScope,
    publish_pages_for,
)
from tollway_goals.github_app import (
    READ_CONTENTS,
    GitHubApp,
    ProviderAuthError,
    ProviderError,
    ProviderUnavailable,
    RepositoryNotInScope,
)
from tollway_goals.github_pages import blob_sha, publish_pages

APP_ID = 515151
INSTALLATION = 41
INSTALLER = "alice"
WRITE = {"contents": "write", "pages": "write", "metadata": "read"}
SITE = {"index.html": b"<h1>Hello</h1>\n", "css/site.css": b"body{margin:0}\n", "about/index.html": b"<p>About</p>"}


@pytest.fixture
def standin(keys: tuple[str, str]) -> Iterator[GitHubStandin]:
    with github_standin(APP_ID, keys[1]) as server:
        server.install(INSTALLATION, "acme", ["site", "api"], WRITE, members=[INSTALLER])
        yield server


@pytest.fixture
def app(http: httpx.AsyncClient, standin: GitHubStandin, keys: tuple[str, str]) -> GitHubApp:
    return make_app(http, standin.url, keys[0], app_id=APP_ID)


async def publish(
    app: GitHubApp, repository: str = "acme/site", files: dict[str, bytes] = SITE, **options: Any
) -> PagesPublication:
    grant = await app.repository_token(INSTALLATION, repository, options.pop("permissions", PAGES_WRITE))
    options.setdefault("message", "Publish the site")
    return await publish_pages(app.http, app.api_url, grant.token, options.pop("on", repository), files, **options)


async def test_a_first_publication_creates_the_branch_with_exactly_the_site_and_turns_pages_on(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    published = await publish(app, cname="www.Example.org")
    sha, commit = standin.commit_at("acme/site", "gh-pages")
    assert published == PagesPublication("https://www.example.org/", sha, "gh-pages", "acme/site")
    assert standin.files_at("acme/site", "gh-pages") == {**SITE, "CNAME": b"www.example.org\n", ".nojekyll": b""}
    assert commit.parents == () and commit.message == "Publish the site"
    assert standin.files_at("acme/site", "main") == {"README.md": b"# repo\n"}
    assert standin.site("acme/site")["source"] == {"branch": "gh-pages", "path": "/"}
    [created] = standin.calls("POST", "/repos/acme/site/pages")
    assert created.body == {"source": {"branch": "gh-pages", "path": "/"}}
    [ref] = standin.calls("POST", "/repos/acme/site/git/refs")
    assert ref.body == {"ref": "refs/heads/gh-pages", "sha": sha}
    [tree] = standin.calls("POST", "/repos/acme/site/git/trees")
    assert "base_tree" not in tree.body and all(e["mode"] == "100644" for e in tree.body["tree"])
    blobs = standin.calls("POST", "/repos/acme/site/git/blobs")
    assert len(blobs) == 5 and {b.body["encoding"] for b in blobs} == {"base64"}
    for request in standin.calls("POST", "/repos/"):
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["x-github-api-version"] == "2022-11-28"
        assert request.headers["authorization"].startswith("Bearer ghs_")
    plain = await publish(app, repository="acme/api", files={"index.html": b"x"}, branch="site")
    assert plain.url == "https://acme.github.io/api/" and plain.branch == "site"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_the_standins_object_ids_are_gits(app: GitHubApp, standin: GitHubStandin, tmp_path: Path) -> None:
    await publish(app)
    _sha, commit = standin.commit_at("acme/site", "gh-pages")
    for path, content in standin.files_at("acme/site", "gh-pages").items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    git = ["git", "-C", str(tmp_path), "-c", "core.autocrlf=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    written = subprocess.run([*git, "write-tree"], check=True, capture_output=True, text=True).stdout.strip()
    assert written == commit.tree
    assert blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


async def test_a_second_publication_is_a_child_commit_that_drops_removed_files_and_uploads_only_new_content(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    first = await publish(app, files={"index.html": b"v1", "old.html": b"gone soon"})
    second = await publish(app, files={"index.html": b"v1", "new.html": b"fresh"}, message="Second")
    sha, commit = standin.commit_at("acme/site", "gh-pages")
    assert second.commit_sha == sha != first.commit_sha and commit.parents == (first.commit_sha,)
    assert standin.files_at("acme/site", "gh-pages") == {"index.html": b"v1", "new.html": b"fresh", ".nojekyll": b""}
    blobs = standin.calls("POST", "/repos/acme/site/git/blobs")
    assert len(blobs) == 3 + 1  # index.html, old.html, .nojekyll; then new.html alone
    [moved] = standin.calls("PATCH", "/repos/acme/site/git/refs/heads/gh-pages")
    assert moved.body == {"sha": sha, "force": False}
    assert len(standin.calls("POST", "/repos/acme/site/pages")) == 1 and second.url == "https://acme.github.io/site/"


async def test_a_site_serving_another_branch_is_pointed_at_the_published_one(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    await publish(app, files={"index.html": b"a"}, branch="www")
    published = await publish(app, files={"index.html": b"b"})
    [update] = standin.calls("PUT", "/repos/acme/site/pages")
    assert update.body == {"source": {"branch": "gh-pages", "path": "/"}}
    assert standin.site("acme/site")["source"]["branch"] == "gh-pages" and published.branch == "gh-pages"


async def test_the_standin_refuses_a_ref_update_that_is_not_a_fast_forward(
    app: GitHubApp, standin: GitHubStandin, http: httpx.AsyncClient
) -> None:
    await publish(app, files={"a": b"1"})
    grant = await app.repository_token(INSTALLATION, "acme/site", PAGES_WRITE)
    main, _ = standin.commit_at("acme/site", "main")
    url = f"{standin.url}/repos/acme/site/git/refs/heads/gh-pages"
    headers = {"Authorization": f"Bearer {grant.token}"}
    refused = await http.patch(url, json={"sha": main, "force": False}, headers=headers)
    forced = await http.patch(url, json={"sha": main, "force": True}, headers=headers)
    assert refused.status_code == 422 and refused.json()["message"] == "Update is not a fast forward"
    assert forced.status_code == 200 and forced.json()["object"]["sha"] == main


async def test_a_token_without_write_permissions_is_refused_and_publishes_nothing(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    with pytest.raises(ProviderAuthError) as read_only:
        await publish(app, permissions=READ_CONTENTS)
    assert standin.site("acme/site") is None
    assert "refs/heads/gh-pages" not in standin.git["acme/site"].refs
    with pytest.raises(ProviderAuthError) as no_pages:
        await publish(app, permissions={"contents": "write"})
    assert standin.site("acme/site") is None and standin.calls("POST", "/repos/acme/site/pages") == []
    assert "403" in str(read_only.value) and "/pages" in str(no_pages.value)
    assert_no_token(standin, read_only.value, no_pages.value)


async def test_a_repository_the_token_does_not_reach_is_not_in_scope(app: GitHubApp, standin: GitHubStandin) -> None:
    with pytest.raises(RepositoryNotInScope) as caught:
        await publish(app, repository="acme/api", on="acme/site")
    assert (
        "acme/site" in str(caught.value) and "refs/heads/gh-pages" not in standin.git.get("acme/site", _NoRefs()).refs
    )
    assert_no_token(standin, caught.value)


async def test_github_failing_is_unavailable_and_an_empty_repository_is_named(
    app: GitHubApp, standin: GitHubStandin
) -> None:
    standin.failing[("POST", "/repos/acme/site/git/trees")] = 502
    with pytest.raises(ProviderUnavailable) as server_error:
        await publish(app)
    standin.failing.clear()
    standin.empty_repository("acme/api")
    with pytest.raises(ProviderError) as empty:
        await publish(app, repository="acme/api")
    assert "502" in str(server_error.value) and "acme/api is empty" in str(empty.value)
    assert_no_token(standin, server_error.value, empty.value)


@pytest.mark.parametrize(
    "files",
    [{"/index.html": b""}, {"a/../b": b""}, {"a//b": b""}, {".git/config": b""}, {"a": b"", "a/b": b""}, {"": b""}],
)
async def test_a_path_that_is_not_plain_is_refused_before_anything_is_sent(
    app: GitHubApp, standin: GitHubStandin, files: dict[str, bytes]
) -> None:
    with pytest.raises(ValueError):
        await publish(app, files=files)
    with pytest.raises(ValueError):
        await publish(app, files={"index.html": b""}, cname="not a host")
    assert standin.calls("POST", "/repos/") == [] and standin.calls("GET", "/repos/") == []


class _NoRefs:
    refs: dict[str, str] = {}


def assert_no_token(standin: GitHubStandin, *errors: BaseException) -> None:
    for error in errors:
        assert not any(token in f"{error} {error!r}" for token in standin.issued) and "ghs_" not in str(error)


@pytest.fixture
async def kernel(kernel_factory: Any, standin: GitHubStandin, keys: tuple[str, str]) -> Any:
    return await goals_kernel(kernel_factory, env=github_env(standin, keys[0]))


async def test_publishing_through_a_connection_uses_a_write_token_for_that_repository_alone_and_gives_it_up(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        published = await publish_pages_for(
            owner, connection_id, "ACME/Site", SITE, kernel.platform, message="Site", cname="docs.example.org"
        )
    token = standin.issued[-1]
    assert published.repository == "acme/site" and published.url == "https://docs.example.org/"
    assert standin.files_at("acme/site", "gh-pages") == {**SITE, "CNAME": b"docs.example.org\n", ".nojekyll": b""}
    [minted] = [r for r in standin.calls("POST", "/app/installations/") if r.body.get("repositories")]
    assert minted.body == {"repositories": ["site"], "permissions": {"contents": "write", "pages": "write"}}
    assert not standin.token_is_live(token) and standin.calls("DELETE", "/installation/token")


async def test_publishing_through_a_connection_is_refused_as_token_requests_are(
    kernel: Any, standin: GitHubStandin
) -> None:
    async with http_client(kernel) as client:
        owner, headers = await credits_session(client)
        other, _ = await credits_session(client)
        connection_id = await connected(client, headers, standin)
        pending_id = (await create(client, headers, name="not yet"))["id"]

        async def attempt(who: str = owner, cid: str = connection_id, repo: str = "acme/site") -> ConnectionRefusal:
            with pytest.raises(ConnectionRefusal) as caught:
                await publish_pages_for(who, cid, repo, SITE, kernel.platform, message="m")
            return caught.value

        refusals = [await attempt(repo="acme/secret"), await attempt(who=other), await attempt(cid=pending_id)]
        standin.install(INSTALLATION, "acme", ["site", "api"], {"contents": "read", "metadata": "read"}, [INSTALLER])
        refusals.append(await attempt())
        standin.install(INSTALLATION, "acme", ["site", "api"], WRITE, [INSTALLER])
        standin.outage = 503
        refusals.append(await attempt())
        standin.outage = None
        standin.uninstall(INSTALLATION)
        refusals.append(await attempt())
        with pytest.raises(ValueError):
            await publish_pages_for(
                owner, connection_id, "acme/site", SITE, kernel.platform, message="m", branch="a..b"
            )
    kinds = [type(e) for e in refusals]
    assert kinds == [
        RepositoryOutOfScope,
        ConnectionNotFound,
        ConnectionNotActive,
        RepositoryOutOfScope,
        ProviderDown,
        ConnectionRevoked,
    ]
    assert "Contents: write, Pages: write" in refusals[3].message
    assert "refs/heads/gh-pages" not in standin.git.get("acme/site", _NoRefs()).refs
    assert_no_token(standin, *refusals)
