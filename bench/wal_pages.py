"""Which b-trees a credits call writes on SQLite: the write-ahead log's frames per call, by table or index.

Builds the paid-call bench's kernel in process (`bench/paid_calls.py`: the vehicles plugin
alone, NHTSA replayed), the checkpointer held back so the log only grows, optionally fills
`tw_ledger` and `tw_receipts` with `--prefill` rows of random ids first (a database that
has served for a while: its random-keyed indexes have many leaves, so concurrent calls
rarely share one), then makes `--calls` credits calls with 16 in flight and as many one at
a time. Each frame of the log is one page a commit wrote; its page number is matched to
the b-tree that owns it (SQLite's `dbstat`). Prints one JSON line per mode: pages
(frames) and commits per call, and pages per call of each b-tree.

Run: `.venv/bin/python bench/wal_pages.py [--calls 400] [--prefill 100000]`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sqlite3
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from paid_calls import LOOKUP, PATH, inprocess_service, setup_credits  # noqa: E402
from serving import drive  # noqa: E402

AGENTS = 16
_LEDGER_ROW = (
    "INSERT INTO tw_ledger (id, account, delta, balance_after, kind, reference, memo, created_ms) "
    "VALUES (?, ?, -1000, 5000000, 'spend', ?, 'vehicle_recalls', ?)"
)
_RECEIPT_ROW = (
    "INSERT INTO tw_receipts (receipt_id, agent_id, category, tool, amount, status, revision, job_id, body, "
    "created_ms, payment_method, execution_status, duration_ms) "
    "VALUES (?, ?, 'lookup', 'vehicle_recalls', 1000, 'settled', 1, ?, ?, ?, 'credits', 'completed', 3)"
)


def frames(log: Path, first: int) -> tuple[list[int], int, int]:
    """(page number of each frame from the `first`th on, commits among them, frames in all)."""
    data = log.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    size = 24 + page_size
    pages, commits = [], 0
    for offset in range(32 + first * size, len(data) - size + 1, size):
        page, commit = struct.unpack(">II", data[offset : offset + 8])
        pages.append(page)
        commits += commit != 0
    return pages, commits, (len(data) - 32) // size


def prefill(path: Path, rows: int) -> None:
    """`rows` ledger rows and receipts of random ids (as ids were before they were time-ordered)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for i in range(rows):
        agent, request, ms = f"ag_{os.urandom(12).hex()}", f"req_{os.urandom(12).hex()}", 1_700_000_000_000 + i
        conn.execute(_LEDGER_ROW, (f"txn_{os.urandom(12).hex()}", f"credits:{agent}", request, ms))
        body = os.urandom(415).hex()  # about a lookup receipt's size
        conn.execute(_RECEIPT_ROW, (f"rcpt_{os.urandom(12).hex()}", agent, request, body, ms))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="credits calls per mode")
    parser.add_argument("--prefill", type=int, default=0, help="ledger rows and receipts written before")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "db" / "tollway.db"
        url = f"sqlite:///{path}"
        counted: dict[str, tuple[list[int], int]] = {}
        async with inprocess_service("sqlite", url, Path(tmp) / "home", checkpoints=False) as (kernel, client):
            if args.prefill:
                await kernel.db.engine.run_ddl("PRAGMA wal_checkpoint(TRUNCATE)")
                prefill(path, args.prefill)
            auths = await setup_credits(client, 2 * args.calls + 100, 10_000, AGENTS)

            async def call(i: int) -> None:
                resp = await client.post(PATH, json=LOOKUP, headers=auths[i % AGENTS])
                assert resp.status_code == 200, resp.text

            await drive(100, AGENTS, call)  # warm: the upstream answer cached, the facts recorded
            log = Path(f"{path}-wal")
            for mode, inflight in (("concurrent", AGENTS), ("serial", 1)):
                first = frames(log, 0)[2]
                await drive(args.calls, inflight, call)
                pages, commits, _ = frames(log, first)
                counted[mode] = (pages, commits)
        conn = sqlite3.connect(path)
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
        conn.close()
    for mode, (pages, commits) in counted.items():
        by_tree = collections.Counter(owner.get(p, "?") for p in pages)
        print(
            json.dumps(
                {
                    "mode": mode,
                    "prefill": args.prefill,
                    "pages_per_call": round(len(pages) / args.calls, 2),
                    "commits_per_call": round(commits / args.calls, 2),
                    "by_tree": {name: round(n / args.calls, 2) for name, n in by_tree.most_common()},
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
