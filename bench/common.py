"""What the benchmarks share: a throwaway PostgreSQL database per run, a service's settings,
a percentile, and CPU seconds read from /proc (a process's, and a database's backends')."""

from __future__ import annotations

import base64
import contextlib
import os
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


def cpu_seconds(pid: int | str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # user + system


class DatabaseCpu:
    """CPU seconds of the PostgreSQL backends connected to one database (from /proc: the
    server runs on this machine), a backend that left keeping what it had used."""

    def __init__(self, admin: str, url: str) -> None:
        self.admin, self.name = admin, url.rsplit("/", 1)[1]
        self.used: dict[int, float] = {}

    async def seconds(self) -> float:
        import asyncpg

        conn = await asyncpg.connect(self.admin.replace("postgres://", "postgresql://", 1))
        try:
            pids = [
                r["pid"] for r in await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", self.name)
            ]
        finally:
            await conn.close()
        for pid in pids:
            with contextlib.suppress(OSError):
                self.used[pid] = cpu_seconds(pid)
        return sum(self.used.values())
