"""The goals plugin's own keys, made once and kept in the database so that every process
(API and workers, on any machine) signs and checks approval links with the same one."""
from __future__ import annotations

import base64
import secrets

from . import db
from .ids import now_ms

APPROVAL_KEY = "approval_links"


async def key(name: str = APPROVAL_KEY) -> bytes:
    found = await db.row("SELECT value FROM goals_secrets WHERE name = {}", name)
    if found is None:
        await db.rows(
            "INSERT INTO goals_secrets (name, value, created_ms) VALUES ({}, {}, {}) ON CONFLICT (name) DO NOTHING",
            name, base64.b64encode(secrets.token_bytes(32)).decode(), now_ms(),
        )
        found = await db.row("SELECT value FROM goals_secrets WHERE name = {}", name)
    assert found is not None
    return base64.b64decode(found["value"])
