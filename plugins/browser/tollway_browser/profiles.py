"""Browser profiles (`/v1/browser/profiles`): an agent's named browser storage state (cookies,
local storage) that tasks naming it restore at their start and save at their end, sealed at
rest (crypto.py). Only the owner sees a profile: anyone else gets 404, as for an id that does
not exist. Two tasks on one profile run one after the other: a task holds the profile (a
lease in its row) from before its browser starts until its state is saved."""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

from tollway import PluginContext, Refusal, Route, RouteCall, RouteReply, ToolError, iso, now_ms

from . import crypto
from .settings import FAMILY
from .tables import Profile
from .wire import BrowserProfile, BrowserProfileDeleted, BrowserProfileIn, BrowserProfileList

PATH = "/v1/browser/profiles"
TAGS = ("browser",)
HOLD_MS = 660_000  # a hold outlives its task's whole attempt (the tool's time limit); a dead worker's lapses then
WAIT_FOR_PROFILE_S = 300.0
WAIT_S = 0.25
MAX_PROFILES = 100  # per agent


def out(row: dict[str, Any]) -> BrowserProfile:
    last = row["last_used_ms"]
    return BrowserProfile(
        id=row["id"],
        name=row["name"],
        created_at=iso(int(row["created_ms"])),
        last_used_at=None if last is None else iso(int(last)),
    )


async def _owned(call: RouteCall) -> dict[str, Any]:
    row = await Profile.select().where(Profile.id == call.params["profile_id"]).first()
    if row is None or row["agent_id"] != call.agent_id:
        raise Refusal("not_found", f"No browser profile {call.params['profile_id']!r}.", status=404)
    return row


async def create(call: RouteCall[BrowserProfileIn]) -> RouteReply:
    if await Profile.count().where(Profile.agent_id == call.agent_id) >= MAX_PROFILES:
        raise Refusal("invalid_input", f"An agent keeps at most {MAX_PROFILES} browser profiles: delete one first.")
    row = {
        "id": f"bp_{secrets.token_hex(12)}",
        "agent_id": call.agent_id,
        "name": call.body.name,
        "created_ms": now_ms(),
        "last_used_ms": None,
    }
    await Profile.insert(Profile(**row))
    return RouteReply(201, out(row))


async def listing(call: RouteCall) -> BrowserProfileList:
    rows = await Profile.select().where(Profile.agent_id == call.agent_id).order_by(Profile.created_ms)
    return BrowserProfileList(profiles=[out(r) for r in rows])


async def read(call: RouteCall) -> BrowserProfile:
    return out(await _owned(call))


async def delete(call: RouteCall) -> BrowserProfileDeleted:
    row = await _owned(call)
    await Profile.delete().where(Profile.id == row["id"])
    return BrowserProfileDeleted(id=row["id"], deleted=True)


# -- tasks on a profile --------------------------------------------------------------------
async def hold(
    context: PluginContext, profile_id: str, owner: str, request_id: str, wait_s: float
) -> dict[str, Any] | None:
    """Wait until the profile is this task's (another task's hold released or lapsed) and
    answer its storage state (None for a profile no task has used yet)."""
    mine = await Profile.select(Profile.agent_id).where(Profile.id == profile_id).first()
    if mine is None or mine["agent_id"] != owner:
        raise ToolError(
            "invalid_input", f"profile_id {profile_id!r} names no browser profile of yours. Nothing was charged."
        )
    give_up = now_ms() + int(wait_s * 1000)
    while True:
        now = now_ms()
        free = Profile.held_by.is_null() | (Profile.held_by == request_id) | (Profile.held_until_ms < now)
        taken = (
            await Profile.update({Profile.held_by: request_id, Profile.held_until_ms: now + HOLD_MS})
            .where((Profile.id == profile_id) & free)
            .returning(Profile.id)
        )
        if taken:
            break
        if now > give_up:
            raise ToolError("internal_error", "The profile stayed in use by another task. Nothing was charged.")
        if await Profile.count().where(Profile.id == profile_id) == 0:
            raise ToolError("invalid_input", f"The browser profile {profile_id!r} was deleted. Nothing was charged.")
        await asyncio.sleep(WAIT_S)
    row = await Profile.select(Profile.state).where(Profile.id == profile_id).first()
    if row is None or row["state"] is None:
        return None
    plain = crypto.unseal(await crypto.state_key(context.settings(FAMILY)), row["state"])
    return None if plain is None else json.loads(plain)  # another key: the profile starts afresh


async def save(context: PluginContext, profile_id: str, request_id: str, state: dict[str, Any]) -> None:
    sealed = crypto.seal(await crypto.state_key(context.settings(FAMILY)), json.dumps(state).encode())
    await Profile.update({Profile.state: sealed, Profile.last_used_ms: now_ms()}).where(
        (Profile.id == profile_id) & (Profile.held_by == request_id)
    )


async def release(profile_id: str, request_id: str) -> None:
    await Profile.update({Profile.held_by: None, Profile.held_until_ms: None}).where(
        (Profile.id == profile_id) & (Profile.held_by == request_id)
    )


PROFILE_ID = (("profile_id", "The profile's id (bp_...)."),)
ROUTES = (
    Route(
        method="POST",
        path=PATH,
        name="browser_profiles_create",
        title="Create a browser profile",
        description="A named profile: tasks naming its id keep cookies and local storage between them.",
        handle=create,
        auth="write",
        body_type=BrowserProfileIn,
        answer_type=BrowserProfile,
        status=201,
        tags=TAGS,
        mcp=True,
        statuses=(400, 401, 429),
    ),
    Route(
        method="GET",
        path=PATH,
        name="browser_profiles_list",
        title="List your browser profiles",
        description="Your browser profiles, oldest first.",
        handle=listing,
        auth="read",
        private=True,
        answer_type=BrowserProfileList,
        tags=TAGS,
        mcp=True,
        statuses=(401, 429),
    ),
    Route(
        method="GET",
        path=f"{PATH}/{{profile_id}}",
        name="browser_profiles_get",
        title="Read a browser profile",
        description="One of your browser profiles.",
        handle=read,
        auth="read",
        private=True,
        answer_type=BrowserProfile,
        tags=TAGS,
        mcp=True,
        param_docs=PROFILE_ID,
        statuses=(401, 404, 429),
    ),
    Route(
        method="DELETE",
        path=f"{PATH}/{{profile_id}}",
        name="browser_profiles_delete",
        title="Delete a browser profile",
        description="Deletes the profile and its stored cookies and local storage.",
        handle=delete,
        auth="write",
        answer_type=BrowserProfileDeleted,
        tags=TAGS,
        mcp=True,
        param_docs=PROFILE_ID,
        statuses=(401, 404, 429),
    ),
)
