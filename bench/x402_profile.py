"""One x402 pair (the 402, then the paid resend) in process, straight through the ASGI app
`tollway serve` serves (the lean front, http_server/front.py), with no HTTP server or client.

Builds the paid-call bench's kernel (`bench/paid_calls.py`: the vehicles plugin alone, NHTSA
replayed, the local test network), pre-signs the payments of 16 wallets, and prints:
  cpu_us        process CPU per pair (`time.process_time`), `--concurrency` pairs in flight,
                the least of `--windows` windows of `--n` pairs, no profiler;
  parts         with `--profile`, a cProfile over one more window, its clock the process's CPU
                time: inclusive µs per pair of the functions that make up a pair (the profiler
                inflates Python code, so compare rows between runs, not with `cpu_us`);
  top           with `--profile`, the `--top` functions by own time, µs per pair;
  instructions  with `--callgrind`, run under callgrind with its instrumentation off at the
                start, one window only, instrumented (`callgrind_control -i on`, then off):
                the callgrind output's total divided by `--n` is the pair's instruction count,
                which the machine's load does not move.

The answers are checked (402 with its PAYMENT-REQUIRED header, then 200 with PAYMENT-RESPONSE).
Run: `.venv/bin/python bench/x402_profile.py --db sqlite --profile`, or
`valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=x402.cg .venv/bin/python
bench/x402_profile.py --callgrind --n 200` (then `callgrind_annotate x402.cg | head`)
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
from paid_calls import ADMIN, LOOKUP, PATH, bench_env, setup_payers  # noqa: E402
from paid_server import bench_kernel  # noqa: E402

WALLETS = 16
PRICE = 5000  # micro-USDC a lookup costs (funds per payment)
BODY = json.dumps(LOOKUP).encode()
# (label, file suffix, function name): the parts of a pair, inclusive time
PARTS = (
    ("the whole pair in the app (ToolFront.__call__)", "http_server/front.py", "__call__"),
    ("the kernel's calls (PaidCalls.call)", "calls/pipeline.py", "call"),
    ("scope and body -> CallRequest (call_request)", "http_server/translate.py", "call_request"),
    ("rate limit (RateGate.limited's own hit)", "calls/ratelimits.py", "hit"),
    ("rate key (rate_key: the payer recovered)", "calls/rate_identity.py", "rate_key"),
    ("validate and price (prepare)", "calls/prepare.py", "prepare"),
    ("the caller of the 402 (Authenticator.caller)", "auth/auth.py", "caller"),
    ("the 402's quote and body (X402Gateway.payment_required)", "payments/gateway.py", "payment_required"),
    ("of which the quote id (QuoteBook.mint)", "payments/quotes.py", "mint"),
    ("the 402 -> Response (service_error_handler)", "http_server/translate.py", "service_error_handler"),
    ("the 402 Response rendered (Response.render)", "litestar/response/base.py", "render"),
    ("payment decoded (decode_payment_header)", "payments/x402_decode.py", "decode_payment_header"),
    ("payment accepted (X402Gateway.accept)", "payments/gateway.py", "accept"),
    ("of which the quote checked (QuoteBook.check)", "payments/quotes.py", "check"),
    ("of which the signature (verify_authorization)", "payments/eip3009.py", "verify_authorization"),
    ("of which the EIP-712 digest (authorization_digest)", "payments/eip3009.py", "authorization_digest"),
    ("of which the payer's funds (backend.verify)", "payments/settlement.py", "verify"),
    ("of which the reservation (X402Gateway.reserve)", "payments/gateway.py", "reserve"),
    ("the agent of the wallet (AgentDirectory.for_wallet)", "auth/agents.py", "for_wallet"),
    ("tool run (ToolRunner.run)", "calls/tool_runner.py", "run"),
    ("settle and record (PaidCalls._settle_and_record)", "calls/pipeline.py", "_settle_and_record"),
    ("of which the transfer (LocalSettlement.settle)", "payments/settlement.py", "settle"),
    ("of which the receipt (PaidCalls._receipt)", "calls/pipeline.py", "_receipt"),
    ("of which the facts (ToolRunner.record)", "calls/tool_runner.py", "record"),
    ("the SettleResponse (X402Gateway.settlement)", "payments/gateway.py", "settlement"),
    ("answer -> status, headers, body (answer_parts)", "http_server/translate.py", "answer_parts"),
    ("keccak (eth_hash, all)", "eth_hash/main.py", "__call__"),
    ("statements on SQLite (run_querystring, all)", "engine/sqlite.py", "run_querystring"),
    ("statements on PostgreSQL (run_querystring, all)", "engine/postgres.py", "run_querystring"),
    ("sqlite3 execute (the driver)", "~", "<method 'execute' of 'sqlite3.Connection' objects>"),
)


def scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """The ASGI scope uvicorn gives a POST of the lookup (with `headers` after its own)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 40000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
            *headers,
        ],
        "state": {},
    }


