"""Statements on the service's database for the souls plugin: hand-written portable SQL
(`{}` placeholders) through the bound Piccolo engine, inside the caller's transaction."""
from __future__ import annotations

from typing import Any

import msgspec

from .tables import SoulAgent


async def rows(template: str, *args: Any) -> list[dict[str, Any]]:
    return await SoulAgent.raw(template, *args).run()


async def row(template: str, *args: Any) -> dict[str, Any] | None:
    found = await rows(template, *args)
    return found[0] if found else None


def transaction() -> Any:
    return SoulAgent._meta.db.transaction()


def on_postgres() -> bool:
    return SoulAgent._meta.db.engine_type == "postgres"


def dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def loads(text: str | None) -> Any:
    return None if text is None else msgspec.json.decode(text)
