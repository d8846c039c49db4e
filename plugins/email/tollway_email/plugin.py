"""Hook implementations: the `smtp` email provider, the inbound SMTP listener a service runs
when TOLLWAY_EMAIL_INBOUND_PORT is set (`tollway serve --smtp-port`), the provider inbound
route, and the inbox (its tables, its handler of inbound mail and its reads)."""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from collections.abc import Callable
from typing import Any

from tollway import AppConfig, Provider, Route, Services, Setting, Tool, hookimpl

from .inbound import INBOUND_HOST, INBOUND_PORT, listen
from .inbound_route import INBOUND_ROUTE
from .inbox import keep
from .inbox_routes import INBOX_ROUTES
from .send_tool import EMAIL_SEND, PUBLIC_URL, QUOTE_ROUTE
from .tables import TABLES
from .tracking import TRACKING_ROUTES, TRACKING_URL
from .smtp import SMTP

log = logging.getLogger("tollway.email")
APP = AppConfig(app_name="email", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES))
_listeners: dict[int, Any] = {}  # service instance -> the listening server (or the task starting it)


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
def startup(services: Services) -> None:
    port = (services.settings("email").get("inbound_port") or "").strip()
    if not port:
        return
    host = (services.settings("email").get("inbound_host") or INBOUND_HOST.default or "127.0.0.1").strip()

    async def start() -> None:
        _listeners[services.instance] = await listen(services.platform, host, int(port))
        log.info("tollway: receiving email by SMTP on %s:%s", host, port)
        print(f"tollway: receiving email by SMTP on {host}:{port}", flush=True)

    _listeners[services.instance] = asyncio.get_running_loop().create_task(start())


@hookimpl
def shutdown(services: Services) -> None:
    listener = _listeners.pop(services.instance, None)
    if isinstance(listener, asyncio.Task):
        listener.cancel()
    elif listener is not None:
        listener.close()
