"""The case tool that reads one file of a repository through a connection, with a token for that repository alone that the model never sees."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import httpx

from .case_tools import CallRefused, Outcome, Where
from .connections import ConnectionRefusal, api_url, repository_token_for
from .github_app import API_VERSION

MAX_CHARS = 50_000
MAX_BYTES = MAX_CHARS * 4
TIMEOUT_S = 15.0
RAW = "application/vnd.github.raw+json"
_REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
_FIELDS = {"connection_id", "repository", "path"}
_STR = {"type": "string"}

READ_REPOSITORY_FILE: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_repository_file",
        "description": "Read one file of a repository through a code-host connection of the goal's creator: connection_id "
        "(from GET /v1/connections), repository as owner/name (one the connection reaches) and the file's path. "
        f"Answers the file's text (at most {MAX_CHARS} characters).",
        "parameters": {
            "type": "object",
            "properties": {"connection_id": _STR, "repository": _STR, "path": _STR},
            "required": ["connection_id", "repository", "path"],
            "additionalProperties": False,
        },
    },
}


def _arguments(args: dict[str, Any]) -> tuple[str, str, str]:
    unknown = set(args) - _FIELDS
    if unknown:
        raise CallRefused(f"unknown fields: {', '.join(sorted(unknown))}")
    connection_id, repository, path = (args.get(name) for name in ("connection_id", "repository", "path"))
    if not isinstance(connection_id, str) or not connection_id.strip():
        raise CallRefused("connection_id is required")
    if not isinstance(repository, str) or not _REPOSITORY.match(repository.strip()):
        raise CallRefused("repository must be owner/name")
    if not isinstance(path, str) or not path.strip("/ ") or len(path) > 1000:
        raise CallRefused("path is required: the file's path in the repository")
    path = path.strip().strip("/")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise CallRefused("path must be a plain path in the repository (no empty, . or .. segments)")
    return connection_id.strip(), repository.strip(), path


async def read_repository_file(where: Where, args: dict[str, Any], platform: Any) -> Outcome:
    connection_id, repository, path = _arguments(args)
    try:
        grant = await repository_token_for(where.goal["agent_id"], connection_id, repository, platform)
    except ConnectionRefusal as exc:
        raise CallRefused(exc.message) from None
    base = api_url(platform)
    full_name = grant.repositories[0]
    headers = {"Authorization": f"Bearer {grant.token}", "Accept": RAW, "X-GitHub-Api-Version": API_VERSION}
    shared = getattr(platform, "http", None)
    http = shared if shared is not None else httpx.AsyncClient(timeout=TIMEOUT_S)
    try:
        status, raw = await _fetch(
            http, f"{base}/repos/{quote(full_name, safe='/')}/contents/{quote(path, safe='/')}", headers
        )
    except httpx.HTTPError:
        raise CallRefused(f"GitHub could not be reached to read {path} in {full_name}; try again later") from None
    finally:
        await _end_token(http, base, headers["Authorization"])
        if shared is None:
            await http.aclose()
    if status == 404:
        raise CallRefused(f"no file {path} in {full_name}")
    if status in (401, 403):
        raise CallRefused(f"GitHub refused to read {path} in {full_name} ({status})")
    if status != 200:
        raise CallRefused(f"GitHub answered {status} for {path} in {full_name}")
    text = raw.decode("utf-8", errors="replace")
    return Outcome(
        {
            "ok": True,
            "repository": full_name,
            "path": path,
            "content": text[:MAX_CHARS],
            "truncated": len(text) > MAX_CHARS,
        }
    )


async def _fetch(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    async with http.stream("GET", url, headers=headers, timeout=TIMEOUT_S) as response:
        if response.status_code != 200:
            return response.status_code, b""
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_BYTES:
                break
        return 200, bytes(body)


async def _end_token(http: httpx.AsyncClient, base: str, authorization: str) -> None:
    """The token is given up as soon as the file is read (it would expire within the hour anyway)."""
    try:
        await http.delete(
            f"{base}/installation/token",
            headers={"Authorization": authorization, "X-GitHub-Api-Version": API_VERSION},
            timeout=TIMEOUT_S,
        )
    except httpx.HTTPError:
        pass
