"""The goals plugin's own keys, made once and kept in the database so that every process
(API and workers, on any machine) signs and checks approval links with the same one."""

from __future__ import annotations

import base64
import secrets

from .ids import now_ms
from .tables import Secret

APPROVAL_KEY = "approval_links"


async def key(name: str = APPROVAL_KEY) -> bytes:
    found = await Secret.select(Secret.value).where(Secret.name == name).first()
    if found is None:
        made = Secret(name=name, value=base64.b64encode(secrets.token_bytes(32)).decode(), created_ms=now_ms())
        await Secret.insert(made).on_conflict(target=Secret.name, action="DO NOTHING")
        found = await Secret.select(Secret.value).where(Secret.name == name).first()
    assert found is not None
    return base64.b64decode(found["value"])
