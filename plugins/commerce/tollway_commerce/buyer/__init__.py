"""The buyer side of agent commerce: agents search the product feeds of ACP merchants the
operator configured (`commerce_search`) and buy from them (`commerce_buy`) through ACP
checkout sessions, paid with delegated tokens of the `psp` provider. The plugin's hooks
(tollway_commerce.plugin) register what `declarations` lists."""

from __future__ import annotations

from pathlib import Path

from tollway import AppConfig, PeriodicTask, PluginContext, Route, Setting, Tool

from . import feeds, held, merchants, order_events
from .buy_tool import commerce_buy_tool
from .search_tool import SEARCH
from .settings import SETTINGS
from .tables import TABLES

APP = AppConfig(
    app_name="commerce_buyer",
    migrations_folder_path=str(Path(__file__).parent / "migrations"),
    table_classes=list(TABLES),
)
FEED_TASK = PeriodicTask(name="commerce_feeds", interval_s=30.0, run=feeds.refresh_due)


def tools(context: PluginContext) -> tuple[Tool, ...]:
    return (SEARCH, commerce_buy_tool(context))


ROUTES: tuple[Route, ...] = (*merchants.ROUTES, held.ROUTE, order_events.ROUTE)
BUYER_SETTINGS: tuple[Setting, ...] = SETTINGS
