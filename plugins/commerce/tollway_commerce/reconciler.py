"""The commerce reconciler: a periodic task that finishes every payment left in progress.

A session is `complete_in_progress` from the moment its charge attempt is written (before
the PSP is asked) until the PSP's answer is committed. When the process dies in between —
the PSP charged the card but our transaction never committed — the session stays in
progress. After `TOLLWAY_COMMERCE_IN_FLIGHT_S` the reconciler takes it (a compare-and-swap
on the attempt's start, so two processes never both do), asks the PSP again with the same
idempotency key (which answers the payment it made the first time, or makes it when the
first request never arrived), and then either completes the order exactly as the complete
call would have, or — when the order can no longer be completed (the item left the
catalogue, the session expired) — refunds the payment and cancels the session. Declines go
back to `ready_for_payment`, 3-D Secure to `authentication_required`; a payment still
processing is left for the next sweep. Operator refunds left `pending` as long (refunds.py) are
asked of the PSP again with their own key and finished the same way. A soul service sold over
ACP whose souls order ended declined or expired is refunded in full, once (refunds.py,
`refund_ended_soul_orders`)."""

from __future__ import annotations

import logging

from tollway import Platform, PluginContext, now_ms, storage

from . import acp, refunds, sessions
from .acp import AcpError
from .psp import PspError
from .settings import FAMILY, IN_FLIGHT_S, number
from .tables import CheckoutSession, IdempotencyRecord

log = logging.getLogger("tollway.commerce")


async def sweep(context: PluginContext) -> int:
    """Finish the payments left in progress; how many were finished."""
    platform = context.platform
    settings = platform.settings(FAMILY)
    try:
        sessions.psp_of(platform)
    except AcpError:
        return 0  # no PSP configured: nothing can have been charged
    cutoff = now_ms() - number(settings, IN_FLIGHT_S, low=1) * 1000
    due = await CheckoutSession.select(CheckoutSession.id, CheckoutSession.complete_started_ms).where(
        (CheckoutSession.status == sessions.IN_PROGRESS) & (CheckoutSession.complete_started_ms < cutoff)
    )
    done = 0
    for row in due:
        try:
            done += await finish(platform, row["id"], row["complete_started_ms"])
        except Exception:
            log.exception("the reconciler could not finish checkout session %s", row["id"])
    try:
        done += await refunds.sweep(platform, cutoff)  # operator refunds the PSP never answered
    except Exception:
        log.exception("the reconciler could not finish the pending refunds")
    try:
        done += await refunds.refund_ended_soul_orders(platform)  # souls orders declined or expired
    except Exception:
        log.exception("the reconciler could not refund the soul service orders that ended undelivered")
    await _forget_old_keys(settings)
    return done


async def finish(platform: Platform, session_id: str, started_ms: int) -> bool:
    claimed = (
        await CheckoutSession.update({CheckoutSession.complete_started_ms: now_ms()})
        .where(
            (CheckoutSession.id == session_id)
            & (CheckoutSession.status == sessions.IN_PROGRESS)
            & (CheckoutSession.complete_started_ms == started_ms)
        )
        .returning(CheckoutSession.payment, CheckoutSession.total)
    )
    if not claimed:
        return False  # another process took it
    step = storage.loads(claimed[0]["payment"])
    psp = sessions.psp_of(platform)
    try:
        charge = await sessions._ask(psp, session_id, int(claimed[0]["total"]), step)
    except AcpError:
        return False  # the PSP still does not answer: the next sweep asks again
    try:
        await sessions.settle(platform, None, session_id, step, charge)
    except (sessions.Declined, sessions.NeedsAuthentication):
        return True  # back to the agent: nothing was taken, or 3-D Secure is asked
    except (sessions.PaymentMismatch, sessions.NotOnSale) as exc:
        await refund(platform, session_id, str(exc))
        return True
    except AcpError as exc:
        if exc.error.code == "payment_processing":
            return False
        raise
    log.info("checkout session %s finished by the reconciler", session_id)
    return True


async def refund(platform: Platform, session_id: str, reason: str) -> None:
    """Refund a charged session that cannot be completed, and cancel it."""
    row = await CheckoutSession.select().where(CheckoutSession.id == session_id).first()
    step = storage.loads(row["payment"]) if row["payment"] else {"attempt": row["attempt"]}
    psp = sessions.psp_of(platform)
    key = sessions.charge_key(session_id, int(step["attempt"]))
    try:
        charge = (
            await psp.charge(
                amount=int(row["total"]),
                currency=sessions.CURRENCY,
                token=step.get("token", ""),
                key=key,
                metadata={"checkout_session_id": session_id},
            )
            if step.get("step") == "charge"
            else await psp.retrieve(row["payment_intent"])
        )
        if charge.id and charge.status == "succeeded":
            await psp.refund(payment=charge.id, key=f"{key}-refund")
    except PspError:
        log.exception("the refund of checkout session %s failed; the reconciler tries again", session_id)
        return
    async with storage.transaction():
        session = sessions._decoded(row)
        session.status = "canceled"
        session.messages = [
            acp.MessageError(
                code="invalid",
                content_type="plain",
                content=f"The order could not be completed ({reason}); the payment was refunded in full.",
            )
        ]
        await sessions._save(session, complete_started_ms=None)


async def _forget_old_keys(settings: object) -> None:
    """Idempotency records past their retention (≥ 24 h) are deleted."""
    from .settings import IDEMPOTENCY_TTL_S

    ttl_ms = max(86_400, number(settings, IDEMPOTENCY_TTL_S)) * 1000  # type: ignore[arg-type]
    await IdempotencyRecord.delete().where(IdempotencyRecord.created_ms < now_ms() - ttl_ms)
