"""SQL statements of one x402 paid resend, counted on SQLite and PostgreSQL.

Runs a kernel in process (the vehicle recall lookup, NHTSA replayed from the
recorded file), asks a 402 quote, then pays it, logging every statement the
engine runs during the 402 and the paid resend, and the commits of the pair (outermost
transactions, and writes run outside any); per database: the first payment of a wallet
(its agent record is made), a second one, and a third with the agent directory's
cache emptied (as in another process). A first paid call by another wallet goes
before, so the lookup's own history rows are not counted.

Run: `.venv/bin/python bench/x402_statements.py [--db sqlite|postgres|both] [--verbose]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import create_database, drop_database  # noqa: E402
from floor import StatementLog  # noqa: E402
from paid_calls import ADMIN, LOOKUP, OPERATOR, PATH, bench_env  # noqa: E402
from paid_server import replay_transport  # noqa: E402


async def paid_resend(
    client: httpx.AsyncClient, log: StatementLog, payer: Any, network: Any
) -> tuple[list[str], list[str], int]:
    """(the 402's statements, the paid resend's, the commits of both)."""
    from tollway._core.payments.eip3009 import make_payment_header, sign_authorization

    log.entries, log.commits, log.on = [], 0, True
    try:
        quote = await client.post(PATH, json=LOOKUP)
    finally:
        log.on = False
    assert quote.status_code == 402, quote.text
    asked = log.lines()
    required = json.loads(base64.b64decode(quote.headers["PAYMENT-REQUIRED"]))["accepts"][0]
    now = int(time.time())
    auth, sig = sign_authorization(
        payer,
        network,
        to=required["payTo"],
        value=int(required["amount"]),
        valid_after=now - 10,
        valid_before=now + 3600,
    )
    header = make_payment_header(network, required, auth, sig)
    log.entries, log.on = [], True
    try:
        paid = await client.post(
            PATH, json=LOOKUP, headers={"payment-signature": header, "X-Quote-ID": quote.json()["quote_id"]}
        )
    finally:
        log.on = False
    assert paid.status_code == 200, paid.text
    return asked, log.lines(), log.commits


async def one_database(db: str, url: str, home: Path, verbose: bool) -> dict[str, Any]:
    from eth_account import Account

    from tollway._core.payments.networks import get_network
    from tollway._runtime.plugins import load_entry_point_plugins
    from tollway._runtime.service import build_kernel, http_app
    from tollway._runtime.settings import load_settings

    kernel = build_kernel(load_settings(bench_env(home, url)), load_installed=False, http_transport=replay_transport())
    load_entry_point_plugins(kernel, strict=True, only={"tollway_vehicles"})
    await kernel.start()
    if db == "postgres":
        await kernel.db.truncate_all()
        await kernel.receipts.publish_key()
    try:
        log = StatementLog()
        log.install(kernel.db.engine)
        transport = httpx.ASGITransport(app=http_app(kernel, manage_kernel=False), client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as client:
            op = {"Authorization": f"Bearer {OPERATOR}"}
            first, payer = Account.create(), Account.create()
            for wallet in (first, payer):
                await client.post(
                    "/v1/tools/internal/chain/fund", json={"address": wallet.address, "amount": "1"}, headers=op
                )
            await paid_resend(
                client, log, first, get_network("local")
            )  # the lookup's history rows are written once, here
            row: dict[str, Any] = {"db": db}
            for name in ("first_payment", "returning_payer", "returning_payer_uncached"):
                if name == "returning_payer_uncached":  # another process: its agent directory has not seen the wallet
                    kernel.agents._by_wallet.clear()
                asked, lines, commits = await paid_resend(client, log, payer, get_network("local"))
                row[f"{name}_statements"] = len([line for line in lines if not line.startswith("--")])
                row[f"{name}_transactions"] = len([line for line in lines if line.startswith("--")])
                row[f"{name}_402_statements"] = len([line for line in asked if not line.startswith("--")])
                row[f"{name}_pair_commits"] = commits
                if verbose:
                    print(f"# {db} {name}: the 402", *asked, sep="\n    ", file=sys.stderr)
                    print(f"# {db} {name}: the paid resend", *lines, sep="\n    ", file=sys.stderr)
            return row
    finally:
        await kernel.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--verbose", action="store_true", help="print each statement on stderr")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.db in ("sqlite", "both"):
            print(
                json.dumps(await one_database("sqlite", f"sqlite:///{tmp}/s/tollway.db", Path(tmp) / "s", args.verbose))
            )
        if args.db in ("postgres", "both"):
            try:
                url = await create_database(ADMIN, "tollway_bench")
            except Exception:
                print(json.dumps({"db": "postgres", "skipped": "no PostgreSQL server answered"}))
                return
            try:
                print(json.dumps(await one_database("postgres", url, Path(tmp) / "p", args.verbose)))
            finally:
                await drop_database(ADMIN, url)


if __name__ == "__main__":
    asyncio.run(main())
