"""One credits call profiled in process: `kernel.paid_calls.call` with no HTTP in front, or
with `--front` the whole request through the ASGI app `tollway serve` serves (the lean front,
http_server/front.py), with no HTTP server or client.

Builds the paid-call bench's kernel (`bench/paid_calls.py`: the vehicles plugin alone, NHTSA
replayed), pays credits from 16 agents, and prints:
  cpu_us        process CPU per call (`time.process_time`), `--concurrency` calls in flight
                (group commit on SQLite shares commits as under the HTTP bench), the least of
                three windows of `--n` calls, no profiler;
  parts         with `--profile`, a cProfile over one more window, its clock the process's CPU
                time: inclusive µs per call of the functions that make up a call (the profiler
                inflates Python code, so compare rows between runs, not with `cpu_us`);
  top           with `--profile`, the `--top` functions by own time, µs per call;
  instructions  with `--callgrind`, run under callgrind with its instrumentation off at the
                start, one window only, instrumented (as bench/x402_profile.py does): the
                callgrind output's total divided by `--n` is the call's instruction count,
                which the machine's load does not move.

Run: `.venv/bin/python bench/credits_profile.py --db sqlite --profile`, or
`valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=credits.cg .venv/bin/python
bench/credits_profile.py --front --callgrind --n 400`
(`--db postgres` uses TOLLWAY_BENCH_POSTGRES_URL's server, a fresh database).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import create_database, drop_database, instrument, profiled  # noqa: E402
from paid_calls import ADMIN, LOOKUP, PATH, inprocess_service, setup_credits  # noqa: E402
from x402_profile import post  # noqa: E402

from tollway._core.basics.request import CallRequest  # noqa: E402
from tollway._runtime.service import http_app  # noqa: E402

TOOL = "vehicle_recalls"
AGENTS = 16
# (label, file suffix, function name): the parts of a call, inclusive time
PARTS = (
    ("the whole request in the app (ToolFront.__call__), with --front", "http_server/front.py", "__call__"),
    ("scope and body -> CallRequest (call_request), with --front", "http_server/translate.py", "call_request"),
    ("answer -> status, headers, body (answer_parts), with --front", "http_server/translate.py", "answer_parts"),
    ("the whole call (PaidCalls.call)", "calls/pipeline.py", "call"),
    ("rate limit (RateGate.limited's own hit)", "calls/ratelimits.py", "hit"),
    ("rate key (who counts)", "calls/rate_identity.py", "rate_key"),
    ("validate and price (prepare)", "calls/prepare.py", "prepare"),
    ("the caller (Authenticator.caller)", "auth/auth.py", "caller"),
    ("the nonce (consume_nonce)", "auth/auth.py", "consume_nonce"),
    ("credits read (ledger.credits_of)", "credits/ledger.py", "credits_of"),
    ("tool run (ToolRunner.run)", "calls/tool_runner.py", "run"),
    ("debit and ledger row (debit_credits)", "credits/ledger.py", "debit_credits"),
    ("receipt (PaidCalls._receipt)", "calls/pipeline.py", "_receipt"),
    ("of which the signature (ReceiptSigner.sign)", "receipts/receipt_signing.py", "sign"),
    ("of which the draft (PreparedCall.receipt)", "calls/prepare.py", "receipt"),
    ("facts (ToolRunner.record)", "calls/tool_runner.py", "record"),
    ("transaction enter", "database/sqlite_engine.py", "__aenter__"),
    ("transaction exit (commit wait included)", "database/sqlite_engine.py", "__aexit__"),
    ("answer body (_success)", "calls/pipeline.py", "_success"),
    ("statements (run_querystring, all)", "engine/sqlite.py", "run_querystring"),
    ("statements on PostgreSQL (run_querystring, all)", "engine/postgres.py", "run_querystring"),
    ("sqlite3 execute (the driver)", "~", "<method 'execute' of 'sqlite3.Connection' objects>"),
    ("sqlite3 fetchall", "~", "<method 'fetchall' of 'sqlite3.Cursor' objects>"),
)


def request(token: str) -> CallRequest:
    import msgspec

    return CallRequest(
        method="POST",
        path=PATH,
        url="http://bench.local" + PATH,
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        body=msgspec.json.encode(LOOKUP),
        client_ip="127.0.0.1",
    )


async def window(kernel: Any, app: Any, tokens: list[str], n: int, concurrency: int) -> None:
    """`n` calls, `concurrency` in flight: to the ASGI `app` when given, else to the kernel."""
    queue = iter(range(n))

    async def worker() -> None:
        for i in queue:
            token = tokens[i % len(tokens)]
            if app is not None:
                status, _, body = await post(app, [(b"authorization", f"Bearer {token}".encode())])
                assert status == 200, body
            else:
                answer = await kernel.paid_calls.call(TOOL, request(token))
                assert answer.status == 200, answer

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--windows", type=int, default=3, help="windows measured; the least is reported")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--dump", help="write the profile's raw stats to this file")
    parser.add_argument("--front", action="store_true", help="through the ASGI app `tollway serve` serves")
    parser.add_argument("--callgrind", action="store_true", help="under callgrind: instrument one window")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.db == "postgres":
            url = await create_database(ADMIN, "tollway_profile")
        else:
            url = f"sqlite:///{tmp}/db/tollway.db"
        try:
            async with inprocess_service(args.db, url, Path(tmp) / "home") as (kernel, client):
                auths = await setup_credits(client, 6 * args.n + 1000, 10_000, AGENTS)
                tokens = [a["Authorization"].removeprefix("Bearer ") for a in auths]
                app = http_app(kernel, manage_kernel=False) if args.front else None
                await window(kernel, app, tokens, 300, args.concurrency)  # warm: the upstream answer cached
                out: dict[str, Any] = {"db": args.db, "n": args.n, "front": args.front}
                if args.callgrind:  # instructions counted over one window: the output file's total
                    instrument("on")
                    await window(kernel, app, tokens, args.n, args.concurrency)
                    instrument("off")
                    out["callgrind"] = "total / n"
                    args.windows, args.profile = 0, False
                best = float("inf")
                for _ in range(args.windows):
                    start = time.process_time()
                    await window(kernel, app, tokens, args.n, args.concurrency)
                    best = min(best, (time.process_time() - start) / args.n * 1e6)
                if args.windows:
                    out["cpu_us"] = round(best, 1)
                if args.profile:
                    run = window(kernel, app, tokens, args.n, args.concurrency)
                    out.update(await profiled(lambda: run, PARTS, args.n, args.top, args.dump))
        finally:
            if args.db == "postgres":
                await drop_database(ADMIN, url)
    print(json.dumps({k: v for k, v in out.items() if k != "top"}, indent=1))
    for row in out.get("top", []):
        print(f"{row[1]:8.1f} µs  {row[2]:6.2f}×  {row[0]}")


if __name__ == "__main__":
    asyncio.run(main())
