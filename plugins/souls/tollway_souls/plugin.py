"""Hook implementations: the buying tool, the marketplace and seller dashboard routes, the
souls tables and settings, the periodic task that refunds orders past their deadline, and the
operator page (the console's Marketplace)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, OperatorPage, PeriodicTask, PluginContext, Route, Setting, StateKey, Tool, hookimpl

from . import orders
from .buy_tool import soul_buy_tool
from .dashboard_routes import ROUTES as DASHBOARD_ROUTES
from .keys import ROUTES as KEY_ROUTES
from .market_routes import ROUTES as MARKET_ROUTES
from .operator_page import OPERATOR_PAGE
from .settings import EXPIRY_INTERVAL_S, FAMILY, SETTINGS
from .tables import TABLES

APP = AppConfig(
    app_name="souls", migrations_folder_path=str(Path(__file__).parent / "migrations"), table_classes=list(TABLES)
)


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    register(soul_buy_tool(context))


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*MARKET_ROUTES, *DASHBOARD_ROUTES, *KEY_ROUTES):
        register(route)


@hookimpl
def register_operator_pages(register: Callable[[OperatorPage], None]) -> None:
    register(OPERATOR_PAGE)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)


LAST_SWEEP: StateKey[float] = StateKey(FAMILY, "last_expiry_sweep")  # time.monotonic() of the service's last sweep


async def _expire(context: PluginContext) -> None:
    """Refund orders past their deadline, at most once per TOLLWAY_SOULS_EXPIRY_INTERVAL_S."""
    raw = context.settings(FAMILY).get(EXPIRY_INTERVAL_S.name) or EXPIRY_INTERVAL_S.default or "60"
    now = time.monotonic()
    last = context.state.get(LAST_SWEEP)
    if last is not None and now - last < float(raw):
        return
    context.state.set(LAST_SWEEP, now)
    await orders.expire_due(context.platform)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    register(PeriodicTask(name="soul_orders_expiry", interval_s=5.0, run=_expire))
