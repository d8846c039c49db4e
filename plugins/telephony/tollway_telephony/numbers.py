"""Each agent's own number: bought from Twilio on the agent's first text or call, used for
every later one, released when unused.

* **First use.** `number_for` answers the number a send goes from. Without one, the agent's
  claim row is written first (`telephony_numbers.holder` = agent and account is unique, so
  two first sends at once make one claim; the other waits for it), the operator's monthly cap
  is checked, then Twilio is asked for a local number of `TOLLWAY_SMS_NUMBER_COUNTRY` that
  takes texts and calls (`AvailablePhoneNumbers/{Country}/Local.json`) and buys it
  (`POST IncomingPhoneNumbers.json`, its incoming-message and incoming-call webhooks set to
  the service). A failure removes the claim and fails the send (refunded); the next send tries
  again. A dead send's claim is taken over, keeping the number it may have bought (found by
  its FriendlyName), or cleared by the periodic task, which releases such a number.
* **Its cost.** A number costs `TOLLWAY_SMS_NUMBER_COST_USDC` a month (Twilio charges a month
  at purchase, then each month). The send that bought it carries the first month on its
  receipt's provider cost; the first send of each later month of the number's life carries
  that month (and any month nobody sent in).
* **The cap.** Every number held during a calendar month (UTC) costs that month's fee, so the
  cap counts the numbers held at some time this month (bought, still held, or released this
  month): at most `TOLLWAY_SMS_NUMBERS_MAX_MONTHLY` of them, and their fees at most
  `TOLLWAY_SMS_NUMBERS_BUDGET_USDC`. A send that would need one more is refused
  `provider_unavailable` (refunded); agents holding a number go on using it.
* **Release.** `release_idle` (a periodic task) warns an agent with `phone_expiring`
  `TOLLWAY_SMS_NUMBER_WARN_DAYS` before its number has been unused (no text or call sent from
  it, no text received on it) for `TOLLWAY_SMS_NUMBER_IDLE_DAYS`, then releases it
  (`DELETE IncomingPhoneNumbers/{Sid}.json`) and says so with a second `phone_expiring`; the
  agent's next send buys a new number. A release never happens sooner than the warning period
  after the warning.
* **Inbound.** A text or call to an agent's number is the agent's (`owner_of`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import math
import secrets
import time
from collections.abc import Mapping
from typing import Any

from tollway import (
    InboundMessage,
    PeriodicTask,
    PluginContext,
    Refusal,
    Setting,
    ToolContext,
    ToolError,
    iso,
    now_ms,
    to_micro,
)

from .settings import DEFAULT_PUBLIC_URL, INBOUND_CALL_PATH, INBOUND_SMS_PATH, SMS_PUBLIC_URL
from .tables import PhoneNumber
from .twilio import Bought, NumbersClient

log = logging.getLogger("tollway.telephony")
FAMILY = "sms"  # the numbers' settings: the voice tool reads them too
DAY_MS = 86_400_000
MONTH_MS = 30 * DAY_MS  # a number's billing month
STALE_MS = 120_000  # a claim not bought in this time was abandoned (a worker died): another send takes it over
ABANDONED_MS = 3_600_000  # one no send took over in this time is cleared by the periodic task
WAIT_S = 30.0  # how long a send waits for the number another send is buying (or the release under way)
POLL_S = 0.05
CANDIDATES = 3  # numbers offered tried in turn when one is bought by someone else meanwhile
INTERVAL_S = 3600.0

AGENT_NUMBERS = Setting(
    FAMILY,
    "agent_numbers",
    "on",
    "on: each agent texts and calls from a number of its own, bought on its first use; off: every agent uses "
    "the configured TOLLWAY_<KIND>_TWILIO_FROM_NUMBER.",
)
NUMBER_COUNTRY = Setting(FAMILY, "number_country", "US", "The country (ISO 3166-1 alpha-2) of the numbers bought.")
NUMBER_COST = Setting(
    FAMILY, "number_cost_usdc", "1.15", "What one number costs a month at Twilio (USDC; set your rate)."
)
NUMBERS_MAX = Setting(
    FAMILY,
    "numbers_max_monthly",
    "100",
    "The most numbers held during a calendar month (bought, held or released in it); blank: no limit.",
)
NUMBERS_BUDGET = Setting(
    FAMILY,
    "numbers_budget_usdc",
    None,
    "The most the month's numbers may cost together (USDC, at TOLLWAY_SMS_NUMBER_COST_USDC each); unset: no limit.",
)
IDLE_DAYS = Setting(
    FAMILY, "number_idle_days", "30", "Days without a text or call after which an agent's number is released."
)
WARN_DAYS = Setting(
    FAMILY, "number_warn_days", "3", "Days before the release its agent is warned (a phone_expiring notification)."
)
SETTINGS = (AGENT_NUMBERS, NUMBER_COUNTRY, NUMBER_COST, NUMBERS_MAX, NUMBERS_BUDGET, IDLE_DAYS, WARN_DAYS)


@dataclasses.dataclass(frozen=True)
class Use:
    """The number a send goes from, and the months of its cost the send carries (micro-USDC)."""

    number: str
    cost: int = 0


@dataclasses.dataclass(frozen=True)
class IdleReport:
    warned: int = 0
    released: int = 0
    failed: int = 0
    abandoned: int = 0  # claims of sends that died, cleared (and their number released, if one was bought)


# -- settings ------------------------------------------------------------------------------
def _value(settings: Mapping[str, str], setting: Setting) -> str | None:
    value = settings.get(setting.name)
    return value.strip() if value is not None and value.strip() else setting.default


def enabled(settings: Mapping[str, str]) -> bool:
    return (_value(settings, AGENT_NUMBERS) or "on").lower() not in ("off", "false", "0", "no")


def _days_ms(settings: Mapping[str, str], setting: Setting) -> int:
    try:
        days = float(_value(settings, setting) or setting.default or "0")
    except ValueError:
        days = float(setting.default or "0")
    return max(0, int(days * DAY_MS)) if math.isfinite(days) else 0


def _usdc(settings: Mapping[str, str], setting: Setting) -> int | None:
    raw = _value(settings, setting)
    if raw is None:
        return None
    try:
        return max(0, to_micro(raw))
    except (ValueError, ArithmeticError):
        return to_micro(setting.default) if setting.default else None


def _limit(settings: Mapping[str, str]) -> int | None:
    raw = _value(settings, NUMBERS_MAX)
    return int(raw) if raw is not None and raw.isdigit() else None


def _sms_settings(ctx: ToolContext) -> Mapping[str, str]:
    return ctx.plugin.settings(FAMILY) if ctx.plugin is not None else ctx.settings


def month_start(now: int) -> int:
    day = datetime.datetime.fromtimestamp(now / 1000, tz=datetime.UTC)
    return int(datetime.datetime(day.year, day.month, 1, tzinfo=datetime.UTC).timestamp() * 1000)


# -- a send's number -------------------------------------------------------------------------
async def number_for(ctx: ToolContext, client: Any) -> Use:
    """The number this send goes from: the agent's own (bought now when it has none), or the
    configured number when agent numbers are off. Raises (and buys nothing) when the cap is
    reached or Twilio cannot sell one: the send fails and is refunded."""
    settings = _sms_settings(ctx)
    if not enabled(settings) or not ctx.agent_id:
        return Use(client.from_number)
    holder = f"{ctx.agent_id}|{client.account_sid}"
    deadline = time.monotonic() + WAIT_S
    while True:
        row = await PhoneNumber.select().where(PhoneNumber.holder == holder).first()
        now = now_ms()
        if row is None:
            claim = await _claim(ctx.agent_id, client.account_sid, holder, settings, now)
            if claim is not None:
                return await _provision(client, settings, claim, now)
            continue  # another send claimed it first
        if row["state"] == "active":
            used = await _use(row, now)
            if used is not None:
                return used
            continue  # another send or the release moved it meanwhile
        if row["state"] == "provisioning" and row["updated_ms"] <= now - STALE_MS:
            if await _take_over(row, now):
                return await _provision(client, settings, row["id"], now, taken_over=True)
            continue
        if time.monotonic() > deadline:
            raise ToolError(
                "provider_unavailable",
                "Your phone number is still being set up or released; try again in a minute.",
                status=503,
            )
        await asyncio.sleep(POLL_S)


async def _take_over(row: Mapping[str, Any], now: int) -> bool:
    """Take over a stale claim (once: conditional on it being unchanged since read)."""
    taken = await (
        PhoneNumber.update({PhoneNumber.updated_ms: now})
        .where(
            (PhoneNumber.id == row["id"])
            & (PhoneNumber.state == "provisioning")
            & (PhoneNumber.updated_ms == row["updated_ms"])
        )
        .returning(PhoneNumber.id)
    )
    return bool(taken)


async def _claim(agent_id: str, account_sid: str, holder: str, settings: Mapping[str, str], now: int) -> str | None:
    """Write the agent's claim (once: `holder` is unique); its id when this send made it."""
    claim = f"num_{secrets.token_hex(12)}"
    await PhoneNumber.insert(
        PhoneNumber(
            id=claim,
            holder=holder,
            agent_id=agent_id,
            account_sid=account_sid,
            country=(_value(settings, NUMBER_COUNTRY) or "US").upper()[:2],
            phone_number=None,
            sid=None,
            state="provisioning",
            monthly_cost=_usdc(settings, NUMBER_COST) or 0,
            billed_months=0,
            last_used_ms=now,
            warned_ms=None,
            provisioned_ms=None,
            released_ms=None,
            created_ms=now,
            updated_ms=now,
        )
    ).on_conflict(target=PhoneNumber.holder, action="DO NOTHING")
    kept = await PhoneNumber.select(PhoneNumber.id).where(PhoneNumber.holder == holder).first()
    return claim if kept is not None and kept["id"] == claim else None


