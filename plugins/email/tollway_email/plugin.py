"""Hook implementations: the `smtp` email provider, the inbound SMTP listener a service runs
when TOLLWAY_EMAIL_INBOUND_PORT is set (`tollway serve --smtp-port`), the provider inbound
route, and the inbox (its tables, its handler of inbound mail and its reads)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, PluginContext, Provider, Route, Setting, StateKey, Tool, hookimpl

from .inbound import INBOUND_HOST, INBOUND_PORT, listen
from .inbound_route import INBOUND_ROUTE
from .inbox import keep
from .inbox_routes import INBOX_ROUTES
from .send_tool import EMAIL_SEND, PUBLIC_URL, QUOTE_ROUTE
from .smtp import SMTP
from .tables import TABLES
from .tracking import TRACKING_ROUTES, TRACKING_URL

log = logging.getLogger("tollway.email")
APP = AppConfig(
    app_name="email", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES)
)
LISTENER: StateKey[asyncio.AbstractServer] = StateKey("email", "smtp_listener")  # the service's SMTP server


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(SMTP)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (INBOUND_ROUTE, QUOTE_ROUTE, *INBOX_ROUTES, *TRACKING_ROUTES):
        register(route)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(EMAIL_SEND)


@hookimpl
def register_inbound_handlers(register: Callable[..., None]) -> None:
    register(keep)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    register(INBOUND_PORT)
    register(INBOUND_HOST)
    register(PUBLIC_URL)
    register(TRACKING_URL)


@hookimpl
async def startup(context: PluginContext) -> None:
    port = (context.settings("email").get("inbound_port") or "").strip()
    if not port:
        return
    host = (context.settings("email").get("inbound_host") or INBOUND_HOST.default or "127.0.0.1").strip()
    try:
        context.state.set(LISTENER, await listen(context.platform, host, int(port)))
    except OSError as exc:  # the service still serves (as it did when the listener started in the background)
        log.error("tollway: the inbound SMTP listener could not bind %s:%s: %s", host, port, exc)
        return
    log.info("tollway: receiving email by SMTP on %s:%s", host, port)
    print(f"tollway: receiving email by SMTP on {host}:{port}", flush=True)


@hookimpl
async def shutdown(context: PluginContext) -> None:
    listener = context.state.pop(LISTENER)
    if listener is not None:
        listener.close()
        await listener.wait_closed()
