"""One purchase at an ACP merchant, as the `commerce_buy` job runs it: create the checkout
session, select the fulfilment option, check the authoritative total against the agent's
cap, mint a delegated payment token for exactly that total through the `psp` provider, and
complete. Every POST carries an Idempotency-Key made of the job's request id and the step,
so a run repeated after a crash replays each step at the merchant instead of doing it twice.

Anything that stops the purchase before `complete` is sent raises `CheckoutFailed` (the job
then fails `checkout_failed` and the agent is refunded); a session opened at the merchant is
cancelled first, so nothing is charged there.

Once `complete` is sent the merchant may have charged the token whatever we heard, so only
its word ends the purchase (`settle`): a completed session is the purchase; a session
canceled or expired, or a refusal of complete the session confirms, is `CheckoutFailed`;
anything else (no answer, a 5xx, a request still in flight, a session still in progress)
raises `OutcomeUnknown`, and the job asks again later with the identical request."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from . import money
from .acp_client import AcpClient, Answer, Unreachable
from .wire import CommerceBuyInput

DELEGATED_HANDLER = "dev.acp.tokenized.card"
THREE_DS = "the merchant requires 3-D Secure authentication, which this service cannot perform"


class CheckoutFailed(Exception):
    """Why the purchase could not be completed (said to the agent; never a secret)."""

    def __init__(self, reason: str, *, session_id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.session_id = session_id


class OutcomeUnknown(Exception):
    """`complete` was sent and the merchant has not said how it ended: it may have charged."""


class TokenIssuer(Protocol):
    """What the buyer needs of a `psp` provider's client: a delegated payment token usable
    once, for at most `amount` minor units of `currency`, at one merchant's checkout
    session, until `expires_at` (unix seconds). The answer has the token's `id`."""

    name: str  # the PSP as ACP payment handlers name it (`psp`), e.g. "stripe"

    async def issue_token(
        self,
        *,
        amount: int,
        currency: str,
        checkout_session_id: str,
        merchant_id: str,
        expires_at: int,
        idempotency_key: str,
    ) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Completed:
    session_id: str
    currency: str
    total_minor: int
    spent: int  # micro-USDC
    order: Mapping[str, Any]


@dataclass(frozen=True)
class Payment:
    """What `complete` is sent with, kept on the order before it is sent (`progress("completing")`)
    so it can be sent again identically: the same Idempotency-Key and body get the original answer."""

    session_id: str
    handler_id: str | None  # None: an order from before these were kept (then only the session is read)
    token: str | None
    currency: str
    total_minor: int
    spent: int  # micro-USDC


@dataclass
class Purchase:
    """The inputs of one purchase and what the steps learnt (saved by `progress`)."""

    request_id: str
    merchant: Mapping[str, Any]
    value: CommerceBuyInput
    max_total: int  # micro-USDC
    currency: str  # the items' currency in the merchant's feed (the create request's)
    rates: Mapping[str, Decimal]
    token_ttl_s: int
    session_id: str | None = None
    token_expires_at: int | None = None  # fixed by the first run that asks for the token


class Progress(Protocol):
    async def __call__(self, state: str, **fields: Any) -> None: ...


def _key(purchase: Purchase, step: str) -> str:
    return f"{purchase.request_id}:{step}"


def buyer_of(value: CommerceBuyInput) -> dict[str, Any]:
    first, _, last = value.buyer.name.strip().rpartition(" ")
    buyer: dict[str, Any] = {"full_name": value.buyer.name, "email": value.buyer.email}
    if first and last:
        buyer.update(first_name=first, last_name=last)
    if value.buyer.phone_number:
        buyer["phone_number"] = value.buyer.phone_number
    return buyer


def address_of(value: CommerceBuyInput) -> dict[str, Any]:
    a = value.fulfillment_address
    return {
        "name": a.name,
        "line_one": a.line_one,
        "line_two": a.line_two,
        "city": a.city,
        "state": a.state,
        "country": a.country,
        "postal_code": a.postal_code,
    }


