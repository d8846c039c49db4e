"""One purchase at an ACP merchant, as the `commerce_buy` job runs it: create the checkout
session, select the fulfilment option, check the authoritative total against the agent's
cap, mint a delegated payment token for exactly that total through the `psp` provider, and
complete. Every POST carries an Idempotency-Key made of the job's request id and the step,
so a run repeated after a crash replays each step at the merchant instead of doing it twice.

Anything that stops the purchase before the merchant completes it raises `CheckoutFailed`
(the job then fails `checkout_failed` and the agent is refunded); a session opened at the
merchant is cancelled first, so nothing is charged there."""

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


class CheckoutFailed(Exception):
    """Why the purchase could not be completed (said to the agent; never a secret)."""

    def __init__(self, reason: str, *, session_id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.session_id = session_id


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
            raise CheckoutFailed("the merchant requires 3-D Secure authentication, which this service cannot perform")
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


async def buy(client: AcpClient, issuer: TokenIssuer, purchase: Purchase, progress: Progress) -> Completed:
    """Run the purchase to its completion at the merchant; raise CheckoutFailed before it."""
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
) -> Completed:
    value = purchase.value
    check_items(value, session)
    problems = _errors(session)
    if session.get("status") == "authentication_required":
        raise CheckoutFailed("the merchant requires 3-D Secure authentication, which this service cannot perform")
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
    try:
        token = await issuer.issue_token(
            amount=total,
            currency=currency,
            checkout_session_id=session["id"],
            merchant_id=str(config.get("merchant_id") or purchase.merchant["id"]),
            expires_at=int(time.time()) + purchase.token_ttl_s,
            idempotency_key=_key(purchase, "token"),
        )
    except Exception as exc:  # the PSP's refusal or absence: nothing was paid
        raise CheckoutFailed(f"no payment token could be minted ({exc})") from exc
    await progress("completing", currency=currency, total_minor=total, spent=spent)
    body = {
        "buyer": buyer_of(value),
        "payment_data": {
            "handler_id": handler["id"],
            "instrument": {"type": "card", "credential": {"type": "spt", "token": str(token["id"])}},
            "billing_address": address_of(value),
        },
    }
    try:
        answer = await client.complete(session["id"], body, _key(purchase, "complete"))
    except Unreachable:
        answer = Answer(599, None)
    if answer.status >= 500 or answer.status == 599:
        # no answer to go by: the merchant may have completed; its session says
        try:
            answer = await client.get(session["id"])
        except Unreachable as exc:
            raise CheckoutFailed("the merchant did not answer the completion", session_id=session["id"]) from exc
    done = _session(answer, "complete")
    if done.get("status") == "authentication_required":
        raise CheckoutFailed("the merchant requires 3-D Secure authentication, which this service cannot perform")
    order = done.get("order")
    if done.get("status") != "completed" or not isinstance(order, Mapping) or not order.get("id"):
        said = "; ".join(_errors(done)) or f"status {done.get('status')!r}"
        raise CheckoutFailed(f"the merchant did not complete the checkout ({said})")
    return Completed(session_id=session["id"], currency=currency, total_minor=total, spent=spent, order=order)
