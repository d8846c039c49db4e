"""The hooks of tollway-commerce. The buyer side (tollway_commerce.buyer): commerce_search and
commerce_buy, the operator's merchants, the merchants' order webhooks, the product feed task,
its settings and tables; the seller's routes come next (docs/commerce.md). The `acp` package
holds the ACP wire models both sides share."""

from __future__ import annotations

from collections.abc import Callable

from tollway import AppConfig, PeriodicTask, PluginContext, Route, Setting, Tool, hookimpl

from . import buyer


@hookimpl
def register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    for tool in buyer.tools(context):
        register(tool)


@hookimpl
def register_routes(register: Callable[[Route], None]) -> None:
    for route in buyer.ROUTES:
        register(route)


@hookimpl
def register_settings(register: Callable[[Setting], None]) -> None:
    for setting in buyer.BUYER_SETTINGS:
        register(setting)


@hookimpl
def register_migrations(register: Callable[[AppConfig], None]) -> None:
    register(buyer.APP)


@hookimpl
def register_periodic_tasks(register: Callable[[PeriodicTask], None]) -> None:
    register(buyer.FEED_TASK)
