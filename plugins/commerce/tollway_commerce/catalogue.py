"""What Tollway sells over ACP: credit packs, and every enabled service of the souls
marketplace whose price is a whole number of cents. Prices are US cents (ACP's minor units);
one US dollar buys one USDC of credits (docs/commerce.md, "Decisions").

A credit pack's item id is `credits_<N>usd`; a soul service's is `soul:<soul slug>/<service
slug>`. The souls tables are read through read-only table classes here (the souls plugin is
another distribution, not a dependency of this one); without the souls plugin installed
there are no soul services on sale. Selling one writes nothing of the souls plugin's here:
its order is opened through the plugin's own `tollway_souls.orders.open_paid_order`
(sessions.souls_order), imported only then, when the plugin is there."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from piccolo.columns import BigInt, Boolean, Text, Varchar
from piccolo.table import Table

from .settings import credit_packs
from .tables import CheckoutSession

log = logging.getLogger("tollway.commerce")

MICRO_PER_CENT = 10_000  # micro-USDC per US cent
SOULS_FEE_DEFAULT = 20  # percent, as the souls plugin's own default (TOLLWAY_SOULS_FEE_PERCENT)


class SoulAgentView(Table, tablename="souls_agents"):
    """Read only: the souls plugin's sellers (its migrations own the table)."""

    id = Varchar(length=40, primary_key=True)
    agent_id = Varchar(length=36)
    slug = Varchar(length=64)
    display_name = Varchar(length=100)


class SoulServiceView(Table, tablename="souls_services"):
    """Read only: the souls plugin's services (its migrations own the table)."""

    id = Varchar(length=40, primary_key=True)
    soul_id = Varchar(length=40)
    slug = Varchar(length=64)
    title = Varchar(length=120)
    description = Text(default="")
    price = BigInt()
    enabled = Boolean(default=True)


VIEWS = (SoulAgentView, SoulServiceView)


@dataclasses.dataclass(frozen=True)
class Product:
    item_id: str
    title: str
    description: str
    unit_amount: int  # cents
    kind: str  # "credits" or "soul_service"
    credit: int = 0  # micro-USDC of credits one unit buys
    seller_agent_id: str | None = None  # the soul's agent, paid its share
    soul_id: str | None = None
    seller_name: str | None = None


def _pack(dollars: int) -> Product:
    return Product(
        item_id=f"credits_{dollars}usd",
        title=f"{dollars} USDC of Tollway credits",
        description=f"{dollars} USDC of prepaid credits, added to the buying agent's balance at once: "
        "they pay for any Tollway tool.",
        unit_amount=dollars * 100,
        kind="credits",
        credit=dollars * 1_000_000,
    )


async def soul_services() -> list[Product]:
    """Every enabled soul service priced in whole cents (none when the souls plugin is absent)."""
    for view in VIEWS:  # bound to the service's engine, as this plugin's own tables are (not migrated, not emptied)
        view._meta.db = CheckoutSession._meta.db
    try:
        services = await SoulServiceView.select().where(SoulServiceView.enabled == True)  # noqa: E712
        souls = {s["id"]: s for s in await SoulAgentView.select()}
    except Exception:  # no souls tables: the souls plugin is not installed
        log.debug("no souls marketplace to sell from", exc_info=True)
        return []
    out = []
    for service in services:
        soul = souls.get(service["soul_id"])
        price = int(service["price"])
        if soul is None or price % MICRO_PER_CENT:
            continue
        out.append(
            Product(
                item_id=f"soul:{soul['slug']}/{service['slug']}",
                title=service["title"],
                description=service["description"] or service["title"],
                unit_amount=price // MICRO_PER_CENT,
                kind="soul_service",
                seller_agent_id=soul["agent_id"],
                soul_id=soul["id"],
                seller_name=soul["display_name"],
            )
        )
    return sorted(out, key=lambda p: p.item_id)


async def products(settings: Mapping[str, str]) -> list[Product]:
    """The whole catalogue, credit packs first."""
    return [_pack(d) for d in credit_packs(settings)] + await soul_services()


async def find(settings: Mapping[str, str], item_ids: list[str]) -> dict[str, Product]:
    """The products of these item ids that are on sale now."""
    wanted = set(item_ids)
    found = {p.item_id: p for p in [_pack(d) for d in credit_packs(settings)] if p.item_id in wanted}
    if any(i.startswith("soul:") for i in wanted):
        found.update({p.item_id: p for p in await soul_services() if p.item_id in wanted})
    return found


def souls_fee_percent(settings: Mapping[str, str]) -> int:
    """The marketplace's fee (TOLLWAY_SOULS_FEE_PERCENT), as an x402 sale of a soul service takes it."""
    raw = (settings.get("fee_percent") or "").strip()
    try:
        value = int(raw) if raw else SOULS_FEE_DEFAULT
    except ValueError:
        return SOULS_FEE_DEFAULT
    return min(100, max(0, value))


def split(price: int, percent: int) -> tuple[int, int]:
    """(the seller's share, the service's fee) of `price` micro-USDC; the fee rounds down, as
    the souls marketplace splits an x402 sale."""
    fee = price * percent // 100
    return price - fee, fee
