"""The periodic read of each site's domain registration, and its `domain_expiring` notice.

Every `INTERVAL_S` the task takes up to `BATCH` sites with a domain not read for
`TOLLWAY_WEBSITE_DOMAIN_CHECK_S` seconds, asks the `domains` provider for the registered
domain's expiry and stores it. When the expiry is within `TOLLWAY_WEBSITE_DOMAIN_WARN_DAYS`
days the owner is notified once for that expiry (`domain_warned_ms` holds the expiry told
of): a renewal moves the expiry, so the next approach is told again. Without a configured
`domains` provider it does nothing; a site whose lookup fails is tried again next round.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from tollway import PeriodicTask, PluginContext, StateKey, ToolError, iso, now_ms

from . import settings as site_settings
from .domains import KIND, DomainsClient, Registration, registrable_domain
from .tables import Site

log = logging.getLogger(__name__)

INTERVAL_S = 3600.0  # how often the task wakes; each site is read once per DOMAIN_CHECK_S
BATCH = 100  # sites read per run at most
DAY_MS = 86_400_000
_TOLD_UNCONFIGURED: StateKey[bool] = StateKey("website", "domains_unconfigured_logged")


@dataclass(frozen=True)
class CheckReport:
    """What one run did: sites read (stored), lookups that failed, notifications sent."""

    checked: int = 0
    failed: int = 0
    notified: int = 0


def _client(context: PluginContext) -> DomainsClient | None:
    try:
        client, _cost = context.platform.provider(KIND)
    except LookupError as exc:
        if not context.state.get(_TOLD_UNCONFIGURED):
            context.state.set(_TOLD_UNCONFIGURED, True)
            log.info("domain expiry check: no domains provider is configured (%s); skipping", exc)
        return None
    context.state.pop(_TOLD_UNCONFIGURED)
    return client  # type: ignore[return-value]  # the kind's duck type


def _days_left(expires_ms: int, now: int) -> int:
    return max(0, math.ceil((expires_ms - now) / DAY_MS))


async def check_due(context: PluginContext, *, now: int | None = None) -> CheckReport:
    """One run over the sites whose domain is due for a read (see the module docstring)."""
    client = _client(context)
    if client is None:
        return CheckReport()
    settings = context.settings(site_settings.FAMILY)
    check_ms = int(site_settings.number(settings, site_settings.DOMAIN_CHECK_S) * 1000)
    warn_ms = int(site_settings.number(settings, site_settings.DOMAIN_WARN_DAYS) * DAY_MS)
    now = now_ms() if now is None else now
    stale = Site.domain_checked_ms.is_null() | (Site.domain_checked_ms <= now - check_ms)
    due = await (
        Site.select(Site.id, Site.agent_id, Site.domain, Site.domain_warned_ms)
        .where(Site.domain.is_not_null() & stale)
        .order_by(Site.id)
        .limit(BATCH)
    )
    looked_up: dict[str, Registration | ToolError | None] = {}  # one lookup per registered domain a run
    checked = failed = notified = 0
    for site in due:
        try:
            registered = registrable_domain(site["domain"])
        except ValueError:
            registered = None
        if registered is not None and registered not in looked_up:
            try:
                looked_up[registered] = await client.registration(registered)
            except ToolError as exc:  # DomainsUnavailable, or another provider's failure
                looked_up[registered] = exc
        found = looked_up.get(registered) if registered is not None else None
        if isinstance(found, ToolError):
            failed += 1
            log.warning(
                "domain expiry check: %s for site %s: %s (%s)", registered, site["id"], found.message, found.code
            )
            continue
        expires = found.expires_ms if found is not None else None
        warn = expires is not None and expires - now <= warn_ms and site["domain_warned_ms"] != expires
        async with context.platform.transaction():
            changes = {Site.domain_expires_ms: expires, Site.domain_checked_ms: now}
            await Site.update(changes).where(Site.id == site["id"])
            if warn and expires is not None:
                # claimed once per expiry, so two runs at once tell the owner once
                claimed = await (
                    Site.update({Site.domain_warned_ms: expires})
                    .where(
                        (Site.id == site["id"]) & (Site.domain_warned_ms.is_null() | (Site.domain_warned_ms != expires))
                    )
                    .returning(Site.id)
                )
                if claimed:
                    await _notify(context, site, expires, now)
                    notified += 1
        checked += 1
    return CheckReport(checked, failed, notified)


async def _notify(context: PluginContext, site: dict, expires: int, now: int) -> None:
    days = _days_left(expires, now)
    domain = site["domain"]
    renew = "Renew it at its registrar to keep the site reachable there."
    if expires <= now:
        title = f"The registration of {domain} has lapsed"
        body = f"The registration of {domain} lapsed on {iso(expires)}. {renew}"
    else:
        title = f"{domain} expires in {days} day{'s' if days != 1 else ''}"
        body = f"The registration of {domain} lapses on {iso(expires)}. {renew}"
    await context.platform.notify(
        site["agent_id"],
        "domain_expiring",
        title,
        body,
        {"site_id": site["id"], "domain": domain, "expires_at": iso(expires), "days_left": days},
    )


async def check_domains(context: PluginContext) -> None:
    """The periodic task's run."""
    report = await check_due(context)
    if report.checked or report.failed:
        log.info("domain expiry check: %d read, %d failed, %d notified", report.checked, report.failed, report.notified)


TASKS: tuple[PeriodicTask, ...] = (
    PeriodicTask(name="website_domain_expiry", interval_s=INTERVAL_S, run=check_domains),
)