async def _use(row: Mapping[str, Any], now: int) -> Use | None:
    """Mark the number used now, and bill the months of it no send carried yet (once: the
    update is conditional on the months billed, so two sends at once never bill one twice)."""
    months = (now - int(row["provisioned_ms"] or now)) // MONTH_MS + 1
    due = max(0, months - int(row["billed_months"]))
    changed = await (
        PhoneNumber.update(
            {
                PhoneNumber.last_used_ms: now,
                PhoneNumber.warned_ms: None,
                PhoneNumber.billed_months: int(row["billed_months"]) + due,
                PhoneNumber.updated_ms: now,
            }
        )
        .where(
            (PhoneNumber.id == row["id"])
            & (PhoneNumber.state == "active")
            & (PhoneNumber.billed_months == row["billed_months"])
        )
        .returning(PhoneNumber.id)
    )
    return Use(row["phone_number"], due * int(row["monthly_cost"])) if changed else None


async def _provision(
    client: Any, settings: Mapping[str, str], claim: str, now: int, *, taken_over: bool = False
) -> Use:
    """Buy the claimed number: the cap first, then Twilio. Any failure drops the claim. A
    claim taken over from a send that died first adopts the number that send may have bought
    (found by its FriendlyName), so no number is ever bought and forgotten."""
    try:
        row = await PhoneNumber.select().where(PhoneNumber.id == claim).first()
        if row is None:
            raise ToolError("provider_unavailable", "Your phone number's setup was interrupted; try again.", status=503)
        bought = await client.find_number(friendly_name(claim)) if taken_over else None
        if bought is None:
            await _check_cap(settings, now, claimed=True)
            bought = await _buy(client, settings, row["country"], claim)
    except Exception:
        await PhoneNumber.delete().where((PhoneNumber.id == claim) & (PhoneNumber.state == "provisioning"))
        raise
    stamp = now_ms()
    await PhoneNumber.update(
        {
            PhoneNumber.state: "active",
            PhoneNumber.phone_number: bought.phone_number,
            PhoneNumber.sid: bought.sid,
            PhoneNumber.billed_months: 1,
            PhoneNumber.provisioned_ms: stamp,
            PhoneNumber.last_used_ms: stamp,
            PhoneNumber.updated_ms: stamp,
        }
    ).where(PhoneNumber.id == claim)
    log.info("telephony: bought %s (%s) for claim %s", bought.phone_number, bought.sid, claim)
    return Use(bought.phone_number, int(row["monthly_cost"]))


