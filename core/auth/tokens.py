"""`AccessTokens`: the operator's view of an agent's access tokens (the console's agent
page, through `Platform.access_tokens` and `Platform.revoke_access_token`): listing them by
their public id, never their value or its hash, and revoking one."""

from __future__ import annotations

from tollway._core.auth.agents import AgentDirectory
from tollway._core.auth.auth import TOKEN_RECHECK_S, Authenticator
from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.json_values import JSONObject
from tollway._core.storage import sql

_OF_AGENT = (
    "SELECT token_id, origin, created_ms, expires_ms, revoked_ms FROM tw_access_tokens "
    "WHERE agent_id = {} ORDER BY created_ms DESC, token_id DESC LIMIT {}"
)
# A second revocation keeps the first one's time: revoking twice changes nothing.
_REVOKE = (
    "UPDATE tw_access_tokens SET revoked_ms = COALESCE(revoked_ms, {}) "
    "WHERE agent_id = {} AND token_id = {} RETURNING token_hash, revoked_ms"
)


def _when(ms: int | None) -> str | None:
    return None if ms is None else iso(int(ms))


class AccessTokens:
    """Listing and revoking an agent's tokens; a revocation is forgotten at once by this
    process's token memory, and by the others' within `auth.TOKEN_RECHECK_S`."""

    def __init__(self, auth: Authenticator) -> None:
        self.auth = auth

    @staticmethod
    async def of_agent(agent_ref: str, limit: int) -> JSONObject | None:
        """`{tokens, revocation_bound_s}`: the agent's (by id or wallet address) latest `limit`
        tokens, newest first, each `{token_id, origin, created_at, expires_at, expired,
        revoked_at}`, and how long a revocation takes at most to reach every process; None for
        no such agent."""
        agent = await AgentDirectory().get(agent_ref)
        if agent is None:
            return None
        now = now_ms()
        rows = await sql.fetch(_OF_AGENT, agent["id"], limit)
        tokens: list[JSONObject] = [
            {
                "token_id": r["token_id"],
                "origin": r["origin"] or "operator",
                "created_at": iso(int(r["created_ms"])),
                "expires_at": iso(int(r["expires_ms"])),
                "expired": int(r["expires_ms"]) <= now,
                "revoked_at": _when(r["revoked_ms"]),
            }
            for r in rows
        ]
        return {"tokens": tokens, "revocation_bound_s": TOKEN_RECHECK_S}

    async def revoke(self, agent_id: str, token_id: str) -> str | None:
        """Revoke the agent's token `token_id`: from now on it is refused 401
        `invalid_access_token`. Its revocation time (the first one's, when revoked already),
        or None when the agent has no such token."""
        row = await sql.fetch_one(_REVOKE, now_ms(), agent_id, token_id)
        if row is None:
            return None
        self.auth.forget_token(row["token_hash"])
        return iso(int(row["revoked_ms"]))