def create_body(value: CommerceBuyInput, currency: str) -> dict[str, Any]:
    """The create request. ACP 2026-01-30's Item has no quantity: a quantity of n is the item
    listed n times (the merchant's line items answer the quantity)."""
    details: dict[str, Any] = {"name": value.fulfillment_address.name, "email": value.buyer.email}
    if value.buyer.phone_number:
        details["phone_number"] = value.buyer.phone_number
    details["address"] = address_of(value)
    return {
        "line_items": [{"id": item.product_id} for item in value.items for _ in range(item.quantity)],
        "currency": currency,
        "capabilities": {"interventions": {"supported": []}},  # we cannot run 3-D Secure for an agent
        "buyer": buyer_of(value),
        "fulfillment_details": details,
    }


def _errors(session: Mapping[str, Any]) -> list[str]:
    return [
        f"{m.get('code', 'error')}: {m.get('content', '')}".strip()
        for m in session.get("messages") or []
        if isinstance(m, Mapping) and m.get("type") == "error"
    ]


def _amount(totals: object, kind: str = "total") -> int | None:
    for total in totals if isinstance(totals, list) else []:
        if isinstance(total, Mapping) and total.get("type") == kind and isinstance(total.get("amount"), int):
            return int(total["amount"])
    return None


def _session(answer: Answer, what: str) -> dict[str, Any]:
    if not answer.ok:
        if isinstance(answer.body, Mapping) and answer.body.get("code") == "requires_3ds":
            raise CheckoutFailed(THREE_DS)
        raise CheckoutFailed(f"the merchant refused to {what} the checkout session ({answer.error()})")
    if not isinstance(answer.body.get("id"), str):
        raise CheckoutFailed(f"the merchant's answer to {what} is not a checkout session")
    return answer.body


def check_items(value: CommerceBuyInput, session: Mapping[str, Any]) -> None:
    """Each requested item is in the session's line items with its quantity and in stock."""
    wanted: dict[str, int] = {}
    for item in value.items:
        wanted[item.product_id] = wanted.get(item.product_id, 0) + item.quantity
    found: dict[str, int] = {}
    for line in session.get("line_items") or []:
        if not isinstance(line, Mapping):
            continue
        item_id = (line.get("item") or {}).get("id") if isinstance(line.get("item"), Mapping) else None
        if line.get("availability_status") == "out_of_stock":
            raise CheckoutFailed(f"out_of_stock: {item_id} is out of stock at the merchant")
        if isinstance(item_id, str):
            found[item_id] = found.get(item_id, 0) + int(line.get("quantity") or 0)
    for item_id, quantity in wanted.items():
        if found.get(item_id, 0) != quantity:
            raise CheckoutFailed(
                f"the merchant's cart has {found.get(item_id, 0)} of {item_id}, not the {quantity} asked for"
            )


def _option_cost(option: Mapping[str, Any]) -> int:
    cost = _amount(option.get("totals"))
    if cost is None:
        cost = sum(t.get("amount", 0) for t in option.get("totals") or [] if isinstance(t, Mapping))
    return int(cost)


def choose_option(value: CommerceBuyInput, session: Mapping[str, Any]) -> Mapping[str, Any] | None:
    options = [o for o in session.get("fulfillment_options") or [] if isinstance(o, Mapping) and o.get("id")]
    if value.fulfillment_option is not None:
        for option in options:
            if option["id"] == value.fulfillment_option:
                return option
        offered = ", ".join(str(o["id"]) for o in options) or "none"
        raise CheckoutFailed(
            f"the merchant offers no fulfillment option {value.fulfillment_option!r} (offered: {offered})"
        )
    if not options:
        return None
    return min(options, key=lambda o: (_option_cost(o), str(o["id"])))


def _selected(session: Mapping[str, Any]) -> set[str]:
    return {
        str(s.get("option_id"))
        for s in session.get("selected_fulfillment_options") or []
        if isinstance(s, Mapping) and s.get("option_id")
    }


def handler_for(session: Mapping[str, Any], psp: str) -> Mapping[str, Any]:
    """The session's payment handler our delegated token pays: a tokenized card handler of our PSP."""
    capabilities = session.get("capabilities") if isinstance(session.get("capabilities"), Mapping) else {}
    payment = capabilities.get("payment") if isinstance(capabilities.get("payment"), Mapping) else {}
    handlers: Sequence[Any] = payment.get("handlers") or []
    fitting = [
        h
        for h in handlers
        if isinstance(h, Mapping)
        and h.get("requires_delegate_payment")
        and str(h.get("psp", "")).lower() == psp.lower()
    ]
    if not fitting:
        raise CheckoutFailed(f"the merchant takes no delegated {psp} payment token for this session")
    return next((h for h in fitting if h.get("name") == DELEGATED_HANDLER), fitting[0])