def friendly_name(claim: str) -> str:
    """The FriendlyName a number is bought with: its claim, to find it again."""
    return f"tollway {claim}"


async def admit_payer(context: PluginContext, kind: str, value: Any, agent_id: str) -> None:
    """Before payment (`AdmissionChecks.admit_payer`): refuse a send of an agent without a
    number that would need one the cap has no room for. The run checks again when it buys."""
    settings = context.settings(FAMILY)
    if not enabled(settings) or not agent_id:
        return
    account = str(context.settings(kind).get("twilio_account_sid") or "").strip()
    held = await PhoneNumber.select(PhoneNumber.id).where(PhoneNumber.holder == f"{agent_id}|{account}").first()
    if held is None:
        await _check_cap(settings, now_ms(), claimed=False)


async def _check_cap(settings: Mapping[str, str], now: int, *, claimed: bool) -> None:
    """Refuse when the numbers held this month, with the one wanted (`claimed`: its claim is
    among them already), pass the cap. Two claims at once may both be refused at the edge;
    never both admitted past it."""
    rows = await PhoneNumber.select(PhoneNumber.monthly_cost).where(
        PhoneNumber.released_ms.is_null() | (PhoneNumber.released_ms >= month_start(now))
    )
    held = [int(r["monthly_cost"]) for r in rows] + ([] if claimed else [_usdc(settings, NUMBER_COST) or 0])
    limit, budget = _limit(settings), _usdc(settings, NUMBERS_BUDGET)
    spent = sum(held)
    if limit is not None and len(held) > limit:
        reason = f"{limit} number{'s' if limit != 1 else ''} a month"
    elif budget is not None and spent > budget:
        reason = f"{budget / 1_000_000:.2f} USDC of numbers a month"
    else:
        return
    raise Refusal(
        "provider_unavailable",
        f"This service's cap on phone numbers is reached ({reason}): no number of your own can be set up "
        "for you this month, and nothing was charged.",
        status=503,
        details={"reason": "number_cap_reached"},
    )