async def post(app: Any, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[bytes, bytes], bytes]:
    """The lookup POSTed to `app`: (status, headers, body) of its answer."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope(headers), receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


async def pair(app: Any, payment: str) -> None:
    status, headers, body = await post(app, [])
    assert status == 402 and b"payment-required" in headers, body
    quote_id = json.loads(body)["quote_id"]
    status, headers, body = await post(
        app, [(b"payment-signature", payment.encode()), (b"x-quote-id", quote_id.encode())]
    )
    assert status == 200 and b"payment-response" in headers, body


async def window(app: Any, payments: list[str], start: int, n: int, concurrency: int) -> None:
    queue = iter(range(start, start + n))

    async def worker() -> None:
        for i in queue:
            await pair(app, payments[i])

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def measure(db: str, url: str, home: Path, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    from tollway._runtime.service import http_app
    from tollway._runtime.settings import load_settings

    kernel = bench_kernel(load_settings(bench_env(home, url)))
    await kernel.start()
    if db == "postgres":
        await kernel.db.truncate_all()
        await kernel.receipts.publish_key()
    try:
        app = http_app(kernel, manage_kernel=False)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        warm = 100
        windows = 0 if args.callgrind else args.windows
        total = warm + (windows + (1 if args.profile or args.callgrind else 0)) * args.n
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as client:
            _, payments = await setup_payers(client, 0, total, PRICE, WALLETS)
        await window(app, payments, 0, warm, args.concurrency)  # warm: the upstream answer cached, facts recorded
        done, best = warm, float("inf")
        if args.callgrind:  # instructions counted over one window: the output file's total
            instrument("on")
            await window(app, payments, done, args.n, args.concurrency)
            instrument("off")
            return {"db": db, "n": args.n, "concurrency": args.concurrency, "callgrind": "total / n"}
        for _ in range(windows):
            start = time.process_time()
            await window(app, payments, done, args.n, args.concurrency)
            best = min(best, (time.process_time() - start) / args.n * 1e6)
            done += args.n
        out: dict[str, Any] = {"db": db, "n": args.n, "concurrency": args.concurrency, "cpu_us": round(best, 1)}
        if args.profile:
            run = window(app, payments, done, args.n, args.concurrency)
            out.update(await profiled(lambda: run, PARTS, args.n, args.top, args.dump))
        return out
    finally:
        await kernel.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--n", type=int, default=1000, help="pairs per window")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--windows", type=int, default=3, help="windows measured; the least is reported")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--dump", help="write the profile's raw stats to this file")
    parser.add_argument("--callgrind", action="store_true", help="under callgrind: instrument one window")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = await create_database(ADMIN, "tollway_profile") if args.db == "postgres" else f"sqlite:///{tmp}/db/t.db"
        try:
            out = await measure(args.db, url, Path(tmp) / "home", args)
        finally:
            if args.db == "postgres":
                await drop_database(ADMIN, url)
    print(json.dumps({k: v for k, v in out.items() if k != "top"}, indent=1))
    for where, us, calls in out.get("top", []):
        print(f"{us:8.1f} µs  {calls:6.2f}×  {where}")


if __name__ == "__main__":
    asyncio.run(main())
