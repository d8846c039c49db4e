"""An agent's access tokens on its console page: revoking one (a POST form per token,
with the session's CSRF token) through `Platform.revoke_access_token`; the list itself is
the agent page's (`Platform.access_tokens`: ids, never a token or its hash)."""

from __future__ import annotations

from tollway import Page, RouteCall

from .pages import _platform, _route, redirect, refused, signed_in


async def _revoke(call: RouteCall, session: str) -> Page:
    platform = _platform(call)
    account = await platform.agent_account(call.params["agent_id"], 0)
    if account is None:
        return refused(404, "Not found", "There is no such agent.")
    agent_id = str(account["agent_id"])
    if await platform.revoke_access_token(agent_id, call.params["token_id"][:64]) is None:
        return refused(404, "Not found", "This agent has no such access token.")
    return redirect(f"/console/agents/{agent_id}#tokens")


ROUTES = (
    _route(
        "POST",
        "/console/agents/{agent_id}/tokens/{token_id}/revoke",
        "console_revoke_access_token",
        "Revoke an agent's access token",
        signed_in(_revoke),
        statuses=(303, 403, 404),
        param_docs=(("agent_id", "The agent's id."), ("token_id", "The token's id (at_…), never the token.")),
    ),
)
