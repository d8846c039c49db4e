"""Hook implementations: the buying tool, the marketplace and seller dashboard routes, the
souls tables and settings, and the periodic task that refunds orders past their deadline."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tollway import AppConfig, PeriodicTask, Route, Services, Setting, Tool, hookimpl

from . import orders
from .buy_tool import SOUL_BUY
from .dashboard_routes import ROUTES as DASHBOARD_ROUTES
from .keys import ROUTES as KEY_ROUTES
from .market_routes import ROUTES as MARKET_ROUTES
from .platform_ref import set_platform
from .settings import EXPIRY_INTERVAL_S, FAMILY, SETTINGS
from .tables import TABLES

APP = AppConfig(app_name="souls", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES))


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(SOUL_BUY)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*MARKET_ROUTES, *DASHBOARD_ROUTES, *KEY_ROUTES):
        register(route)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


_last_sweep: dict[int, float] = {}


async def _expire(services: Any) -> None:
    """Refund orders past their deadline, at most once per TOLLWAY_SOULS_EXPIRY_INTERVAL_S."""
    raw = dict(services.settings_of(FAMILY)).get(EXPIRY_INTERVAL_S.name) or EXPIRY_INTERVAL_S.default or "60"
    now = time.monotonic()
    if now - _last_sweep.get(services.instance, float("-inf")) < float(raw):
        return
    _last_sweep[services.instance] = now
    await orders.expire_due()


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    register(PeriodicTask(name="soul_orders_expiry", interval_s=5.0, run=_expire))


@hookimpl
def startup(services: Services) -> None:
    set_platform(services.platform)
