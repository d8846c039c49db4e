"""What the benchmarks share: a throwaway PostgreSQL database per run, a service's settings,
a percentile, and CPU seconds read from /proc (a process's, and a database's backends')."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

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


class BurstCpu:
    """The CPU a burst of jobs costs: this process while it hands them over (`handed_over`),
    the worker processes `pids`, and the PostgreSQL backends of the database at `url`."""

    def __init__(self, admin: str, url: str, pids: list[int]) -> None:
        self.database, self.pids = DatabaseCpu(admin, url), pids

    async def start(self) -> None:
        self.db0 = await self.database.seconds()
        self.workers0 = sum(cpu_seconds(p) for p in self.pids)
        self.cpu0 = time.process_time()

    async def handed_over(self) -> None:
        self.caller = time.process_time() - self.cpu0
        await self.database.seconds()  # a backend that leaves before the end keeps what it used until now

    async def finished(self) -> None:
        self.workers = sum(cpu_seconds(p) for p in self.pids) - self.workers0
        self.db = await self.database.seconds() - self.db0

    def per_job(self, done: int, caller: str) -> dict[str, float]:
        """µs per completed job: in all, and each part (`<caller>_`, `workers_`, `db_cpu_us_per_job`)."""
        return {
            "cpu_us_per_job": round((self.caller + self.workers + self.db) / done * 1e6, 1),
            f"{caller}_cpu_us_per_job": round(self.caller / done * 1e6, 1),
            "workers_cpu_us_per_job": round(self.workers / done * 1e6, 1),
            "db_cpu_us_per_job": round(self.db / done * 1e6, 1),
        }


def profile_parts(stats: Any, parts: Any, n: int) -> dict[str, float]:
    """µs per request, inclusive, of each (label, file suffix, function name) of `parts` in a
    `pstats.Stats` over `n` requests (parts the profile never saw are left out)."""
    rows = stats.stats
    out: dict[str, float] = {}
    for label, suffix, name in parts:
        total = sum(v[3] for (path, _, func), v in rows.items() if func == name and path.endswith(suffix))
        if total:
            out[label] = round(total / n * 1e6, 1)
    return out


async def profiled(run: Any, parts: Any, n: int, top: int, dump: str | None = None) -> dict[str, Any]:
    """A cProfile, its clock the process's CPU time, of `await run()` (`n` requests):
    {"parts": `profile_parts`, "top": `profile_top`} per request; the raw stats to `dump`."""
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    await run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    if dump:
        stats.dump_stats(dump)
    return {"parts": profile_parts(stats, parts, n), "top": profile_top(stats, n, top)}


def profile_top(stats: Any, n: int, count: int) -> list[tuple[str, float, float]]:
    """The `count` functions of most own time: (file:line(function), µs per request, calls per request)."""
    rows = []
    for (path, line, func), (_, calls, own, _, _) in stats.stats.items():
        short = "/".join(Path(path).parts[-2:]) if path != "~" else ""
        rows.append((f"{short}:{line}({func})", round(own / n * 1e6, 1), round(calls / n, 2)))
    rows.sort(key=lambda r: -r[1])
    return rows[:count]


def instrument(state: str) -> None:
    """Callgrind's instrumentation of this process switched `state` (on or off): a bench run
    under `valgrind --tool=callgrind --instr-atstart=no` counts only what it brackets."""
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)