async def _buy(client: NumbersClient, settings: Mapping[str, str], country: str, claim: str) -> Bought:
    base = (_value(settings, SMS_PUBLIC_URL) or DEFAULT_PUBLIC_URL).rstrip("/")
    offered = await client.available_numbers(country, limit=CANDIDATES)
    if not offered:
        raise ToolError(
            "provider_unavailable",
            f"Twilio has no local number in {country} that takes texts and calls to offer now; try again later.",
            status=503,
        )
    for number in offered:
        try:
            return await client.buy_number(
                number,
                sms_url=base + INBOUND_SMS_PATH,
                voice_url=base + INBOUND_CALL_PATH,
                friendly_name=friendly_name(claim),
            )
        except Refusal as exc:
            if exc.code != "number_taken":
                raise
    raise ToolError("provider_unavailable", "The numbers Twilio offered were bought by others meanwhile.", status=503)


# -- inbound -----------------------------------------------------------------------------
async def owner_of(number: str, *, now: int | None = None) -> str | None:
    """The agent whose number `number` is (None: nobody's, e.g. the configured shared number);
    a text or call to it counts as a use of it."""
    if not number:
        return None
    row = await (
        PhoneNumber.select(PhoneNumber.id, PhoneNumber.agent_id)
        .where((PhoneNumber.phone_number == number) & PhoneNumber.state.is_in(["active", "releasing"]))
        .first()
    )
    if row is None:
        return None
    stamp = now_ms() if now is None else now
    await PhoneNumber.update(
        {PhoneNumber.last_used_ms: stamp, PhoneNumber.warned_ms: None, PhoneNumber.updated_ms: stamp}
    ).where((PhoneNumber.id == row["id"]) & (PhoneNumber.state == "active"))
    return str(row["agent_id"])


