"""The `tollway` command (docs/settings.md)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path

import msgspec

from tollway._core.basics.money import AmountError, to_micro, usdc


def _serve(args: argparse.Namespace) -> int:
    if args.reload:
        from tollway._runtime.reload import serve_with_reload

        port = [] if args.port is None else ["--port", str(args.port)]
        processes = [] if args.processes == 1 else ["--processes", str(args.processes)]
        smtp = [] if args.smtp_port is None else ["--smtp-port", str(args.smtp_port)]
        return serve_with_reload(
            ["serve", "--host", args.host, *port, "--workers", str(args.workers), *processes, *smtp]
        )
    if args.processes < 1:
        print("tollway: --processes must be 1 or more", file=sys.stderr)
        return 2
    if args.smtp_port is not None:
        if args.processes > 1:
            print("tollway: --smtp-port runs in a single API process (--processes 1)", file=sys.stderr)
            return 2
        import os

        os.environ["TOLLWAY_EMAIL_INBOUND_PORT"] = str(args.smtp_port)  # the email plugin's inbound listener
    import uvicorn

    from tollway._runtime.proxies import uvicorn_proxy_options
    from tollway._runtime.service import build_kernel, http_app
    from tollway._runtime.settings import DEFAULT_PORT, load_settings

    settings = load_settings()
    if (refused := _refuse_layout(settings, processes=args.processes, role="serve")) is not None:
        return refused
    port = args.port
    if port is None:
        try:
            port = int(settings.env.get("TOLLWAY_PORT") or DEFAULT_PORT)
        except ValueError:
            print("tollway: TOLLWAY_PORT must be a port number", file=sys.stderr)
            return 2
    kernel = build_kernel(settings)
    if (unreachable := _database_unreachable(kernel)) is not None:
        return unreachable
    app = http_app(kernel, workers=args.workers, scheduler=True) if args.processes == 1 else None
    processes = f", {args.processes} processes" if args.processes > 1 else ""
    print(
        f"tollway: serving on http://{args.host}:{port} (network {settings.network}, database {settings.database_url}{processes})"
    )
    print(f"tollway: pay_to {settings.pay_to}")
    if settings.operator_token_generated:
        print(f"tollway: operator token (saved in {settings.home / 'operator_token'}): {settings.operator_token}")
    else:
        print(f"tollway: operator token in {settings.home / 'operator_token'} or TOLLWAY_OPERATOR_TOKEN")
    for name, err in kernel.plugin_failures.items():
        print(f"tollway: plugin {name} skipped: {err}", file=sys.stderr)
    if app is not None:
        uvicorn.run(
            app,
            host=args.host,
            port=port,
            workers=1,
            log_level="info",
            access_log=False,
            **uvicorn_proxy_options(settings.trusted_proxies),
        )
        return 0
    # Several processes, each with its own socket on the port (runtime/processes.py),
    # each building its own kernel from the factory's import name; the settings
    # (operator token, receipt key) were written once above.
    import os

    from tollway._runtime.processes import serve_processes
    from tollway._runtime.service import SERVE_JOB_WORKERS_ENV

    os.environ[SERVE_JOB_WORKERS_ENV] = str(args.workers)
    serve_processes(
        "tollway._runtime.service:serve_app",
        host=args.host,
        port=port,
        processes=args.processes,
        trusted_proxies=settings.trusted_proxies,
    )
    return 0


def _refuse_layout(settings, *, processes: int, role: str) -> int | None:
    """Exit 2 with one line when several processes would share the embedded database on a real network."""
    from tollway._runtime.production import layout_refusal

    refusal = layout_refusal(settings.env, settings.database_url, processes=processes, role=role)
    if refusal is None:
        return None
    print(f"tollway: {refusal}", file=sys.stderr)
    return 2


def _database_unreachable(kernel, timeout_s: float = 15.0) -> int | None:
    """Exit 1 with one line when the database does not answer, before anything says "serving"."""
    where = kernel.db.url.split("@")[-1]

    try:
        asyncio.run(asyncio.wait_for(kernel.db.reachable(timeout_s), timeout_s))
    except Exception as exc:  # any failure to reach it is the one line
        print(
            f"tollway: database {where} unreachable ({type(exc).__name__}: {exc or 'no answer'}); "
            "check TOLLWAY_DATABASE_URL (`tollway doctor` checks the whole configuration)",
            file=sys.stderr,
        )
        return 1
    return None


def _doctor(args: argparse.Namespace) -> int:
    """Check this configuration and print what to fix; exit 1 when something must be."""
    from tollway._runtime.doctor import diagnose, render
    from tollway._runtime.settings import read_env

    env = read_env()
    findings = diagnose(env, providers=not args.skip_providers, timeout_s=args.timeout)
    if args.json:
        print(json.dumps([dataclasses.asdict(f) for f in findings], indent=2))
    else:
        print(render(findings, env))
    failing = {"fail", "warn"} if args.strict else {"fail"}
    return 1 if any(f.status in failing for f in findings) else 0


def _mcp(args: argparse.Namespace) -> int:
    import os

    import anyio

    from tollway._mcp_server.server import McpSettings, identity_from_key
    from tollway._mcp_server.stdio import AGENT_KEY_ENV
    from tollway._runtime.service import build_kernel, run_mcp_stdio
    from tollway._runtime.settings import load_settings, read_env

    try:  # refuse a malformed TOLLWAY_MCP_* setting before touching stdio
        McpSettings.from_env(read_env())
    except ValueError as exc:
        print(f"tollway: {exc}", file=sys.stderr)
        return 2
    kernel = build_kernel(load_settings())
    for name, err in kernel.plugin_failures.items():
        print(f"tollway: plugin {name} skipped: {err}", file=sys.stderr)
    key = os.environ.get(AGENT_KEY_ENV)
    try:
        identity_from_key(key, 1)  # refuse a malformed key before touching stdio
    except ValueError as exc:
        print(f"tollway: {exc}", file=sys.stderr)
        return 2
    tools = None
    if args.tools is not None:  # refuse an unknown tool or family before touching stdio
        from tollway._mcp_server.selection import UnknownTools, resolve

        kernel.collect()
        try:
            tools = resolve(kernel, args.tools)
        except UnknownTools as exc:
            print(f"tollway: --tools: {exc}", file=sys.stderr)
            return 2
    anyio.run(lambda: run_mcp_stdio(kernel, agent_key=key, workers=args.workers, tools=tools))
    return 0


def _mcp_install(args: argparse.Namespace) -> int:
    from tollway._runtime.mcp_install import InstallError, run_install

    try:
        return run_install(args)
    except InstallError as exc:
        print(f"tollway: mcp install: {exc}", file=sys.stderr)
        return 2


def _worker(args: argparse.Namespace) -> int:
    import signal

    from tollway._runtime.service import build_kernel, run_worker
    from tollway._runtime.settings import load_settings

    settings = load_settings()
    if (refused := _refuse_layout(settings, processes=1, role="worker")) is not None:
        return refused
    kernel = build_kernel(settings, worker_only=True)
    if (unreachable := _database_unreachable(kernel)) is not None:
        return unreachable

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

        def ready(worker: object) -> None:
            print(
                f"tollway: worker {getattr(worker, 'worker_id', '?')} on {settings.database_url.split('@')[-1]}",
                flush=True,
            )

        await run_worker(kernel, concurrency=args.concurrency, lease_s=args.lease, stop=stop, ready=ready)

    import uvloop  # libuv event loop: the worker spends its time in database round trips

    uvloop.run(run())
    return 0


def _data_refresh(args: argparse.Namespace) -> int:
    """Download the data sources plugins declare (all, or the one named) now.

    Every failure is one line on stderr and a non-zero exit, never a traceback.
    The kernel starts as TOLLWAY_OFFLINE so plugins start no download of their
    own: this command is the one download.
    """
    import dataclasses

    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    try:
        kernel = build_kernel(dataclasses.replace(load_settings(), offline=True))
        kernel.collect()
    except Exception as exc:
        print(f"tollway: data refresh: {exc}", file=sys.stderr)
        return 2
    names = [args.source] if args.source else sorted(kernel.data_sources)
    unknown = [n for n in names if n not in kernel.data_sources]
    if unknown:
        known = ", ".join(sorted(kernel.data_sources)) or "none"
        print(f"tollway: no data source {unknown[0]!r} (known: {known})", file=sys.stderr)
        return 2

    def progress(done: int, total: int | None, what: str) -> None:
        if total:
            width = 30
            filled = int(width * min(done, total) / total)
            line = f"\r  {what:<20} [{'#' * filled}{'.' * (width - filled)}] {done * 100 // total:3d}%"
        else:
            line = f"\r  {what:<20} {done:>12,} bytes"
        print(line, end="", file=sys.stderr, flush=True)

    async def run() -> int:
        await kernel.start()
        try:
            failed = 0
            for name in names:
                print(f"{name}: {kernel.data_sources[name].description}", file=sys.stderr)
                try:
                    summary = await kernel.data_sources[name].refresh(kernel.context, progress)
                except Exception as exc:  # report in one line and go on with the next source
                    print(f"\n{name}: FAILED: {exc}", file=sys.stderr)
                    failed += 1
                    continue
                print(f"\n{name}: {summary}", file=sys.stderr)
            return 1 if failed else 0
        finally:
            await kernel.stop()

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        print("\ntollway: data refresh interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the database or a plugin's start-up failed
        print(f"tollway: data refresh: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _plugins(args: argparse.Namespace) -> int:
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    kernel = build_kernel(load_settings())
    kernel.collect()
    rows = []
    for tool in sorted(kernel.tools.values(), key=lambda t: t.name):
        price = "by input" if tool.fixed_price is None else usdc(tool.fixed_price)
        unset = [s.env_var for s in tool.unconfigured(kernel.family_settings(tool.family))]
        if tool.provider_kind is not None:
            unset += kernel.providers.status(tool.provider_kind).unset_settings
        rows.append(
            {
                "tool": tool.name,
                "path": tool.path,
                "price_usdc": price,
                "family": tool.family,
                "mode": tool.mode,
                "configured": not unset,
                "unset_settings": unset,
            }
        )
    kinds = tuple(t.provider_kind for t in kernel.tools.values() if t.provider_kind)
    providers = [dataclasses.asdict(p) for p in kernel.providers.statuses(also=kinds)]
    if args.check:
        from tollway._runtime.doctor import provider_health

        health = asyncio.run(provider_health(kernel, [p["kind"] for p in providers if p["configured"]]))
        for p in providers:
            if p["kind"] in health:
                p["health"] = health[p["kind"]] or "ok"
    if args.json:
        print(json.dumps({"tools": rows, "providers": providers, "failures": kernel.plugin_failures}, indent=2))
    else:
        for r in rows:
            note = f"  NOT CONFIGURED: set {', '.join(r['unset_settings'])}" if r["unset_settings"] else ""
            print(f"{r['tool']:32} {r['price_usdc']:>12}  POST {r['path']}  ({r['family']}){note}")
        for p in providers:
            state = "configured" if p["configured"] else f"NOT CONFIGURED: {p['problem']}"
            if "health" in p:
                state += f", health: {p['health']}"
            print(
                f"provider {p['kind']:23} {p['provider'] or '-':>12}  {state}  (installed: {', '.join(p['available']) or 'none'})"
            )
        for name, err in kernel.plugin_failures.items():
            print(f"FAILED {name}: {err}")
    return 1 if kernel.plugin_failures else 0


def _receipts_verify(args: argparse.Namespace) -> int:
    from tollway._core.receipts.receipt_signing import ReceiptSigner, b64url_decode, verify_receipt

    receipt = json.loads(Path(args.file).read_text())
    if isinstance(receipt, dict) and "data" in receipt and "receipt_id" not in receipt:
        receipt = receipt["data"]
    keys: dict[str, bytes] = {}
    if args.keys:
        doc = json.loads(Path(args.keys).read_text())
        for k in doc.get("keys", []):
            keys[k["key_id"]] = b64url_decode(k["public_key"])
    else:
        from tollway._runtime.settings import load_settings

        signer = ReceiptSigner(load_settings().receipt_seed)
        keys[signer.key_id] = signer.public_key
    ok, reason = verify_receipt(receipt, keys)
    which = f"receipt {receipt.get('receipt_id', '(no receipt_id)')}" if isinstance(receipt, dict) else "the file"
    if ok:
        print(f"valid: {which} is signed by key {receipt['key_id']} and unchanged since it was signed")
    else:
        print(f"INVALID: {which}: {reason}")
    return 0 if ok else 1


def _dev_fund(args: argparse.Namespace) -> int:
    """Mint test USDC through the running service's operator route, so the funds land
    in the database that service uses (never in a `./.tollway` of the folder this
    command happens to run in)."""
    import httpx

    from tollway._runtime.settings import find_operator_token, read_env, service_url

    try:
        to_micro(args.amount)
    except AmountError as exc:
        print(f"tollway: {exc}", file=sys.stderr)
        return 2
    env = read_env()
    url = (args.url or service_url(env)).rstrip("/")
    token, token_from = find_operator_token(env)
    if token is None:
        print(
            f"tollway: no operator token: set TOLLWAY_OPERATOR_TOKEN, or TOLLWAY_HOME to the folder of the running "
            f"service (its operator_token file; {token_from} does not exist)",
            file=sys.stderr,
        )
        return 2
    route = f"{url}/v1/tools/internal/chain/fund"
    try:
        resp = httpx.post(
            route,
            json={"address": args.address, "amount": args.amount},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
    except httpx.HTTPError as exc:
        print(
            f"tollway: no Tollway service answered at {url} ({type(exc).__name__}: {exc or 'no answer'}). Start one "
            f"(`tollway serve` or `make run`), or point at it with --url or TOLLWAY_URL (or TOLLWAY_PORT).",
            file=sys.stderr,
        )
        return 1
    try:
        body = resp.json()
    except ValueError:
        body = None
    if resp.status_code == 200 and isinstance(body, dict) and "on_chain_balance" in body:
        print(json.dumps(body))
        return 0
    message = body.get("message") if isinstance(body, dict) else None
    if resp.status_code == 401:
        message = f"the operator token from {token_from} was refused; use the token of the service at {url}"
    print(
        f"tollway: {url} answered {resp.status_code}: {message or resp.text[:200] or 'not a Tollway service?'}",
        file=sys.stderr,
    )
    return 2


def _reconcile(args: argparse.Namespace) -> int:
    """Resolve intermediate money states now; print what was done, pending and wrong."""
    import dataclasses

    from tollway._core.credits.ledger_check import check_ledger
    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    # a one-shot command: no background downloads at start-up
    settings = dataclasses.replace(load_settings(), offline=True)
    kernel = build_kernel(settings)

    async def run() -> dict:
        await kernel.start()
        try:
            done = await kernel.reconciler.run_once(grace_s=args.grace)
            report = {"reconciled": done, **msgspec.to_builtins(await kernel.reconciler.pending())}
            if args.check:
                report["ledger_problems"] = await check_ledger(max_intermediate_age_s=settings.reconcile_after_s)
            return report
        finally:
            await kernel.stop()

    report = asyncio.run(run())
    print(json.dumps(report, indent=2))
    return 1 if report.get("ledger_problems") else 0


def _db_migrate(args: argparse.Namespace) -> int:
    """Apply the pending schema migrations (the kernel's, then the plugins') and exit.

    `serve`, `worker` and `mcp` do the same at start; this is for a deploy step
    that migrates once before the new release's processes start."""
    import dataclasses

    from tollway._runtime.service import build_kernel
    from tollway._runtime.settings import load_settings

    settings = dataclasses.replace(load_settings(), offline=True)
    kernel = build_kernel(settings)
    where = settings.database_url.split("@")[-1]

    async def run() -> list:
        await kernel.db.connect()
        try:
            return await kernel.db.migrate(kernel.pm)
        finally:
            await kernel.db.close()

    try:
        applied = asyncio.run(run())
    except Exception as exc:  # a migration or the database failed: one line, not a traceback
        print(f"tollway: db migrate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    for step in applied:
        print(f"applied {step}")
    print(
        f"tollway: database {where} is up to date ({len(applied)} migration{'' if len(applied) == 1 else 's'} applied)"
    )
    for name, err in kernel.plugin_failures.items():
        print(f"tollway: plugin {name} skipped (its migrations too): {err}", file=sys.stderr)
    return 0


def _new_plugin(args: argparse.Namespace) -> int:
    from tollway._runtime.template import TemplateError, install_command, render_plugin

    try:
        target = render_plugin(args.name, Path(args.dir) if args.dir else None)
    except TemplateError as exc:
        print(f"tollway: {exc}", file=sys.stderr)
        return 2
    print(f"tollway: plugin rendered into {target}")
    print(f"tollway: install it (seconds: the plugin alone): {install_command(target)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tollway", description="Tollway: paid tools for autonomous agents.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the HTTP API (and MCP at /mcp) on the configured database")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=None, help="default TOLLWAY_PORT, else 8402")
    p.add_argument("--workers", type=int, default=1, help="in-process job workers (0: leave jobs to `tollway worker`)")
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="API processes sharing the port (each with --workers job workers and the scheduler); more than 1 wants PostgreSQL",
    )
    p.add_argument(
        "--reload",
        action="store_true",
        help="development: restart when a plugin's source changes or a plugin is installed",
    )
    p.add_argument(
        "--smtp-port",
        type=int,
        default=None,
        help="also receive inbound email (replies to agents' messages) by SMTP on this port",
    )
    p.set_defaults(func=_serve)

    p = sub.add_parser(
        "mcp",
        help="speak MCP on stdio, paying as TOLLWAY_AGENT_KEY: an access token, or a wallet private key that pays by x402 up to TOLLWAY_MCP_MAX_PAYMENT_USDC a call",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="in-process job workers (0: leave jobs to `tollway serve`/`tollway worker`)",
    )
    p.add_argument("--tools", help="serve only these tools and families, comma-separated (e.g. sanctions,solve)")
    p.set_defaults(func=_mcp)
    msub = p.add_subparsers(dest="mcp_command", metavar="[install]")
    i = msub.add_parser(
        "install",
        help="write this server into an MCP client's configuration (claude-desktop, cursor, vscode, claude-code)",
    )
    i.add_argument("client", help="claude-desktop, cursor, vscode or claude-code")
    who = i.add_mutually_exclusive_group()
    who.add_argument(
        "--agent-key", help="who pays: an access token or a wallet private key (default TOLLWAY_AGENT_KEY)"
    )
    who.add_argument("--token", help="who pays: an access token tw_at_...")
    # SUPPRESS: `tollway mcp --tools X install` keeps the outer flag (a default here would overwrite it)
    i.add_argument("--tools", default=argparse.SUPPRESS, help="only these tools and families, comma-separated")
    i.add_argument("--name", default="tollway", help="the server's name in the client (default tollway)")
    i.add_argument(
        "--scope", choices=("user", "project"), help="the client's user-wide file (default) or this folder's"
    )
    i.add_argument("--path", help="write this file instead of the client's own")
    i.add_argument("--print", action="store_true", dest="print_only", help="show the JSON entry, write nothing")
    i.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="another setting for the server")
    i.set_defaults(func=_mcp_install)

    p = sub.add_parser("worker", help="run a job worker only (any number, on any machine, sharing one PostgreSQL)")
    p.add_argument("--concurrency", type=int, default=8, help="jobs run at once by this process")
    p.add_argument("--lease", type=float, default=30.0, help="seconds a claimed job stays ours without a heartbeat")
    p.set_defaults(func=_worker)

    p = sub.add_parser(
        "reconcile", help="resolve holds, payments and top-ups left half done (the periodic reconciler, once, now)"
    )
    p.add_argument(
        "--grace",
        type=float,
        default=None,
        help="seconds an intermediate state must be old (default TOLLWAY_RECONCILE_AFTER_S)",
    )
    p.add_argument(
        "--check", action="store_true", help="also check that the ledger reconciles to the balances (exit 1 if not)"
    )
    p.set_defaults(func=_reconcile)

    p = sub.add_parser("plugins", help="list loaded tools, prices, providers and plugin failures")
    p.add_argument("--json", action="store_true")
    p.add_argument("--check", action="store_true", help="also run each configured provider's health check")
    p.set_defaults(func=_plugins)

    p = sub.add_parser("new-plugin", help="render the plugin template into a new plugin folder")
    p.add_argument("name", help="family name, e.g. weather")
    p.add_argument("--dir", help="target folder (default: plugins/<name> in a checkout, else ./tollway-<name>)")
    p.set_defaults(func=_new_plugin)

    p = sub.add_parser("receipts", help="receipt tools")
    rsub = p.add_subparsers(dest="receipts_command", required=True)
    v = rsub.add_parser("verify", help="verify a served receipt offline (exit 0 valid, 1 not)")
    v.add_argument("file")
    v.add_argument("--keys", help="JSON of GET /v1/receipts/keys (default: this TOLLWAY_HOME's key)")
    v.set_defaults(func=_receipts_verify)

    p = sub.add_parser("data", help="downloadable data plugins keep under TOLLWAY_HOME")
    dsub = p.add_subparsers(dest="data_command", required=True)
    r = dsub.add_parser("refresh", help="download now (all sources, or SOURCE, e.g. sanctions)")
    r.add_argument("source", nargs="?")
    r.set_defaults(func=_data_refresh)

    p = sub.add_parser("db", help="the service's database")
    dbsub = p.add_subparsers(dest="db_command", required=True)
    m = dbsub.add_parser("migrate", help="apply pending schema migrations (kernel, then plugins), as every start does")
    m.set_defaults(func=_db_migrate)

    p = sub.add_parser("dev", help="local test network helpers")
    dsub = p.add_subparsers(dest="dev_command", required=True)
    f = dsub.add_parser("fund", help="mint test USDC to ADDRESS on the running service's local network")
    f.add_argument("address")
    f.add_argument("amount", help="USDC, e.g. 10 or 0.5")
    f.add_argument(
        "--url", help="the running service (default TOLLWAY_URL, else http://127.0.0.1:<TOLLWAY_PORT or 8402>)"
    )
    f.set_defaults(func=_dev_fund)

    p = sub.add_parser(
        "doctor",
        help="check this configuration (settings, database, facilitator, providers, clock) and say what to fix",
    )
    p.add_argument("--json", action="store_true", help="the findings as JSON")
    p.add_argument("--strict", action="store_true", help="warnings also fail (exit 1)")
    p.add_argument("--skip-providers", action="store_true", help="do not run the providers' health checks")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds each remote check may take")
    p.set_defaults(func=_doctor)

    args = parser.parse_args(argv)
    from tollway._runtime.settings import SettingsError

    try:
        return int(args.func(args) or 0)
    except SettingsError as exc:  # a setting that stops start-up: one line naming it, no traceback
        print(f"tollway: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
