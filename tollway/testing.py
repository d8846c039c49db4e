"""Test support shipped with the kernel (loaded as a pytest plugin: `-p tollway.testing`).

Fixtures build a fresh kernel per test on SQLite and, when
TOLLWAY_TEST_DATABASE_URL names a PostgreSQL server, on a database of its own
for this run. `PluginContract` is the contract suite every tool plugin runs on
itself: subclass it in the plugin's tests and set `plugin` to its entry-point name.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import re
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

PG_ENV = "TOLLWAY_TEST_DATABASE_URL"


# -- databases -------------------------------------------------------------------
def _pg_admin_url() -> str | None:
    return os.environ.get(PG_ENV) or None


_PG_DB: dict[str, str] = {}


async def _pg_create(admin_url: str) -> str:
    import asyncpg

    name = f"tollway_t_{os.getpid()}_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(admin_url.replace("postgres://", "postgresql://", 1))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        # Commits of this throwaway database do not wait for the WAL to reach the disk
        # (each waited 4-9 ms here): what a test sees is the same, only a crash of the
        # server itself could lose the last commits, and no test crashes the server.
        await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    finally:
        await conn.close()
    base = admin_url.rsplit("/", 1)[0]
    return f"{base}/{name}"


async def _pg_drop(admin_url: str, url: str) -> None:
    import asyncpg

    name = url.rsplit("/", 1)[1]
    conn = await asyncpg.connect(admin_url.replace("postgres://", "postgresql://", 1))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def _run_outside_loop(coro: Any) -> Any:
    """asyncio.run in a helper thread: callers may sit inside a running loop."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def postgres_url_for_run() -> str | None:
    """One PostgreSQL database per test run (created lazily, dropped at exit)."""
    admin = _pg_admin_url()
    if not admin:
        return None
    if "url" not in _PG_DB:
        _PG_DB["url"] = _run_outside_loop(_pg_create(admin))
    return _PG_DB["url"]


def _shared_default_ssl_context() -> None:
    """Every httpx client of the test process that verifies against the default CA bundle
    shares one SSL context. Each test's kernel makes two clients (upstream calls and
    webhooks), and parsing the bundle for each took more CPU than many a test's own
    work; the context is the same every time, and one context serves any number of
    connections (one per bundle: SSL_CERT_FILE/SSL_CERT_DIR or certifi's). A client
    given its own context (`verify=ctx`) still gets exactly that."""
    from httpx._transports import default

    create = default.create_ssl_context
    if getattr(create, "shared_default", False):
        return
    shared: dict[tuple[str, str], Any] = {}

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert:
            return create(verify=verify, cert=cert, trust_env=trust_env)
        # the bundle httpx reads: SSL_CERT_FILE or SSL_CERT_DIR when trusted, else certifi's
        where = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", "")) if trust_env else ("", "")
        if where not in shared:
            shared[where] = create(verify=True, trust_env=trust_env)
        return shared[where]

    create_ssl_context.shared_default = True  # type: ignore[attr-defined]
    default.create_ssl_context = create_ssl_context  # type: ignore[assignment]


def pytest_configure(config: Any) -> None:
    _shared_default_ssl_context()


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _SQLITE_TEMPLATES_DIR:
        import shutil

        shutil.rmtree(_SQLITE_TEMPLATES_DIR.pop(), ignore_errors=True)
        _SQLITE_TEMPLATE.clear()
    admin = _pg_admin_url()
    if admin and "url" in _PG_DB:
        with contextlib.suppress(Exception):
            _run_outside_loop(_pg_drop(admin, _PG_DB.pop("url")))


def database_params() -> list[Any]:
    params: list[Any] = [pytest.param("sqlite", id="sqlite")]
    params.append(pytest.param("postgres", id="postgres", marks=pytest.mark.postgres))
    return params


