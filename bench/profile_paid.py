"""Where a paid call's server CPU goes: a cProfile (timed by process CPU) of the bench's
service under uvicorn, over credits calls and then x402 pairs, printed as µs per request
of the parts named in `PARTS` (inclusive times; the profiler inflates Python code, so
compare the rows, not the totals, with `bench/paid_calls.py`).

Run: `.venv/bin/python bench/profile_paid.py [--n 2000] [--db sqlite|postgres] [--top 25]`.
The server profiles only between SIGUSR1 and SIGUSR2 (the setup and the warm-up are left out).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import profile_parts, profile_top  # noqa: E402
from paid_calls import ADMIN, WARM, bench_env, paid_paths, setup_payers  # noqa: E402
from serving import drive, ramp_calls, ramp_up, served  # noqa: E402

PROFILE_ENV = "TOLLWAY_BENCH_PROFILE_TO"  # where the server writes each profile (a number appended)

# (label, file suffix, function name): inclusive CPU of each, per request
PARTS = [
    ("uvicorn's run_asgi: the whole request in the app", "uvicorn/protocols/http/httptools_impl.py", "run_asgi"),
    ("Litestar's app", "litestar/app.py", "__call__"),
    ("the lean front (http_server/front.py)", "http_server/front.py", "__call__"),
    ("request -> CallRequest (Litestar's route: to_call_request)", "http_server/translate.py", "to_call_request"),
    ("scope and body -> CallRequest (call_request)", "http_server/translate.py", "call_request"),
    ("the kernel's paid call (PaidCalls.call)", "core/calls/pipeline.py", "call"),
    ("answer -> ASGI (Litestar's route: answer_asgi)", "http_server/translate.py", "answer_asgi"),
    ("answer -> status, headers, body (answer_parts)", "http_server/translate.py", "answer_parts"),
    ("ServiceError -> Response (service_error_handler)", "http_server/translate.py", "service_error_handler"),
]


def app() -> Any:
    """The bench's service (`paid_server.app`) with a profiler switched on by SIGUSR1 and
    off (its stats written) by SIGUSR2, in the serving process itself."""
    import cProfile

    from paid_server import app as service

    target = os.environ[PROFILE_ENV]
    state: dict[str, Any] = {"n": 0}

    def start(*_: Any) -> None:
        state["profile"] = cProfile.Profile(time.process_time)
        state["profile"].enable()

    def stop(*_: Any) -> None:
        state["profile"].disable()
        state["profile"].dump_stats(f"{target}.{state['n']}")
        state["n"] += 1

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    return service()


def report(path: str, requests: int, title: str, top: int) -> None:
    stats = pstats.Stats(path)
    print(f"\n== {title}: µs per request, inclusive (profiled; {requests} requests)")
    for label, us in profile_parts(stats, PARTS, requests).items():
        print(f"  {us:9.1f}  {label}")
    print(f"  -- top {top} by own time (µs per request)")
    for where, us, _calls in profile_top(stats, requests, top):
        print(f"  {us:9.1f}  {where}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="credits calls profiled (x402: n/2 pairs)")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    n, concurrency, agents = args.n, args.concurrency, args.concurrency
    pairs = n // 2
    with tempfile.TemporaryDirectory() as tmp:
        if args.db == "postgres":
            from common import create_database, drop_database

            url = await create_database(ADMIN, "tollway_profile")
        else:
            url = f"sqlite:///{tmp}/tollway.db"
        out = f"{tmp}/profile"
        env = {**bench_env(Path(tmp) / "home", url), PROFILE_ENV: out}
        try:
            async with served("profile_paid:app", env=env, concurrency=concurrency, ready_path="/healthz") as client:
                tokens, payments = await setup_payers(client, n + ramp_calls(concurrency), pairs + WARM, 5000, agents)
                credits_call, x402_call = paid_paths(client, tokens, payments)
                await ramp_up(concurrency, credits_call)
                await drive(WARM, concurrency, lambda i: x402_call(pairs + i))
                for run, count in ((credits_call, n), (x402_call, pairs)):
                    os.kill(client.server_pid, signal.SIGUSR1)
                    await asyncio.sleep(0.2)
                    await drive(count, concurrency, run)
                    os.kill(client.server_pid, signal.SIGUSR2)
                    await asyncio.sleep(0.5)
        finally:
            if args.db == "postgres":
                await drop_database(ADMIN, url)
        report(f"{out}.0", n, "credits call", args.top)
        report(f"{out}.1", 2 * pairs, "x402 pair, per request (402 or paid resend)", args.top)


if __name__ == "__main__":
    asyncio.run(main())
