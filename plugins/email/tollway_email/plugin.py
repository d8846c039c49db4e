"""Hook implementations: the `smtp` email provider, and the inbound SMTP listener a
service runs when TOLLWAY_EMAIL_INBOUND_PORT is set (`tollway serve --smtp-port`)."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from tollway import Provider, Route, Services, Setting, hookimpl

from .inbound import INBOUND_HOST, INBOUND_PORT, listen
from .inbound_route import INBOUND_ROUTE
from .smtp import SMTP

log = logging.getLogger("tollway.email")
_listeners: dict[int, Any] = {}  # service instance -> the listening server (or the task starting it)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(SMTP)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    register(INBOUND_ROUTE)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    register(INBOUND_PORT)
    register(INBOUND_HOST)


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
