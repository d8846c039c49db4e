"""What the benchmarks share: a throwaway PostgreSQL database per run, a service's settings,
and a percentile."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

OPERATOR = "bench-operator-token"


def service_env(home: Path, url: str, key_byte: int, **more: str) -> dict[str, str]:
    """A benchmark service's settings: its home and database, the operator token, a receipt
    key of its own (32 bytes of `key_byte`), and `more`."""
    return {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": url,
        "TOLLWAY_OPERATOR_TOKEN": OPERATOR,
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(bytes([key_byte]) * 32).decode(),
        **more,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def create_database(admin: str, prefix: str) -> str:
    """A new database on the server of `admin` (a postgres:// URL); returns its URL."""
    import asyncpg

    conn = await asyncpg.connect(admin.replace("postgres://", "postgresql://", 1), timeout=5)
    name = f"{prefix}_{secrets.token_hex(3)}"
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    return admin.rsplit("/", 1)[0] + "/" + name


async def drop_database(admin: str, url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin.replace("postgres://", "postgresql://", 1))
    await conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    await conn.close()
