"""Artifacts (`GET /v1/artifacts/{id}`): the screenshots and PDFs a task made, kept in the
database (any worker writes them, any API process serves them) for 30 days like jobs. The
owner reads one with its credentials; anyone holding the signed link of a task's result
(`?expires=&sig=`, HMAC-SHA256 with the plugin's link key) until it expires. Anyone else
gets 404. The owner gets a fresh signed link (`POST /v1/artifacts/{id}/link`) once the
task's has expired."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from tollway import Page, PeriodicTask, PluginContext, Refusal, Route, RouteCall, iso, now_ms

from . import crypto, session, wire
from .settings import ARTIFACT_LINK_S, FAMILY, number
from .tables import Artifact

PATH = "/v1/artifacts/{artifact_id}"
KEEP_MS = 30 * 24 * 3600 * 1000
_HEADERS = {"Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"}


async def keep(
    context: PluginContext, request_id: str, owner: str, shots: list[session.Shot]
) -> list[wire.BrowserArtifact]:
    """Store the task's artifacts (replacing an earlier attempt's) and answer them with signed links."""
    await Artifact.delete().where(Artifact.request_id == request_id)
    if not shots:
        return []
    key = await crypto.link_key()
    expires = _expiry(context.settings(FAMILY))
    kept = []
    now = now_ms()
    for n, shot in enumerate(shots, start=1):
        artifact_id = f"art_{secrets.token_hex(12)}"
        await Artifact.insert(
            Artifact(
                id=artifact_id,
                request_id=request_id,
                agent_id=owner,
                number=n,
                kind=shot.kind,
                media_type=shot.media_type,
                body=shot.body,
                created_ms=now,
            )
        )
        kept.append(
            wire.BrowserArtifact(
                id=artifact_id,
                kind=shot.kind,
                media_type=shot.media_type,
                bytes=len(shot.body),
                url=_signed_url(key, artifact_id, expires),
                expires_at=iso(expires * 1000),
            )
        )
    return kept


def _expiry(settings: Mapping[str, str]) -> int:
    return int(time.time() + number(settings, ARTIFACT_LINK_S))


def _signed_url(key: bytes, artifact_id: str, expires: int) -> str:
    return f"/v1/artifacts/{artifact_id}?expires={expires}&sig={crypto.link_signature(key, artifact_id, expires)}"


def _caller(caller: Any, request: Any) -> Any:
    """A signed link needs no credential; without one, the owner's proof or access token."""
    if "sig" in request.query:
        return caller
    if caller is None or not caller.proven:
        raise Refusal(
            "unauthorized",
            "Send the artifact's signed link, or X-Agent-ID with a signed X-Agent-Proof, or Authorization: Bearer <access token>.",
            status=401,
        )
    return caller


async def read(call: RouteCall) -> Page:
    artifact_id = call.params["artifact_id"]
    row = await Artifact.select().where(Artifact.id == artifact_id).first()
    query = call.query
    if row is not None and "sig" in query:
        allowed = crypto.link_valid(
            await crypto.link_key(), artifact_id, str(query.get("expires") or ""), str(query["sig"]), time.time()
        )
    else:
        allowed = row is not None and call.caller is not None and row["agent_id"] == call.caller.agent_id
    if row is None or not allowed:
        raise Refusal("not_found", f"No artifact {artifact_id!r} (or its link expired).", status=404)
    return Page(bytes(row["body"]), headers=_HEADERS, media_type=row["media_type"])


async def fresh_link(call: RouteCall) -> wire.BrowserArtifactLink:
    """A new signed link to the caller's artifact, valid as long as a task's (the owner only)."""
    artifact_id = call.params["artifact_id"]
    row = await Artifact.select(Artifact.agent_id).where(Artifact.id == artifact_id).first()
    if row is None or call.caller is None or row["agent_id"] != call.caller.agent_id:
        raise Refusal("not_found", f"No artifact {artifact_id!r}.", status=404)
    if call.platform is None:
        raise Refusal("internal_error", "The service is not started.", status=500)
    expires = _expiry(call.platform.settings(FAMILY))
    url = _signed_url(await crypto.link_key(), artifact_id, expires)
    return wire.BrowserArtifactLink(id=artifact_id, url=url, expires_at=iso(expires * 1000))


async def purge(context: PluginContext) -> None:
    await Artifact.delete().where(Artifact.created_ms < now_ms() - KEEP_MS)


PURGE = PeriodicTask(name="browser_artifacts_purge", interval_s=3600.0, run=purge)

ARTIFACT_ID = (("artifact_id", "The artifact's id (art_...)."),)
READ = Route(
    method="GET",
    path=PATH,
    name="browser_artifact_get",
    title="Read an artifact",
    description="A screenshot (PNG) or PDF a browser task made: the owner's credentials, or the signed link in the "
    "task's result until it expires. Kept 30 days.",
    handle=read,
    auth="read",
    caller_check=_caller,
    page=True,
    media_type="application/octet-stream",
    tags=("browser",),
    query=(("expires", "The signed link's expiry (Unix seconds)."), ("sig", "The signed link's signature.")),
    param_docs=ARTIFACT_ID,
    statuses=(401, 404, 429),
)
LINK = Route(
    method="POST",
    path=f"{PATH}/link",
    name="browser_artifact_link",
    title="Renew an artifact link",
    description="A fresh signed link (url, expires_at) to a screenshot or PDF of one of your browser tasks.",
    handle=fresh_link,
    auth="read",
    private=True,
    answer_type=wire.BrowserArtifactLink,
    tags=("browser",),
    mcp=True,
    param_docs=ARTIFACT_ID,
    statuses=(401, 404, 429),
)
ROUTES = (READ, LINK)