async def incoming_call(platform: Any, params: Mapping[str, str], raw: bytes) -> str | None:
    """A call to one of the service's numbers: handed to the inbound handlers as a `voice`
    InboundMessage (no recording: the caller hears that the number takes texts); the agent
    owning the number, or None."""
    to = (params.get("To") or "").strip()[:40]
    agent_id = await owner_of(to)
    await platform.deliver_inbound(
        InboundMessage(
            channel="voice",
            sender=(params.get("From") or "").strip()[:40],
            recipients=(to,) if to else (),
            subject="",
            text="",
            message_id=(params.get("CallSid") or "").strip()[:64] or None,
            received_ms=now_ms(),
            raw=raw,
        )
    )
    return agent_id


# -- release of idle numbers -------------------------------------------------------------------
def _client_for(context: PluginContext, account_sid: str) -> Any:
    """The configured provider's client of the account the number belongs to (sms, else voice)."""
    for kind in ("sms", "voice"):
        try:
            client, _cost = context.platform.provider(kind)
        except LookupError:
            continue
        if getattr(client, "account_sid", None) == account_sid:
            return client
    return None


async def release_idle(context: PluginContext, *, now: int | None = None) -> IdleReport:
    """Warn the agents whose numbers near the idle period, release those past it (warned at
    least the warning period before); see the module docstring."""
    settings = context.settings(FAMILY)
    now = now_ms() if now is None else now
    idle_ms = _days_ms(settings, IDLE_DAYS)
    warn_ms = min(_days_ms(settings, WARN_DAYS), idle_ms)
    warned = released = failed = 0
    nearing = await PhoneNumber.select().where(
        (PhoneNumber.state == "active")
        & PhoneNumber.warned_ms.is_null()
        & (PhoneNumber.last_used_ms <= now - (idle_ms - warn_ms))
    )
    for row in nearing:
        async with context.platform.transaction():
            claimed = await (
                PhoneNumber.update({PhoneNumber.warned_ms: now, PhoneNumber.updated_ms: now})
                .where(
                    (PhoneNumber.id == row["id"])
                    & (PhoneNumber.state == "active")
                    & PhoneNumber.warned_ms.is_null()
                    & (PhoneNumber.last_used_ms == row["last_used_ms"])
                )
                .returning(PhoneNumber.id)
            )
            if claimed:
                release_at = max(int(row["last_used_ms"]) + idle_ms, now + warn_ms)
                await _notify(context, row, "warning", release_at, now)
                warned += 1
    idle = await PhoneNumber.select().where(
        (PhoneNumber.state == "active")
        & (PhoneNumber.last_used_ms <= now - idle_ms)
        & PhoneNumber.warned_ms.is_not_null()
        & (PhoneNumber.warned_ms <= now - warn_ms)
    )
    for row in idle:
        done = await _release(context, row, now)
        released += done is True
        failed += done is False
    abandoned = await _clear_abandoned(context, now)
    return IdleReport(warned, released, failed, abandoned)