@pytest.fixture(params=database_params())
def db_kind(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres" and not _pg_admin_url():
        pytest.fail(f"{PG_ENV} is not set: the PostgreSQL tests need the machine's server (make test sets it)")
    return request.param


def settings_for(tmp_path: Path, db_kind: str, **env: str):
    from tollway._runtime.settings import load_settings

    home = tmp_path / "home"
    url = f"sqlite:///{home / 'tollway.db'}" if db_kind == "sqlite" else postgres_url_for_run()
    base = {
        "TOLLWAY_HOME": str(home),
        "TOLLWAY_DATABASE_URL": url,
        "TOLLWAY_NETWORK": "local",
        "TOLLWAY_OPERATOR_TOKEN": "test-operator-token",
        "TOLLWAY_RECEIPT_KEY": base64.b64encode(b"\x07" * 32).decode(),
        # tests never reach the internet: no background downloads at start-up
        "TOLLWAY_OFFLINE": "1",
        "TOLLWAY_DOTENV": "0",  # processes started with these settings read no .env file
    }
    base.update(env)
    if base["TOLLWAY_NETWORK"] != "local":
        # A real network generates nothing: the receiving wallet (which also pays out)
        # and the facilitator are set, as an operator sets them.
        from eth_account import Account

        key = "0x" + hashlib.sha256(f"tollway-test-wallet:{home}".encode()).hexdigest()
        base.setdefault("TOLLWAY_PAY_TO", Account.from_key(key).address)
        if "TOLLWAY_PAY_TO" not in env:
            base.setdefault("TOLLWAY_PAYOUT_KEY", key)
        base.setdefault("TOLLWAY_FACILITATOR_URL", "http://127.0.0.1:9/")  # no facilitator: nothing answers
        if base["TOLLWAY_NETWORK"] == "base":
            base.setdefault("TOLLWAY_CHAIN_RPC_URL", "http://127.0.0.1:9/")
    return load_settings(base)


# The sets of migration apps (name, folder) this run's PostgreSQL database was migrated for,
# each with the statement that empties its tables.
_PG_MIGRATED: dict[tuple[tuple[str, str], ...], str] = {}


async def _empty_postgres(url: str, plugins: Any = None) -> None:
    """Migrate this run's database and empty every table (the kernel's and those of
    the migration apps of `plugins`, a kernel's plugin manager) before a test starts.

    A set of apps is migrated once per run (its migrations cannot change meanwhile);
    the tables are then emptied over one connection in one round trip, in the order
    `Database.truncate_all` would delete them."""
    import asyncpg

    from tollway._runtime.database import Database

    key = _migration_apps_key(plugins)
    if key not in _PG_MIGRATED:
        db = Database.from_url(url)
        await db.connect()
        try:
            await db.migrate(plugins)
        finally:
            await db.close()
        _PG_MIGRATED[key] = "; ".join(f"DELETE FROM {table._meta.get_formatted_tablename()}" for table in db._tables)
    conn = await asyncpg.connect(url.replace("postgres://", "postgresql://", 1))
    try:
        await conn.execute(_PG_MIGRATED[key])
    finally:
        await conn.close()


def _migration_apps_key(plugins: Any) -> tuple[tuple[str, str], ...]:
    """The migration apps (name, folder) of `plugins`, a kernel's plugin manager (none: the kernel's own)."""
    from tollway._runtime.database.migrations import plugin_apps

    apps = plugin_apps(plugins) if plugins is not None else []
    return tuple((app.app_name, str(app.resolved_migrations_folder_path)) for app in apps)


# The migrated SQLite files new test databases are copied from, one per set of migration
# apps (`_migration_apps_key`), all in one temporary folder removed at exit.
_SQLITE_TEMPLATE: dict[tuple[tuple[str, str], ...], Path] = {}
_SQLITE_TEMPLATES_DIR: list[Path] = []


async def _sqlite_from_template(url: str, plugins: Any = None) -> None:
    """Start a new SQLite database as a copy of one migrated once per test process for the
    same migration apps (the kernel's and those of `plugins`, a kernel's plugin manager):
    copying a file is cheaper than applying every migration for every test, and a plugin's
    own migrations (its tables) were applied again by each of its tests' kernels."""
    import shutil
    import tempfile

    from tollway._runtime.database import Database, parse_database_url

    target = Path(parse_database_url(url)[1]["path"])
    if target.exists():
        return
    key = _migration_apps_key(plugins)
    if key not in _SQLITE_TEMPLATE:
        if not _SQLITE_TEMPLATES_DIR:
            _SQLITE_TEMPLATES_DIR.append(Path(tempfile.mkdtemp(prefix="tollway-schema-")))
        path = _SQLITE_TEMPLATES_DIR[0] / f"template-{len(_SQLITE_TEMPLATE)}.db"
        db = Database.from_url(f"sqlite:///{path}")
        await db.connect()
        try:
            await db.migrate(plugins)
        finally:
            await db.close()
        _SQLITE_TEMPLATE[key] = path
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_SQLITE_TEMPLATE[key], target)


_ENTRY_POINTS: dict[tuple[str, ...], Any] = {}


def _installed_entry_points() -> Any:
    """The `tollway` entry points installed on this `sys.path`, read once per path (reading
    every distribution's metadata took 9 ms, for each kernel of each test)."""
    import sys
    from importlib.metadata import entry_points

    from tollway._runtime.plugins import GROUP

    key = tuple(sys.path)
    if key not in _ENTRY_POINTS:
        _ENTRY_POINTS.clear()
        _ENTRY_POINTS[key] = entry_points(group=GROUP)
    return _ENTRY_POINTS[key]


@pytest.fixture
async def kernel_factory(tmp_path: Path, db_kind: str) -> AsyncIterator[Any]:
    """`await kernel_factory(plugins=[...], installed={...}, transport=..., env={...})` -> started Kernel.

    Installed plugins load only when named in `installed` (strict mode).
    PostgreSQL tables are emptied before the first kernel of each test, so tests
    never see each other's rows; a new SQLite database starts as a copy of one
    migrated once per run for the same plugins' migrations. Every kernel is stopped
    after the test.
    """
    from tollway._runtime.plugins import load_entry_point_plugins
    from tollway._runtime.service import build_kernel

    made: list[Any] = []

    async def make(
        *,
        plugins: list[tuple[str, object]] | None = None,
        installed: set[str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        env: dict[str, str] | None = None,
        start: bool = True,
    ) -> Any:
        settings = settings_for(tmp_path, db_kind, **(env or {}))
        kernel = build_kernel(
            settings, plugins=plugins, load_installed=False, http_transport=transport, strict_plugins=True
        )
        if installed:
            load_entry_point_plugins(kernel, strict=True, only=installed, found=_installed_entry_points())
        if db_kind == "postgres" and not made:
            await _empty_postgres(settings.database_url, kernel.pm)
        elif db_kind == "sqlite" and settings.database_url.startswith("sqlite:"):
            await _sqlite_from_template(settings.database_url, kernel.pm)
        made.append(kernel)
        if start:
            await kernel.start()
        return kernel

    yield make
    for k in made:
        await k.stop()


@contextlib.asynccontextmanager
async def http_client(kernel: Any) -> AsyncIterator[Any]:
    """An httpx client over the ASGI app built for `kernel` (kernel already started).

    httpx's ASGI transport runs the app in the test's own event loop, which the
    asyncpg pool requires (Litestar's AsyncTestClient runs it in a portal thread).
    """
    from tollway._runtime.service import http_app

    app = http_app(kernel, manage_kernel=False)
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver.local") as client:
        yield client


def reserve_socket(host: str = "127.0.0.1") -> Any:
    """A bound socket on a free port of `host` (its port is `sock.getsockname()[1]`), for
    `serve_http`: a test that must know its base URL before the kernel starts takes it first."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


@contextlib.asynccontextmanager
async def serve_http(kernel: Any, sock: Any = None, *, trusted_proxies: tuple[str, ...] = ()) -> AsyncIterator[str]:
    """Serve `kernel`'s app for real (uvicorn, in the test's event loop, on `sock` or a free
    port of 127.0.0.1), for clients outside the process such as a browser; yields the base URL.
    Proxy headers count from `trusted_proxies` only, as TOLLWAY_TRUSTED_PROXIES (none by default)."""
    import asyncio

    import uvicorn

    from tollway._runtime.proxies import uvicorn_proxy_options
    from tollway._runtime.service import http_app

    class InLoop(uvicorn.Server):
        def capture_signals(self) -> Any:  # leave the test runner's signal handlers alone
            return contextlib.nullcontext()

    sock = sock or reserve_socket()
    host, port = sock.getsockname()[:2]
    server = InLoop(
        uvicorn.Config(
            http_app(kernel, manage_kernel=False),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=5,
            **uvicorn_proxy_options(trusted_proxies),
        )
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        for _ in range(2000):
            if server.started or task.done():
                break
            await asyncio.sleep(0.005)
        if not server.started:
            if task.done():
                task.result()
            raise RuntimeError("uvicorn did not start")
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


class HookReceiver:
    """What a local webhook receiver (`webhook_receiver`) was POSTed: (lower-cased headers, raw body) pairs;
    `status` is what it answers (a test sets 500 to fail deliveries)."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.url = ""
        self.status = 204

    def bodies(self) -> list[Any]:
        return [msgspec.json.decode(body) for _headers, body in self.received]


