"""Agents: every payer wallet and every registered agent has one UUID record."""

from __future__ import annotations

import re
from typing import Any

from tollway._core.auth.tables import Agent
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.ids import new_uuid, now_ms
from tollway._core.storage import sql

# The agent id of a bare X-Agent-ID naming a wallet Tollway has no agent for: no
# agent has it (ids are random version-4 UUIDs), so such a caller's reads find
# nothing, and no agent row is made for a wallet nobody proved to hold.
NO_AGENT = "00000000-0000-0000-0000-000000000000"

_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def is_address(text: str) -> bool:
    return bool(_ADDRESS.match(text))


def is_uuid(text: str) -> bool:
    return bool(_UUID.match(text))


_FIND = "SELECT id FROM tw_agents WHERE wallet_address = {}"
_MAKE = "INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) VALUES ({}, {}, NULL, 0, {}) ON CONFLICT (wallet_address) DO NOTHING RETURNING id"
# The INSERT sees the statement's snapshot: it inserts only when `found` is empty, and a
# row another transaction commits meanwhile makes it do nothing (then neither returns a row).
_FIND_OR_MAKE = (
    "WITH found AS (SELECT id FROM tw_agents WHERE wallet_address = {}), "
    "made AS (INSERT INTO tw_agents (id, wallet_address, name, credits, created_ms) "
    "SELECT {}, {}, NULL, 0, {} WHERE NOT EXISTS (SELECT 1 FROM found) ON CONFLICT (wallet_address) DO NOTHING RETURNING id) "
    "SELECT id FROM found UNION ALL SELECT id FROM made"
)


class AgentDirectory:
    """Lookups with a small cache: a wallet's agent id never changes once made."""

    def __init__(self) -> None:
        self._by_wallet: dict[str, str] = {}

    async def for_wallet(self, wallet: str) -> str:
        """The agent id of a wallet, creating the agent on first sight: one statement
        for a wallet not in the cache (found or made; on PostgreSQL both at once),
        one more only when a concurrent first sight of the same wallet made it."""
        w = wallet.lower()
        cached = self._by_wallet.get(w)
        if cached:
            return cached
        if sql.on_postgres():
            row = await sql.fetch_one(_FIND_OR_MAKE, w, new_uuid(), w, now_ms())
        else:
            row = await sql.fetch_one(_FIND, w) or await sql.fetch_one(_MAKE, new_uuid(), w, now_ms())
        if row is None:  # the unique wallet_address kept a concurrent insert's row: read it
            row = await sql.fetch_one(_FIND, w)
            assert row is not None
        self._by_wallet[w] = row["id"]
        return row["id"]

    async def find_wallet(self, wallet: str) -> str | None:
        """The agent id of a wallet, or None when it has none (nothing is created)."""
        w = wallet.lower()
        cached = self._by_wallet.get(w)
        if cached:
            return cached
        row = await sql.fetch_one(_FIND, w)
        if row is None:
            return None
        self._by_wallet[w] = row["id"]
        return row["id"]

    async def register(self, wallet: str | None, name: str | None) -> dict[str, Any]:
        if wallet is not None:
            if not is_address(wallet):
                raise ServiceError(
                    400,
                    "invalid_request",
                    "wallet_address must be a 0x address",
                    [{"field": "wallet_address", "message": "expected 0x + 40 hex"}],
                )
            existing = await Agent.select().where(Agent.wallet_address == wallet.lower()).first()
            if existing:
                if name and not existing["name"]:
                    await Agent.update({Agent.name: name}).where(Agent.id == existing["id"])
                return existing
        row = Agent(
            id=new_uuid(), wallet_address=wallet.lower() if wallet else None, name=name, credits=0, created_ms=now_ms()
        )
        await Agent.insert(row)
        created = await Agent.select().where(Agent.id == row.id).first()
        assert created is not None  # inserted just now
        return created

    async def get(self, agent_ref: str) -> dict[str, Any] | None:
        """By UUID or wallet address (case-insensitive)."""
        if is_uuid(agent_ref):
            return await Agent.select().where(Agent.id == agent_ref.lower()).first()
        if is_address(agent_ref):
            return await Agent.select().where(Agent.wallet_address == agent_ref.lower()).first()
        return None