async def cancel_quietly(client: AcpClient, purchase: Purchase, session_id: str) -> None:
    """Cancel a session we will not complete (best effort: a merchant that is down keeps it until it expires)."""
    try:
        await client.cancel(session_id, _key(purchase, "cancel"))
    except Unreachable:
        pass


async def buy(client: AcpClient, issuer: TokenIssuer, purchase: Purchase, progress: Progress) -> Payment:
    """Open the session and mint the token, up to the point `complete` is to be sent (saved as
    `completing`); raise CheckoutFailed before it. `settle` sends complete."""
    value = purchase.value
    try:
        session = _session(
            await client.create(create_body(value, purchase.currency), _key(purchase, "create")), "create"
        )
        purchase.session_id = session["id"]
        await progress("session_open", checkout_session_id=session["id"])
        option = choose_option(value, session)
        if option is not None and str(option["id"]) not in _selected(session):
            item_ids = [
                str(li["id"]) for li in session.get("line_items") or [] if isinstance(li, Mapping) and li.get("id")
            ]
            body = {
                "selected_fulfillment_options": [
                    {"type": option.get("type", "shipping"), "option_id": option["id"], "item_ids": item_ids}
                ]
            }
            session = _session(await client.update(session["id"], body, _key(purchase, "update")), "update")
        return await _pay(client, issuer, purchase, session, progress)
    except Unreachable as exc:
        raise CheckoutFailed(f"the merchant could not be reached ({exc})", session_id=purchase.session_id) from exc


async def _pay(
    client: AcpClient, issuer: TokenIssuer, purchase: Purchase, session: dict[str, Any], progress: Progress
) -> Payment:
    value = purchase.value
    check_items(value, session)
    problems = _errors(session)
    if session.get("status") == "authentication_required":
        raise CheckoutFailed(THREE_DS)
    if session.get("status") != "ready_for_payment":
        said = "; ".join(problems) or "no reason given"
        raise CheckoutFailed(f"the session is {session.get('status')!r}, not ready for payment ({said})")
    if problems:
        raise CheckoutFailed("; ".join(problems))
    currency = str(session.get("currency") or "").lower()
    total = _amount(session.get("totals"))
    if total is None:
        raise CheckoutFailed("the merchant's session states no total")
    spent = money.to_usdc(total, currency, purchase.rates)
    if spent is None:
        raise CheckoutFailed(f"the session is priced in {currency.upper()}, which has no USDC rate on this service")
    if spent > purchase.max_total:
        raise CheckoutFailed(
            f"the merchant's total is {total} {currency.upper()} minor units ({Decimal(spent) / 1_000_000} USDC), "
            f"above max_total_usdc {value.max_total_usdc}"
        )
    handler = handler_for(session, issuer.name)
    config = handler.get("config") if isinstance(handler.get("config"), Mapping) else {}
    if purchase.token_expires_at is None:  # kept first: a rerun asks the PSP for the identical token
        purchase.token_expires_at = int(time.time()) + purchase.token_ttl_s
        await progress("session_open", token_expires_at=purchase.token_expires_at)
    try:
        token = await issuer.issue_token(
            amount=total,
            currency=currency,
            checkout_session_id=session["id"],
            merchant_id=str(config.get("merchant_id") or purchase.merchant["id"]),
            expires_at=purchase.token_expires_at,
            idempotency_key=_key(purchase, "token"),
        )
    except Exception as exc:  # the PSP's refusal or absence: nothing was paid
        raise CheckoutFailed(f"no payment token could be minted ({exc})") from exc
    payment = Payment(session["id"], str(handler["id"]), str(token["id"]), currency, total, spent)
    # kept before complete is sent: from here on only the merchant's word ends the purchase
    await progress(
        "completing",
        currency=currency,
        total_minor=total,
        spent=spent,
        payment_handler_id=payment.handler_id,
        payment_token=payment.token,
        completing_ms=int(time.time() * 1000),
    )
    return payment