@contextlib.contextmanager
def webhook_receiver(path: str = "/hooks") -> Any:
    """A real HTTP server on 127.0.0.1 that answers 204 (its `status`) to every POST and keeps it: yields its
    `HookReceiver` (`.url` is where to send). Webhook targets on loopback need
    TOLLWAY_WEBHOOKS_ALLOW_INSECURE=1."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    receiver = HookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(receiver.status)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


class ScriptedModel:
    """A language model stand-in (`scripted_model`): what it was asked, and its address."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # each Chat Completions request body, in order
        self.base_url = ""  # for TOLLWAY_LLM_BASE_URL
        self.port = 0


@contextlib.contextmanager
def scripted_model(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A real OpenAI-compatible Chat Completions server on 127.0.0.1 (`POST .../chat/completions`)
    whose assistant message for each request is `answer(request body)` — e.g. `{"role":
    "assistant", "content": None, "tool_calls": [...]}`. Yields its `ScriptedModel`; point the
    `llm` provider at it with TOLLWAY_LLM_BASE_URL=<model.base_url>, TOLLWAY_LLM_MODEL=<any>."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    model = ScriptedModel()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = msgspec.json.decode(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            model.requests.append(body)
            message = answer(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            out = msgspec.json.encode({"choices": [{"index": 0, "message": message, "finish_reason": finish}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    model.port = server.server_address[1]
    model.base_url = f"http://127.0.0.1:{model.port}/v1"
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


def tool_call(name: str, arguments: Mapping[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message calling one function tool, as a `scripted_model` answer."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": msgspec.json.encode(dict(arguments)).decode()},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class MailInbox:
    """What a local SMTP server (`smtp_server`) received: parsed messages and envelopes."""

    def __init__(self) -> None:
        self.messages: list[Any] = []  # email.message.EmailMessage
        self.envelopes: list[tuple[str, list[str]]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        import email
        import email.policy

        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 Message accepted for delivery"


@contextlib.contextmanager
def smtp_server() -> Any:
    """A real SMTP server (aiosmtpd) on 127.0.0.1: yields its `MailInbox` and the `email`
    provider's settings that send to it (`TOLLWAY_EMAIL_*`)."""
    from aiosmtpd.controller import Controller

    inbox = MailInbox()
    probe = reserve_socket()  # a free port (aiosmtpd's start-up check cannot use port 0)
    port = probe.getsockname()[1]
    probe.close()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield (
            inbox,
            {
                "TOLLWAY_EMAIL_HOST": "127.0.0.1",
                "TOLLWAY_EMAIL_PORT": str(port),
                "TOLLWAY_EMAIL_SECURITY": "none",
                "TOLLWAY_EMAIL_FROM_ADDRESS": "agents@tollway.test",
            },
        )
    finally:
        controller.stop()


# -- payments for tests, benches and docs ------------------------------------------
def decode_payment_required(header: str) -> dict[str, Any]:
    return msgspec.json.decode(base64.b64decode(header))


def pay_402(account: Any, payment_required_header: str, network_name: str = "local", *, valid_for: int = 120) -> str:
    """Sign what a 402 asks for with `account` and return the payment header value."""
    import time

    from tollway._core.payments.eip3009 import make_payment_header, sign_authorization
    from tollway._core.payments.networks import get_network

    network = get_network(network_name)
    required = decode_payment_required(payment_required_header)
    req = required["accepts"][0]
    now = int(time.time())
    auth, sig = sign_authorization(
        account, network, to=req["payTo"], value=int(req["amount"]), valid_after=now - 5, valid_before=now + valid_for
    )
    return make_payment_header(network, req, auth, sig)


# -- agents with credits, workers and the MCP front, for a plugin's own tests ----------
# (made through the operator routes, as an operator would)
OPERATOR = {"Authorization": "Bearer test-operator-token"}


async def paid_with_x402(client: Any, account: Any, path: str, body: dict[str, Any]) -> Any:
    """POST `body` to a paid `path`, pay its 402 quote with an x402 payment signed by `account`
    (funded on the local network), and answer the paid call's response."""
    quote = await client.post(path, json=body)
    assert quote.status_code == 402, quote.text
    payment = pay_402(account, quote.headers["PAYMENT-REQUIRED"])
    return await client.post(
        path, json=body, headers={"payment-signature": payment, "X-Quote-ID": quote.json()["quote_id"]}
    )


async def credits_session(client: Any, amount: str = "1", *, wallet: str | None = None) -> tuple[str, dict[str, str]]:
    """Register an agent, grant it `amount` USDC of credits, issue an access token.

    Returns (agent_id, headers that authenticate as it).
    """
    body = {"wallet_address": wallet} if wallet else {}
    agent = (await client.post("/v1/tools/internal/agents/register", json=body, headers=OPERATOR)).json()
    grant = await client.post(
        "/v1/tools/internal/credits/grant", json={"agent_id": agent["agent_id"], "amount": amount}, headers=OPERATOR
    )
    assert grant.status_code == 200, grant.text
    token = (
        await client.post("/v1/tools/internal/access-tokens", json={"agent_id": agent["agent_id"]}, headers=OPERATOR)
    ).json()["token"]
    return agent["agent_id"], {"Authorization": f"Bearer {token}"}


def proof_headers(
    account: Any, *, scope: str, method: str, path: str, body: bytes = b"", chain_id: int = 84532
) -> dict[str, str]:
    """X-Agent-ID and a freshly signed X-Agent-Proof of `account` (an eth-account LocalAccount)
    for one request (`path` without the query; the local network's chain id by default)."""
    import time

    from tollway._core.auth.auth_proof import make_agent_proof

    proof = make_agent_proof(
        account, chain_id=chain_id, scope=scope, method=method, path=path, body=body, now=int(time.time())
    )
    return {"X-Agent-ID": account.address, "X-Agent-Proof": proof}


def mcp_server_for(kernel: Any, *, token: str | None = None) -> Any:
    """The MCP server the service builds for `kernel` (`mcp.Client(mcp_server_for(kernel))` talks to it in memory);
    with `token`, every call is that access token's (as `tollway mcp` with TOLLWAY_AGENT_KEY set to it)."""
    from tollway._runtime.service import mcp_server

    return mcp_server(kernel, token=token).server


def worker_for(kernel: Any, *, poll_s: float = 0.05, pool: Any = None) -> Any:
    """A job worker over `kernel`, as `tollway worker` runs one: `worker.start()`, then `await worker.stop()`."""
    from tollway._runtime.worker import Worker

    return Worker(kernel, poll_s=poll_s, pool=pool)


def _example_path(tool: Any) -> str:
    """The path the tool's first example is posted to (its path fields filled in from it)."""
    return tool.path_for(dict(tool.examples[0].input))


async def wait_for_job(
    client: Any, request_id: str, headers: dict[str, str], *, tries: int = 500, every_s: float = 0.6
) -> dict[str, Any]:
    """Poll `GET /v1/requests/{request_id}` until the job completed or failed; its last body.
    The first polls come quickly (0.05 s apart, then twice as far each time: most jobs end
    within a second, and a fixed pace left each test waiting up to `every_s` after its job
    had ended); from then on every `every_s`, whose default stays under free_read's 120
    reads a minute for the minutes a process pool may take to start on a busy machine."""
    body: dict[str, Any] = {}
    pause = min(0.05, every_s)
    for _ in range(tries):
        polled = await client.get(f"/v1/requests/{request_id}", headers=headers)
        assert polled.status_code == 200, polled.text
        body = polled.json()
        if body["status"] in ("completed", "failed"):
            return body
        await asyncio.sleep(pause)
        pause = min(pause * 2, every_s)
    raise AssertionError(f"job {request_id} stuck in {body.get('status')}")


async def keyed_job_round_trip(
    kernel: Any, client: Any, tool: str, body: dict[str, Any], *, auth: dict[str, str], changed: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A job tool that requires an Idempotency-Key, paid from the credits of `auth`, end to end:
    refused without a key (400 naming it), accepted (202, pending), the same key and body
    replaying the same request, the same key with the `changed` body refused (422), then run
    by a worker with its own process pool. The accepted job and the finished one."""
    path = f"/v1/tools/{tool}"
    no_key = await client.post(path, json=body, headers=auth)
    assert no_key.status_code == 400 and no_key.json()["details"][0]["field"] == "Idempotency-Key"
    keyed = {**auth, "Idempotency-Key": f"{tool}-round-trip-0001"}
    accepted = await client.post(path, json=body, headers=keyed)
    assert accepted.status_code == 202, accepted.text
    job = accepted.json()
    assert job["tool"] == tool and job["status"] == "pending"
    replay = await client.post(path, json=body, headers=keyed)
    assert replay.status_code == 202 and replay.json()["request_id"] == job["request_id"]
    assert (await client.post(path, json=changed, headers=keyed)).status_code == 422
    worker = worker_for(kernel, poll_s=0.05)  # its own process pool: `run` executes out of process
    worker.start()
    try:
        done = await wait_for_job(client, job["request_id"], auth)
    finally:
        await worker.stop()
    return job, done


class LateSettlement:
    """A settlement backend whose payments settle late, put in front of a test kernel's embedded
    network: `settle` answers pending; the reconciler then learns the `outcome` the test sets —
    "settled" (the embedded network moves the USDC then), "failed" (the payer cancelled the
    authorization) or "pending"."""

    settles_in_database = False  # like a remote facilitator: settled outside our transaction

    def __init__(self, kernel: Any) -> None:
        self.inner = kernel.gateway.backend
        self.outcome = "pending"
        kernel.gateway.backend = self

    async def verify(self, payment: Any, requirements: dict[str, Any], payer: str) -> str | None:
        return await self.inner.verify(payment, requirements, payer)

    async def settle(self, payment: Any, requirements: dict[str, Any], payer: str) -> Any:
        from tollway._core.payments.settlement import SettlementResult

        return SettlementResult("pending", None, "settlement_delayed")

    async def on_chain_balance(self, address: str) -> int | None:
        return await self.inner.on_chain_balance(address)

    async def fate(self, payment: Any, requirements: dict[str, Any], payer: str) -> Any:
        from tollway._core.payments.settlement import SettlementResult

        if self.outcome == "settled":
            return await self.inner.settle(payment, requirements, payer)
        if self.outcome == "failed":
            return SettlementResult("failed", None, "authorization_canceled")
        return SettlementResult("pending", None, "settlement_delayed")


# -- the plugin contract suite ---------------------------------------------------------
async def _plugin_kernel(kernel_factory: Any, plugin: str, module: Any, env: dict[str, str] | None = None) -> Any:
    """A started test kernel with the plugin: its installed entry point, or `module`
    registered under its name; `env` gives its settings (`TOLLWAY_<FAMILY>_<NAME>`)."""
    assert plugin, "set `plugin` to the plugin's entry-point name (its import package, e.g. tollway_weather)"
    if module is not None:
        return await kernel_factory(plugins=[(plugin, module)], env=env)
    return await kernel_factory(installed={plugin}, env=env)


class PluginContract:
    """Contract every tool plugin passes. Subclass in the plugin's tests:

    class TestContract(PluginContract):
        plugin = "tollway_weather"
    """

    plugin: str = ""
    # The hook module of a plugin not installed (yet): registered under `plugin` instead of
    # loading the installed entry point of that name.
    module: Any = None
    # Settings the suite's kernel runs with, e.g. a stand-in value for a tool's required
    # API key (`Tool.requires`) or a provider choice (`Tool.provider_kind`), so its calls
    # get as far as a quote.
    env: dict[str, str] = {}
    # Tools whose example is accepted only with stored state the suite cannot make for its
    # payer (an update of the payer's own record, refused 404 by `admit_payer` otherwise):
    # left out of the payment-flow test, kept in every other.
    examples_need_state: tuple[str, ...] = ()

    @pytest.fixture
    async def contract_kernel(self, kernel_factory: Any) -> Any:
        return await _plugin_kernel(kernel_factory, self.plugin, self.module, self.env)

    @staticmethod
    def _key(tool: Any) -> dict[str, str]:
        """An Idempotency-Key for tools that require one (so the refusal tested is the input's)."""
        return {"Idempotency-Key": f"contract-{tool.name}"} if tool.idempotency == "required" else {}

    def _tools(self, kernel: Any) -> list[Any]:
        tools = [t for t in kernel.tools.values() if t.run.__module__.split(".")[0] == self.plugin]
        assert tools, f"plugin {self.plugin} registered no tools"
        return tools

    async def test_loads_strictly_and_registers_tools(self, contract_kernel: Any) -> None:
        assert contract_kernel.pm.has_plugin(self.plugin)
        assert not contract_kernel.plugin_failures
        names = [t.name for t in self._tools(contract_kernel)]
        assert len(names) == len(set(names))

    async def test_schemas_are_valid_json_schema(self, contract_kernel: Any) -> None:
        for tool in self._tools(contract_kernel):
            for schema in (tool.input_schema(), tool.output_schema()):
                assert isinstance(schema, dict)
                msgspec.json.encode(schema)

    async def test_examples_validate_and_price_is_deterministic(self, contract_kernel: Any) -> None:
        for tool in self._tools(contract_kernel):
            assert tool.examples, (
                f"{tool.name} declares no example: give an input that validates as Tool(examples=...) or "
                "@tollway.tool(examples=...); the decorator makes one itself when every parameter has a "
                "default or an Annotated Meta(examples=[...])"
            )
            for example in tool.examples:
                call = contract_kernel.paid_calls.prepare(tool, msgspec.json.encode(dict(example.input)))
                again = contract_kernel.paid_calls.prepare(tool, msgspec.json.encode(dict(example.input)))
                assert call.price == again.price > 0
                assert call.input_hash == again.input_hash

    async def test_refusals_name_what_msgspec_refuses(self, contract_kernel: Any) -> None:
        """Each example, spoiled one place at a time (a value replaced, a field dropped, an
        unknown field added), is refused exactly when msgspec refuses it, and the refusal
        names the field msgspec stopped at (besides any others)."""
        from tollway._core.basics.validation import problems_of

        for tool in self._tools(contract_kernel):
            for example in tool.examples:
                assert problems_of(dict(example.input), tool.input_type) == ([], 0), (
                    f"{tool.name}: example {example.title!r}"
                )
                for spoiled in _spoiled(dict(example.input)):
                    try:
                        msgspec.convert(spoiled, tool.input_type, strict=True)
                        refused_at = None
                    except msgspec.ValidationError as exc:
                        refused_at = _msgspec_path(str(exc))
                    problems, _more = problems_of(spoiled, tool.input_type)
                    named = {p.field for p in problems}
                    assert bool(problems) == (refused_at is not None), f"{tool.name}: {spoiled!r} -> {problems!r}"
                    if refused_at is not None and "[...]" not in refused_at:
                        assert refused_at in named, (
                            f"{tool.name}: msgspec refused {refused_at}, details name {sorted(named)}"
                        )

    async def test_bad_input_is_refused_before_payment(self, contract_kernel: Any) -> None:
        from tollway._core.receipts.tables import Receipt

        async with http_client(contract_kernel) as client:
            for tool in self._tools(contract_kernel):
                resp = await client.post(
                    tool.path_for({f: "x" for f in tool.path_fields}),
                    content=b'{"__not_a_field__": 1}',
                    headers={"content-type": "application/json", **self._key(tool)},
                )
                assert resp.status_code == 400, resp.text
                body = resp.json()
                assert body["error"] in ("invalid_request", "invalid_input")
                assert body["details"] and all("field" in d for d in body["details"])
                assert all(d["field"] != "Idempotency-Key" for d in body["details"])  # the body, not the key
                assert "PAYMENT-REQUIRED" not in resp.headers
        assert await count_quotes(contract_kernel) == 0
        assert await Receipt.count() == 0

    async def test_unpaid_call_gets_a_quote(self, contract_kernel: Any) -> None:
        async with http_client(contract_kernel) as client:
            for tool in self._tools(contract_kernel):
                resp = await client.post(
                    _example_path(tool), json=dict(tool.examples[0].input), headers=self._key(tool)
                )
                assert resp.status_code == 402, resp.text
                assert resp.json()["error"] == "payment_required"
                assert resp.headers["PAYMENT-REQUIRED"]

    async def test_unconfigured_tools_refuse_before_payment(self, contract_kernel: Any, kernel_factory: Any) -> None:
        """A tool whose required settings are unset, or whose kind of provider has none
        configured, answers 503 `provider_unavailable` naming the settings, before any quote."""
        needy = [t for t in self._tools(contract_kernel) if t.requires or t.provider_kind]
        if not needy:
            return
        required = {s.env_var for t in needy for s in t.requires}
        kinds = tuple(f"TOLLWAY_{t.provider_kind.upper()}_" for t in needy if t.provider_kind)
        bare_env = {k: v for k, v in self.env.items() if k not in required and not k.startswith(kinds)}
        bare = await _plugin_kernel(kernel_factory, self.plugin, self.module, bare_env)
        async with http_client(bare) as client:
            for tool in needy:
                resp = await client.post(
                    _example_path(tool), json=dict(tool.examples[0].input), headers=self._key(tool)
                )
                assert resp.status_code == 503, resp.text
                body = resp.json()
                assert body["error"] == "provider_unavailable"
                assert body["details"]["settings"] and all(
                    name in body["message"] for name in body["details"]["settings"]
                )
                if tool.provider_kind:
                    assert body["details"]["kind"] == tool.provider_kind
                else:
                    assert set(body["details"]["settings"]) == {s.env_var for s in tool.requires}
                assert "PAYMENT-REQUIRED" not in resp.headers
        assert await count_quotes(contract_kernel, bare) == 0

    async def test_tools_appear_in_openapi_with_schema(self, contract_kernel: Any) -> None:
        async with http_client(contract_kernel) as client:
            doc = (await client.get("/schema/openapi.json")).json()
        for tool in self._tools(contract_kernel):
            op = doc["paths"][tool.path]["post"]  # OpenAPI writes path parameters as {name}, as tools do
            assert op["operationId"] == tool.name
            ref = op["requestBody"]["content"]["application/json"]["schema"]["allOf"][0]["$ref"]
            assert ref.rsplit("/", 1)[1] in doc["components"]["schemas"]
            assert "402" in op["responses"]

    async def test_a_job_starts_only_once_its_payment_settles(self, contract_kernel: Any) -> None:
        """A job tool paid by an x402 payment that has not settled is accepted (202) but waits,
        visibly, and no worker can claim it; a payment that then fails ends the job `payment_failed`
        with nothing charged, and one that settles makes the job claimable."""
        from eth_account import Account

        from tollway._core.credits import ledger
        from tollway._core.jobs import jobs
        from tollway._core.receipts.tables import Receipt

        job_tools = [
            t for t in self._tools(contract_kernel) if t.mode == "job" and t.name not in self.examples_need_state
        ]
        if not job_tools:
            return
        late, payer = LateSettlement(contract_kernel), Account.create()
        await contract_kernel.accounts.fund_chain(payer.address, 10**10)
        reader = {"X-Agent-ID": payer.address}
        async with http_client(contract_kernel) as client:
            for tool in job_tools:
                for outcome in ("failed", "settled"):
                    late.outcome = "pending"
                    key = (
                        {"Idempotency-Key": f"contract-late-{tool.name}-{outcome}"}
                        if tool.idempotency != "ignored"
                        else {}
                    )
                    quote = await client.post(_example_path(tool), json=dict(tool.examples[0].input), headers=key)
                    assert quote.status_code == 402, quote.text
                    paid = {
                        **key,
                        "payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"]),
                        "X-Quote-ID": quote.json()["quote_id"],
                    }
                    accepted = await client.post(_example_path(tool), json=dict(tool.examples[0].input), headers=paid)
                    assert accepted.status_code == 202, accepted.text
                    job_id = accepted.json()["request_id"]
                    waiting = (await client.get(f"/v1/requests/{job_id}", headers=reader)).json()
                    assert waiting["status"] == "pending" and "payment" in waiting["message"], waiting
                    assert await jobs.claim("contract", 30, skip_locked=False) is None, (
                        f"{tool.name}: a job was claimed before its payment settled"
                    )
                    late.outcome = outcome
                    await contract_kernel.reconciler.run_once(grace_s=0)
                    job = (await client.get(f"/v1/requests/{job_id}", headers=reader)).json()
                    (receipt,) = await Receipt.select(Receipt.status).where(
                        Receipt.receipt_id == accepted.json()["receipt_id"]
                    )
                    if outcome == "failed":
                        assert (job["status"], job["error_code"], job["error_status"]) == (
                            "failed",
                            "payment_failed",
                            402,
                        ), job
                        assert receipt["status"] == "not_charged"
                    else:
                        assert receipt["status"] == "settled"
                        assert job["status"] == "pending" and "message" not in job, job
                        claimed = await jobs.claim("contract", 30, skip_locked=False)
                        assert claimed is not None and claimed.id == job_id
                        await jobs.fail(
                            job_id, claimed.attempt, code="internal_error", message="contract test: not run"
                        )
        settled = await Receipt.select(Receipt.amount).where(Receipt.status == "settled")
        left = await ledger.chain_balance(contract_kernel.network.chain_id, payer.address)
        assert left == 10**10 - sum(int(r["amount"]) for r in settled)  # only the settled payments moved money
        assert await ledger_problems() == []


_JUNK: tuple[Any, ...] = (None, True, -1, 0, 0.5, "", "x", "A" * 300, [], [1], {}, {"k": 1}, 10**12, float("nan"))


def _spoiled(value: Any) -> list[Any]:
    """Copies of `value` with one place changed: every node replaced by each junk value,
    every object key dropped, an unknown key added to every object."""
    out: list[Any] = []

    def walk(node: Any, put: Any) -> None:
        out.extend(put(j) for j in _JUNK)
        if isinstance(node, dict):
            for key in node:
                walk(node[key], lambda v, key=key, put=put, node=node: put({**node, key: v}))
                out.append(put({k: v for k, v in node.items() if k != key}))
            out.append(put({**node, "__not_a_field__": 1}))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, lambda v, i=i, put=put, node=node: put([*node[:i], v, *node[i + 1 :]]))

    walk(value, lambda v: v)
    return [s for s in out if isinstance(s, dict)]


_AT = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_NAMED = re.compile(r"^Object (?:missing required|contains unknown) field `(?P<name>[^`]+)`")


def _msgspec_path(message: str) -> str:
    """Where msgspec's first refusal points, as a dotted/indexed path (`$` for the body)."""
    at = _AT.search(message)
    path = at.group("path") if at else ""
    named = _NAMED.match(message)
    if named:
        path = f"{path}.{named.group('name')}" if path else named.group("name")
    return path or "$"


def new_agent_uuid() -> str:
    return str(uuid.uuid4())


__all__ = [
    "OPERATOR",
    "PluginContract",
    "convert_input",
    "count_quotes",
    "count_receipts",
    "credits_session",
    "mcp_server_for",
    "worker_for",
    "wait_for_job",
    "keyed_job_round_trip",
    "http_client",
    "pay_402",
    "paid_with_x402",
    "decode_payment_required",
    "settings_for",
    "kernel_factory",
    "db_kind",
]


# -- what a test may ask of the service's storage ---------------------------------------
async def ledger_problems() -> list[str]:
    """What the money audit finds wrong in the database now (balances against the ledger,
    every charge with its receipt, refunds and returns once each): [] when all is well."""
    from tollway._core.credits.ledger_check import check_ledger

    return await check_ledger()


async def count_quotes(*kernels: Any) -> int:
    """How many payment quotes the test service's `kernels` have issued (0 when every call
    so far was refused before payment). Issuing a quote writes nothing (docs/payments.md):
    each kernel counts the quotes it minted, so only kernels running in this process can be
    asked."""
    if not kernels:
        raise TypeError("count_quotes(kernel, ...): name the kernels whose quotes to count")
    return sum(k.gateway.quotes.issued for k in kernels)


async def count_receipts() -> int:
    """How many receipts the running test service has written."""
    from tollway._core.receipts.tables import Receipt

    return await Receipt.count()


async def provider_cost_of(receipt_id: str) -> int | None:
    """What the call of `receipt_id` cost us at its provider (micro-USDC), as stored beside
    the receipt: never served or signed, so only the operator (and this helper) sees it."""
    from tollway._core.receipts.tables import Receipt

    row = await Receipt.select(Receipt.provider_cost).where(Receipt.receipt_id == receipt_id).first()
    return None if row is None else row["provider_cost"]


async def stored_facts(attribute: str, key: str | None = None) -> list[dict[str, Any]]:
    """The fact rows the running test service recorded for `attribute` (and `key`), oldest
    first: `key`, `source`, `owner` ("" when public), `listed`, `value` (decoded JSON),
    `as_of`, `changed_on`, `recorded_by`."""
    import json

    from tollway._core.storage import sql

    template = (
        "SELECT * FROM tw_facts WHERE attribute = {}"
        + (" AND entity_key = {}" if key is not None else "")
        + " ORDER BY id"
    )
    rows = await sql.fetch(template, *([attribute] if key is None else [attribute, key]))
    return [
        {"key": r["entity_key"], "source": r["source"], "owner": r["owner"], "listed": bool(r["listed"]), "value": json.loads(r["value"]),
         "as_of": r["as_of"], "changed_on": r["changed_on"], "recorded_by": r["recorded_by"]}
        for r in rows
    ]  # fmt: skip


def convert_input(body: Any, input_type: type, *, error: str = "invalid_request") -> Any:
    """Validate `body` as the kernel does before quoting: the value, or a `tollway.Refusal`
    whose `details` name every failing field (`error` is the code of a shape error)."""
    from tollway._core.basics.errors import Refusal, ServiceError
    from tollway._core.basics.validation import convert

    try:
        return convert(body, input_type, error=error)
    except ServiceError as exc:
        raise Refusal(exc.code, exc.message, status=exc.status, details=exc.details, extra=exc.extra) from None


# -- a plugin's public surface, snapshotted by the plugin's own tests -------------------
# Values that differ on every run (ids, times, hashes, signatures, addresses) are
# replaced by stand-ins so a snapshot holds the shapes and the stable values.
_VOLATILE = [
    (re.compile(r"^rcpt_[0-9a-f]+$"), "<receipt_id>"),
    (re.compile(r"^req_[0-9a-f]+$"), "<request_id>"),
    (re.compile(r"^q_[0-9A-Za-z_-]{36}$"), "<quote_id>"),  # core/payments/quotes.py
    (re.compile(r"^txn_[0-9a-f]+$"), "<transaction_id>"),
    (re.compile(r"^rk_[0-9a-f]+$"), "<key_id>"),
    (re.compile(r"^0x[0-9a-fA-F]{64}$"), "<hash>"),
    (re.compile(r"^0x[0-9a-fA-F]{40}$"), "<address>"),
    (re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"), "<time>"),
    (re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"), "<uuid>"),
    (re.compile(r"^[0-9a-f]{64}$"), "<sha256>"),
]


def normalise(value: Any, key: str = "") -> Any:
    """`value` (decoded JSON) with run-specific values replaced by stand-ins like `<receipt_id>`."""
    if isinstance(value, dict):
        return {k: normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if key == "signature" and isinstance(value, str):
        return "<signature>"
    if key == "retrieved_at":
        return "<time>"
    if isinstance(value, str):
        for pattern, stand_in in _VOLATILE:
            if pattern.match(value):
                return stand_in
    return value


def tools_of(kernel: Any, plugin: str) -> list[Any]:
    """The tools `plugin` (an entry-point name, i.e. the plugin's import package) registered, by name."""
    return sorted((t for t in kernel.tools.values() if t.run.__module__.split(".")[0] == plugin), key=lambda t: t.name)


def _refs(node: Any) -> list[str]:
    """The names of the component schemas `node` refers to (not the shared answers,
    parameters or headers: those are the kernel's, in its own snapshot)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        found = [ref.rsplit("/", 1)[1]] if isinstance(ref, str) and ref.startswith("#/components/schemas/") else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


async def openapi_surface(kernel: Any, tools: list[Any]) -> dict[str, Any]:
    """What the OpenAPI document says of `tools`: their path items, and the component
    schemas their request bodies and answers use (followed through nested references;
    the service's shared error bodies are left to the kernel's own snapshot)."""
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    components = doc["components"]["schemas"]
    paths = {t.path: doc["paths"][t.path] for t in tools}
    todo: list[str] = []
    for item in paths.values():
        op = item["post"]
        todo += _refs(op.get("requestBody", {}))
        todo += [r for status in ("200", "202") for r in _refs(op["responses"].get(status, {}))]
    schemas: dict[str, Any] = {}
    while todo:
        name = todo.pop()
        if name not in schemas:
            schemas[name] = components[name]
            todo += _refs(components[name])
    return {"paths": paths, "schemas": dict(sorted(schemas.items()))}


async def mcp_surface(kernel: Any, tools: list[Any]) -> list[dict[str, Any]]:
    """The MCP `tools/list` entries of `tools`, as the SDK's client receives them."""
    from mcp import Client

    names = {t.name for t in tools}
    async with Client(mcp_server_for(kernel), mode="legacy") as client:
        listed = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools if t.name in names]


async def paid_answer(kernel: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Quote `body` at `path`, pay the quote over x402 from a freshly funded wallet, read the
    receipt: {"quote", "answer", "receipt"}, each normalised (see `normalise`)."""
    from eth_account import Account

    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, 1_000_000)
    async with http_client(kernel) as client:
        quote = await client.post(path, json=body)
        assert quote.status_code == 402, quote.text
        paid = await client.post(
            path, json=body, headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
        )
        assert paid.status_code in (200, 202), paid.text
        receipt = (
            await client.get(f"/v1/receipts/{paid.json()['data']['receipt_id']}", headers={"X-Agent-ID": payer.address})
        ).json()
    return {"quote": normalise(quote.json()), "answer": normalise(paid.json()), "receipt": normalise(receipt)}


class PluginSurface:
    """Snapshots of what a plugin shows the world: its tools' OpenAPI operations and
    schemas, and their MCP listing. Subclass in the plugin's tests (syrupy keeps the
    snapshots in the plugin's tests/__snapshots__/; `pytest --snapshot-update` writes them):

        class TestWeatherSurface(PluginSurface):
            plugin = "tollway_weather"

    A paid answer needs the plugin's upstream: snapshot `await paid_answer(kernel, path, body)`
    from a kernel whose `transport` replays it.
    """

    plugin: str = ""
    module: Any = None  # as in `PluginContract`
    env: dict[str, str] = {}  # as in `PluginContract`

    @pytest.fixture
    async def surface_kernel(self, kernel_factory: Any) -> Any:
        return await _plugin_kernel(kernel_factory, self.plugin, self.module, self.env)

    async def test_openapi_surface(self, surface_kernel: Any, snapshot: Any) -> None:
        tools = tools_of(surface_kernel, self.plugin)
        assert tools, f"plugin {self.plugin} registered no tools"
        assert await openapi_surface(surface_kernel, tools) == snapshot

    async def test_mcp_surface(self, surface_kernel: Any, snapshot: Any) -> None:
        tools = tools_of(surface_kernel, self.plugin)
        listed = await mcp_surface(surface_kernel, tools)
        assert sorted(entry["name"] for entry in listed) == [t.name for t in tools]
        assert listed == snapshot


__all__ += [
    "HookReceiver",
    "webhook_receiver",
    "ScriptedModel",
    "scripted_model",
    "tool_call",
    "PluginSurface",
    "mcp_surface",
    "normalise",
    "openapi_surface",
    "paid_answer",
    "provider_cost_of",
    "stored_facts",
    "tools_of",
]
