"""The marketplace's operator page (`register_operator_pages`, shown by the console at
/console/view/marketplace): the souls listed with their prices, sales and seller; orders by
state and the latest ones; payouts by state and the latest ones (the kernel's, through the
`Platform`). Figures are SQL aggregates (GROUP BY); never a soul key (only its hash is
stored, and not read), a webhook secret, nor what a buyer asked or was delivered."""

from __future__ import annotations

from collections.abc import Mapping

from piccolo.columns import Column
from piccolo.query.functions.aggregate import Count, Min, Sum
from piccolo.query.methods.select import Select
from piccolo.table import Table as PiccoloTable

from tollway import Figure, Link, OperatorPage, Platform, Report, Row, Section, Table, iso, usdc

from .tables import SoulAgent, SoulOrder, SoulService

LATEST = 50  # souls, orders and payouts listed, newest first


def _newest(table: type[PiccoloTable], *columns: Column) -> Select:
    """The table's latest rows (newest first, by `created_ms` then `id`), its index read backwards."""
    return (
        table.select(*columns)
        .order_by(table.created_ms, ascending=False)
        .order_by(table.id, ascending=False)
        .limit(LATEST)
    )


async def _souls() -> Section:
    souls = await _newest(
        SoulAgent,
        SoulAgent.id,
        SoulAgent.slug,
        SoulAgent.display_name,
        SoulAgent.agent_id,
        SoulAgent.wallet_address,
        SoulAgent.rating_sum,
        SoulAgent.rating_count,
        SoulAgent.created_ms,
    )
    ids = [s["id"] for s in souls] or [""]
    services = await (
        SoulService.select(SoulService.soul_id, Count(alias="n"), Min(SoulService.price, alias="low"))
        .where(SoulService.soul_id.is_in(ids), SoulService.enabled == True)  # noqa: E712 (a column comparison)
        .group_by(SoulService.soul_id)
    )
    sales = await (
        SoulOrder.select(SoulOrder.soul_id, Count(alias="n"), Sum(SoulOrder.share, alias="earned"))
        .where(SoulOrder.soul_id.is_in(ids), SoulOrder.state == "fulfilled")
        .group_by(SoulOrder.soul_id)
    )
    offered = {r["soul_id"]: r for r in services}
    sold = {r["soul_id"]: r for r in sales}
    rows = []
    for s in souls:
        listed, made = offered.get(s["id"]), sold.get(s["id"])
        count = int(s["rating_count"])
        rows.append(
            Row(
                (
                    s["slug"],
                    s["display_name"],
                    Link.agent(s["agent_id"]),
                    s["wallet_address"],
                    int(listed["n"]) if listed else 0,
                    usdc(int(listed["low"])) if listed else None,
                    int(made["n"]) if made else 0,
                    usdc(int(made["earned"] or 0)) if made else usdc(0),
                    f"{int(s['rating_sum']) / count:.1f} ({count})" if count else None,
                    iso(int(s["created_ms"])),
                )
            )
        )
    columns = (
        "Soul",
        "Name",
        "Seller",
        "Wallet",
        "Services on sale",
        "Price from (USDC)",
        "Sales",
        "Earned (USDC)",
        "Rating",
        "Listed",
    )
    return Section(
        f"The latest {LATEST} souls",
        table=Table(columns, tuple(rows), "No soul is listed."),
        note="Sales are fulfilled orders; earned is the sellers' share of them (the rest is the service's fee).",
    )


async def _orders_by_state() -> Section:
    rows = await (
        SoulOrder.select(
            SoulOrder.state, Count(alias="n"), Sum(SoulOrder.price, alias="price"), Sum(SoulOrder.share, alias="share")
        )
        .group_by(SoulOrder.state)
        .order_by(SoulOrder.state)
    )
    table = tuple(
        Row(
            (
                r["state"],
                int(r["n"]),
                usdc(int(r["price"] or 0)),
                usdc(int(r["share"] or 0)),
                usdc(int(r["price"] or 0) - int(r["share"] or 0)),
            )
        )
        for r in rows
    )
    columns = ("State", "Orders", "Paid (USDC)", "Sellers' share (USDC)", "Service fee (USDC)")
    return Section("Orders by state", table=Table(columns, table, "No order yet."))


async def _latest_orders() -> Section:
    orders = await _newest(
        SoulOrder,
        SoulOrder.id,
        SoulOrder.soul_id,
        SoulOrder.service_id,
        SoulOrder.buyer_agent_id,
        SoulOrder.state,
        SoulOrder.price,
        SoulOrder.share,
        SoulOrder.created_ms,
    )
    slugs = {
        r["id"]: r["slug"]
        for r in await SoulAgent.select(SoulAgent.id, SoulAgent.slug).where(
            SoulAgent.id.is_in([o["soul_id"] for o in orders] or [""])
        )
    }
    titles = {
        r["id"]: r["title"]
        for r in await SoulService.select(SoulService.id, SoulService.title).where(
            SoulService.id.is_in([o["service_id"] for o in orders] or [""])
        )
    }
    rows = tuple(
        Row(
            (
                Link.job(o["id"]),  # an order's id is the buyer's job
                slugs.get(o["soul_id"], o["soul_id"]),
                titles.get(o["service_id"], o["service_id"]),
                Link.agent(o["buyer_agent_id"]),
                o["state"],
                usdc(int(o["price"])),
                usdc(int(o["share"])),
                iso(int(o["created_ms"])),
            )
        )
        for o in orders
    )
    columns = ("Order", "Soul", "Service", "Buyer", "State", "Price (USDC)", "Seller's share (USDC)", "Ordered")
    return Section(
        f"The latest {LATEST} orders",
        table=Table(columns, rows, "No order yet."),
        note="What a buyer asked for and what the seller delivered are theirs: the console does not show them.",
    )


async def _payouts(platform: Platform) -> tuple[Section, Section]:
    totals = await platform.payout_totals()
    latest = await platform.latest_payouts(LATEST)
    by_state = Table(
        ("State", "Payouts", "Amount (USDC)"),
        tuple(Row((t["status"], t["count"], t["amount_usdc"])) for t in totals),
        "No payout yet.",
    )
    rows = tuple(
        Row(
            (
                p["payout_id"],
                Link.agent(str(p["agent_id"])),
                p["to_address"],
                p["amount_usdc"],
                p["status"],
                p["settlement_tx"],
                p["created_at"],
            )
        )
        for p in latest
    )
    columns = ("Payout", "Agent", "To", "Amount (USDC)", "State", "Settlement", "Created")
    return (
        Section("Payouts by state", table=by_state, note="Earnings withdrawn to a wallet, by every seller."),
        Section(f"The latest {LATEST} payouts", table=Table(columns, rows, "No payout yet.")),
    )


async def _summary() -> Section:
    souls = await SoulAgent.count()
    on_sale = await SoulService.count().where(SoulService.enabled == True)  # noqa: E712 (a column comparison)
    return Section("The marketplace", (Figure("Souls listed", souls), Figure("Services on sale", on_sale)))


async def load(platform: Platform, query: Mapping[str, str], item: str | None) -> Report | None:
    if item is not None:  # the page has no items
        return None
    payouts = await _payouts(platform)
    return Report(
        "Marketplace",
        (await _summary(), await _souls(), await _orders_by_state(), await _latest_orders(), *payouts),
    )


OPERATOR_PAGE = OperatorPage(
    name="marketplace", title="Marketplace", load=load, description="Souls, their orders and payouts."
)