async def _clear_abandoned(context: PluginContext, now: int) -> int:
    """Claims a dead send left and no later send of the agent took over: the number it may
    have bought is released, the claim removed (it no longer counts toward the cap)."""
    cleared = 0
    stale = await PhoneNumber.select().where(
        (PhoneNumber.state == "provisioning") & (PhoneNumber.updated_ms <= now - ABANDONED_MS)
    )
    for row in stale:
        client = _client_for(context, row["account_sid"]) if await _take_over(row, now) else None
        if client is None:
            continue
        try:
            bought = await client.find_number(friendly_name(row["id"]))
            if bought is not None:
                await client.release_number(bought.sid)
        except (ToolError, Refusal) as exc:
            log.warning("telephony: clearing the abandoned claim %s failed (%s); tried again later", row["id"], exc)
            continue
        await PhoneNumber.delete().where((PhoneNumber.id == row["id"]) & (PhoneNumber.state == "provisioning"))
        cleared += 1
    return cleared


async def _release(context: PluginContext, row: Mapping[str, Any], now: int) -> bool | None:
    """Release one number: True when released, False when Twilio failed (tried again next
    run), None when a send used it meanwhile."""
    taken = await (
        PhoneNumber.update({PhoneNumber.state: "releasing", PhoneNumber.updated_ms: now})
        .where(
            (PhoneNumber.id == row["id"])
            & (PhoneNumber.state == "active")
            & (PhoneNumber.last_used_ms == row["last_used_ms"])
        )
        .returning(PhoneNumber.id)
    )
    if not taken:
        return None
    client = _client_for(context, row["account_sid"])
    try:
        if client is None:
            raise ToolError("provider_unavailable", f"no configured Twilio account {row['account_sid']}")
        await client.release_number(row["sid"])
    except (ToolError, Refusal) as exc:
        log.warning("telephony: releasing %s failed (%s); tried again later", row["phone_number"], exc)
        await PhoneNumber.update({PhoneNumber.state: "active"}).where(
            (PhoneNumber.id == row["id"]) & (PhoneNumber.state == "releasing")
        )
        return False
    async with context.platform.transaction():
        await PhoneNumber.update(
            {
                PhoneNumber.state: "released",
                PhoneNumber.holder: None,
                PhoneNumber.released_ms: now,
                PhoneNumber.updated_ms: now,
            }
        ).where(PhoneNumber.id == row["id"])
        await _notify(context, row, "released", now, now)
    log.info("telephony: released %s of agent %s (unused)", row["phone_number"], row["agent_id"])
    return True


async def _notify(context: PluginContext, row: Mapping[str, Any], stage: str, release_ms: int, now: int) -> None:
    number, last = row["phone_number"], int(row["last_used_ms"])
    idle_days = max(0, (now - last) // DAY_MS)
    if stage == "warning":
        days = max(1, math.ceil((release_ms - now) / DAY_MS))
        title = f"Your number {number} will be released in {days} day{'s' if days != 1 else ''}"
        body = (
            f"{number} has not sent or received a text or call since {iso(last)}. It will be released on "
            f"{iso(release_ms)} unless you text or call from it before then; your next message after that "
            "comes from a new number."
        )
    else:
        title = f"Your number {number} was released"
        body = (
            f"{number} was released for inactivity: unused since {iso(last)}. Replies to it no longer reach you; "
            "your next text or call comes from a new number."
        )
    await context.platform.notify(
        row["agent_id"],
        "phone_expiring",
        title,
        body,
        {
            "number": number,
            "stage": stage,
            "last_used_at": iso(last),
            "idle_days": idle_days,
            "released_at" if stage == "released" else "release_at": iso(release_ms),
        },
    )


async def release_idle_task(context: PluginContext) -> None:
    """The periodic task's run."""
    report = await release_idle(context)
    if report.warned or report.released or report.failed:
        log.info("telephony numbers: %d warned, %d released, %d failed", report.warned, report.released, report.failed)


TASKS = (PeriodicTask(name="telephony_idle_numbers", interval_s=INTERVAL_S, run=release_idle_task),)