# Session statuses once complete was sent: the merchant may still be completing (unknown), or
# has ended the session without completing it (definite).
WORKING = ("complete_in_progress", "in_progress", "pending_approval", "requires_escalation")
ENDED = ("canceled", "expired")
# Refusals of complete that say nothing of its outcome: ask again later (rfc §6.4: 409 in flight;
# 422 idempotency_conflict is a different body under our key, which we never send).
NOT_AN_OUTCOME = (408, 409, 425, 429)


def complete_body(value: CommerceBuyInput, payment: Payment) -> dict[str, Any]:
    """The complete request: the same bytes whenever it is sent for one purchase."""
    return {
        "buyer": buyer_of(value),
        "payment_data": {
            "handler_id": payment.handler_id,
            "instrument": {"type": "card", "credential": {"type": "spt", "token": payment.token}},
            "billing_address": address_of(value),
        },
    }


def _refused(answer: Answer | None) -> bool:
    """A 4xx answer to complete that is the merchant's refusal of it (not a request to come back)."""
    if answer is None or not 400 <= answer.status < 500 or answer.status in NOT_AN_OUTCOME:
        return False
    return not (isinstance(answer.body, Mapping) and answer.body.get("code") == "idempotency_conflict")


def _completed(session: Mapping[str, Any], payment: Payment) -> Completed:
    # the token capped the charge at the total we checked against the cap: that is what was spent
    order = session.get("order") if isinstance(session.get("order"), Mapping) else {}
    return Completed(payment.session_id, payment.currency, payment.total_minor, payment.spent, order)


async def settle(client: AcpClient, purchase: Purchase, payment: Payment, *, again: bool) -> Completed:
    """Send complete (`again`: it may have been sent before; the same Idempotency-Key and body get
    the merchant's original answer) and go by the merchant's word: Completed; CheckoutFailed when it
    definitely did not complete; OutcomeUnknown when it has not said."""
    answer: Answer | None = None
    if payment.token is not None:
        try:
            answer = await client.complete(
                payment.session_id, complete_body(purchase.value, payment), _key(purchase, "complete")
            )
        except Unreachable:
            answer = None
    if answer is not None and answer.ok and isinstance(answer.body.get("id"), str):
        return _outcome(answer.body, payment, answered=True)
    # no answer, a 5xx, or a refusal (of a repeat, perhaps: a 5xx is not kept against the key, so a
    # repeat is a fresh request, which a merchant refuses for a session it completed): the session says
    try:
        read = await client.get(payment.session_id)
    except Unreachable:
        read = None
    said = answer.error() if answer is not None else "no answer"
    if read is not None and read.ok and isinstance(read.body.get("id"), str):
        status = read.body.get("status")
        if status == "completed" or status in ENDED or (_refused(answer) and status not in WORKING):
            return _outcome(read.body, payment, answered=False, refusal=said if _refused(answer) else None)
        raise OutcomeUnknown(f"the merchant's answer to complete: {said}; the session is {status!r}")
    if _refused(answer) and not again:  # the answer to the one complete ever sent
        raise CheckoutFailed(f"the merchant refused to complete the checkout session ({said})")
    raise OutcomeUnknown(f"the merchant's answer to complete: {said}; its session could not be read")


def _outcome(session: Mapping[str, Any], payment: Payment, *, answered: bool, refusal: str | None = None) -> Completed:
    status = session.get("status")
    if status == "completed":
        return _completed(session, payment)
    if status in ENDED:
        raise CheckoutFailed(f"the merchant did not complete the checkout (the session is {status})")
    if refusal is not None:
        raise CheckoutFailed(f"the merchant refused to complete the checkout session ({refusal})")
    if status in WORKING or not answered:
        raise OutcomeUnknown(f"the session is {status!r}")
    # the merchant answered complete with a session it did not complete (nor is completing)
    if status == "authentication_required":
        raise CheckoutFailed(THREE_DS)
    said = "; ".join(_errors(session)) or f"status {status!r}"
    raise CheckoutFailed(f"the merchant did not complete the checkout ({said})")
