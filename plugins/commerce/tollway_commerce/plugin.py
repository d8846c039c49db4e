"""The hooks of tollway-commerce: Tollway as an ACP merchant (docs/commerce.md) — the
checkout routes, the operator's ACP tokens, the product feed, the `psp` provider kind with
Stripe as its first provider, the tables, and the reconciler of payments left in progress —
and the buyer side (tollway_commerce.buyer): commerce_search and commerce_buy, the operator's
merchants, the merchants' order webhooks, the product feed reader, its settings and tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tollway import AppConfig, PeriodicTask, PluginContext, Provider, Route, Setting, Tool, hookimpl

from . import buyer, discovery, reconciler
from .refunds import ROUTES as REFUND_ROUTES
from .routes import ROUTES
from .settings import RECONCILE_INTERVAL_S, SETTINGS
from .stripe_psp import STRIPE
from .tables import TABLES

APP = AppConfig(
    app_name="commerce",
    migrations_folder_path=str(Path(__file__).parent / "migrations"),
    table_classes=list(TABLES),
)


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    for tool in buyer.tools(context):
        register(tool)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in (*SETTINGS, *buyer.BUYER_SETTINGS):
        register(setting)


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(STRIPE)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in (*ROUTES, discovery.ROUTE, *REFUND_ROUTES, *buyer.ROUTES):
        register(route)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(APP)
    register(buyer.APP)


async def _reconcile(context: PluginContext) -> None:
    await reconciler.sweep(context)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    register(PeriodicTask(name="commerce_reconcile", interval_s=RECONCILE_INTERVAL_S, run=_reconcile))
    register(buyer.FEED_TASK)
