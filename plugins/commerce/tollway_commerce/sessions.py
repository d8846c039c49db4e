"""Checkout sessions as ACP 2026-01-30 describes them: built from the catalogue, priced in
cents, kept as the JSON answered last, moved through their statuses by create, update,
complete and cancel (docs/commerce.md, "Statuses").

Completing charges the session's total once through the `psp` provider. The charge's
idempotency key is the session's id and attempt number, and the attempt is written
(`complete_in_progress`, a recovery point) before the PSP is asked, so whoever finishes it —
this call, a retry, or the reconciler after a crash — asks the PSP with the same key and gets
the same payment back, never a second one. The order, the receipt, the credits or the
seller's share, the order event and the completed status are one transaction."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
from msgspec import UNSET

from tollway import Platform, iso, now_ms, storage

from . import acp, catalogue
from .acp import AcpError
from .psp import KIND, Charge, Psp, PspError
from .settings import FAMILY, IN_FLIGHT_S, SESSION_TTL_S, number, public_url
from .stripe_psp import HANDLER_ID
from .tables import AcpToken, CheckoutSession, Order

CURRENCY = "usd"
DIGITAL = "digital_instant"
OPEN = ("not_ready_for_payment", "ready_for_payment", "authentication_required")
COMPLETED = "completed"
IN_PROGRESS = "complete_in_progress"
TOOL = "acp_checkout"


Keep = Callable[[int, bytes], Awaitable[None]]  # keeps an answer against the request's Idempotency-Key


class Caller(msgspec.Struct, frozen=True):
    """The agent platform an ACP token names."""

    token_id: str
    platform: str
    agent_id: str
    webhook_url: str | None
    webhook_secret: str | None
    signing_key: str | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Caller:
        """The caller of an `AcpToken` row."""
        return cls(
            token_id=row["id"],
            platform=row["platform"],
            agent_id=row["agent_id"],
            webhook_url=row["webhook_url"],
            webhook_secret=row["webhook_secret"],
            signing_key=row["signing_key"],
        )


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def psp_of(platform: Platform) -> Psp:
    """The configured `psp` client; 503 service_unavailable (`provider_unavailable`) when none is."""
    try:
        client, _cost = platform.provider(KIND)
    except LookupError as exc:
        raise AcpError(
            503,
            "service_unavailable",
            "provider_unavailable",
            f"Checkout is not available: no payment service provider is configured ({exc}). Nothing was created.",
        ) from exc
    return client  # type: ignore[return-value]


# --- building the authoritative state ---------------------------------------------------------


def _money(kind: acp.TotalType, text: str, amount: int) -> acp.Total:
    return acp.Total(type=kind, display_text=text, amount=amount)


def _links(base: str) -> list[acp.Link]:
    return [
        acp.Link(type="terms_of_use", url=f"{base}/v1/commerce/policies#terms"),
        acp.Link(type="privacy_policy", url=f"{base}/v1/commerce/policies#privacy"),
        acp.Link(type="return_policy", url=f"{base}/v1/commerce/policies#returns"),
    ]


def capabilities(psp: Psp) -> acp.Capabilities:
    """The merchant's side of the negotiation: one delegated-card payment handler on the PSP,
    3-D Secure supported when the PSP asks for it."""
    return acp.Capabilities(
        payment=acp.Payment(
            handlers=[
                acp.PaymentHandler(
                    id=HANDLER_ID,
                    name="dev.acp.tokenized.card",
                    version="2026-01-22",
                    spec="https://acp.dev/handlers/tokenized.card",
                    requires_delegate_payment=True,
                    requires_pci_compliance=False,
                    psp=psp.name,
                    config_schema="https://acp.dev/schemas/handlers/tokenized.card/config.json",
                    instrument_schemas=["https://acp.dev/schemas/handlers/tokenized.card/instrument.json"],
                    config=psp.handler_config(),
                )
            ]
        ),
        interventions=acp.InterventionCapabilities(supported=["3ds"], enforcement="conditional"),
    )


async def _priced(
    settings: Mapping[str, str], items: list[acp.Item]
) -> tuple[list[acp.LineItem], list[acp.Message], dict[str, catalogue.Product], list[str]]:
    """Line items (one per item id, its quantity the times it is listed), the messages about
    items that cannot be bought, the products, and the ids in order."""
    order: list[str] = []
    counts: dict[str, int] = {}
    for item in items:
        if item.id not in counts:
            order.append(item.id)
        counts[item.id] = counts.get(item.id, 0) + 1
    found = await catalogue.find(settings, order)
    lines: list[acp.LineItem] = []
    messages: list[acp.Message] = []
    for index, item_id in enumerate(order):
        product = found.get(item_id)
        if product is None:
            messages.append(
                acp.MessageError(
                    code="not_found",
                    param=f"$.line_items[{index}].id",
                    content_type="plain",
                    content=f"No item {item_id!r} is on sale: see the product feed (GET /v1/commerce/feed/products).",
                )
            )
            continue
        quantity = counts[item_id]
        amount = product.unit_amount * quantity
        line = acp.LineItem(
            id=f"li_{hashlib.sha256(item_id.encode()).hexdigest()[:16]}",
            item=acp.Item(id=item_id, name=product.title, unit_amount=product.unit_amount),
            quantity=quantity,
            name=product.title,
            description=product.description,
            unit_amount=product.unit_amount,
            product_id=item_id,
            availability_status="in_stock",
            totals=[
                _money("items_base_amount", "Base amount", amount),
                _money("subtotal", "Subtotal", amount),
                _money("tax", "Tax", 0),
                _money("total", "Total", amount),
            ],
        )
        if product.seller_name:
            line.marketplace_seller_details = acp.MarketplaceSellerDetails(name=product.seller_name)
        lines.append(line)
    kinds = {found[i].kind for i in order if i in found}
    services = [i for i in order if i in found and found[i].kind == "soul_service"]
    if len(kinds) > 1 or len(services) > 1:
        messages.append(
            acp.MessageError(
                code="unsupported",
                param="$.line_items",
                content_type="plain",
                content="A session buys either credit packs or one soul service (any quantity): "
                "open one session per service.",
            )
        )
    return lines, messages, found, order


def _state(
    *,
    session_id: str,
    psp: Psp,
    settings: Mapping[str, str],
    lines: list[acp.LineItem],
    messages: list[acp.Message],
    buyer: Any,
    fulfillment_details: Any,
    locale: Any,
    timezone: Any,
    metadata: Any,
    created_ms: int,
    expires_ms: int,
) -> acp.CheckoutSession:
    total = sum(line.totals[-1].amount for line in lines)
    errors = [m for m in messages if isinstance(m, acp.MessageError)]
    return acp.CheckoutSession(
        id=session_id,
        protocol=acp.ProtocolVersion(version=acp.API_VERSION),
        capabilities=capabilities(psp),
        status="ready_for_payment" if lines and not errors else "not_ready_for_payment",
        currency=CURRENCY,
        buyer=buyer,
        locale=locale,
        timezone=timezone,
        line_items=lines,
        fulfillment_details=fulfillment_details,
        fulfillment_options=[
            acp.FulfillmentOptionDigital(
                id=DIGITAL,
                title="Instant delivery",
                description="Credits are added, and a soul service is ordered, the moment the payment succeeds.",
                totals=[_money("total", "Delivery", 0)],
            )
        ],
        selected_fulfillment_options=[
            acp.SelectedFulfillmentOption(type="digital", option_id=DIGITAL, item_ids=[li.item.id for li in lines])
        ]
        if lines
        else UNSET,
        totals=[
            _money("items_base_amount", "Item(s) total", total),
            _money("subtotal", "Subtotal", total),
            _money("tax", "Tax", 0),
            _money("fulfillment", "Delivery", 0),
            _money("total", "Total", total),
        ],
        messages=messages,
        links=_links(public_url(settings)),
        created_at=iso(created_ms),
        updated_at=iso(now_ms()),
        expires_at=iso(expires_ms),
        metadata=metadata,
    )


def total_of(session: acp.CheckoutSession) -> int:
    return next(t.amount for t in session.totals if t.type == "total")


def _selected_options_problem(request: acp.CheckoutSessionUpdateRequest) -> AcpError | None:
    if request.selected_fulfillment_options is UNSET:
        return None
    for i, option in enumerate(request.selected_fulfillment_options):
        if option.option_id != DIGITAL:
            return AcpError(
                400,
                "invalid_request",
                "invalid",
                f"No fulfillment option {option.option_id!r}: the only one is {DIGITAL!r}.",
                f"$.selected_fulfillment_options[{i}].option_id",
            )
    return None


# --- create, read, update, cancel -------------------------------------------------------------


async def _load(caller: Caller, session_id: str, *, lock: bool = False) -> dict[str, Any]:
    query = CheckoutSession.select().where(
        (CheckoutSession.id == session_id) & (CheckoutSession.token_id == caller.token_id)
    )
    row = await (storage.lock_rows(query) if lock else query).first()
    if row is None:
        raise AcpError(404, "invalid_request", "not_found", f"No checkout session {session_id!r}.", "$.id")
    if row["status"] in OPEN and row["expires_ms"] < now_ms():
        await CheckoutSession.update({CheckoutSession.status: "expired", CheckoutSession.updated_ms: now_ms()}).where(
            CheckoutSession.id == session_id
        )
        row["status"] = "expired"
        state = storage.loads(row["state"])
        state["status"] = "expired"
        row["state"] = storage.dumps(state)
    return row


def _decoded(row: Mapping[str, Any]) -> acp.CheckoutSession:
    session = msgspec.convert(storage.loads(row["state"]), acp.CheckoutSession)
    session.status = row["status"]
    return session


async def create(platform: Platform, caller: Caller, request: acp.CheckoutSessionCreateRequest) -> acp.CheckoutSession:
    psp = psp_of(platform)
    if request.currency.lower() != CURRENCY:
        raise AcpError(
            400, "invalid_request", "invalid", "Tollway sells in US dollars only: currency must be 'usd'.", "$.currency"
        )
    settings = platform.settings(FAMILY)
    lines, messages, _found, _order = await _priced(settings, request.line_items)
    messages += await _buyer_messages(platform, request.buyer)
    created = now_ms()
    expires = created + number(settings, SESSION_TTL_S, low=60) * 1000
    session = _state(
        session_id=new_id("cs"),
        psp=psp,
        settings=settings,
        lines=lines,
        messages=messages,
        buyer=request.buyer,
        fulfillment_details=request.fulfillment_details,
        locale=request.locale,
        timezone=request.timezone,
        metadata=request.metadata,
        created_ms=created,
        expires_ms=expires,
    )
    await CheckoutSession.insert(
        CheckoutSession(
            id=session.id,
            token_id=caller.token_id,
            status=session.status,
            state=acp.encode(session).decode(),
            total=total_of(session),
            attempt=0,
            payment_intent=None,
            complete_started_ms=None,
            payment=None,
            created_ms=created,
            updated_ms=created,
            expires_ms=expires,
        )
    )
    return session


async def _buyer_messages(platform: Platform, buyer: Any) -> list[acp.Message]:
    """A `customer_id` must name an agent of this service: its credits, its receipt."""
    if buyer is UNSET or buyer.customer_id is UNSET:
        return []
    if await platform.agent_exists(buyer.customer_id):
        return []
    return [
        acp.MessageError(
            code="invalid",
            param="$.buyer.customer_id",
            content_type="plain",
            content=f"customer_id {buyer.customer_id!r} is not an agent of this service: leave it out to buy as the platform.",
        )
    ]


async def retrieve(caller: Caller, session_id: str) -> acp.CheckoutSession:
    return _decoded(await _load(caller, session_id))


async def update(
    platform: Platform, caller: Caller, session_id: str, request: acp.CheckoutSessionUpdateRequest
) -> acp.CheckoutSession:
    psp = psp_of(platform)
    problem = _selected_options_problem(request)
    if problem is not None:
        raise problem
    settings = platform.settings(FAMILY)
    async with storage.transaction():
        row = await _load(caller, session_id, lock=True)
        if row["status"] not in ("not_ready_for_payment", "ready_for_payment"):
            raise AcpError(
                409, "invalid_request", "invalid_state", f"The session is {row['status']}: it can no longer be changed."
            )
        old = _decoded(row)
        items = (
            request.line_items
            if request.line_items is not UNSET
            else [li.item for li in old.line_items for _ in range(li.quantity)]
        )
        items = [acp.Item(id=i.id) for i in items]
        buyer = request.buyer if request.buyer is not UNSET else old.buyer
        lines, messages, _found, _order = await _priced(settings, items)
        messages += await _buyer_messages(platform, buyer)
        session = _state(
            session_id=session_id,
            psp=psp,
            settings=settings,
            lines=lines,
            messages=messages,
            buyer=buyer,
            fulfillment_details=request.fulfillment_details
            if request.fulfillment_details is not UNSET
            else old.fulfillment_details,
            locale=old.locale,
            timezone=old.timezone,
            metadata=old.metadata,
            created_ms=row["created_ms"],
            expires_ms=row["expires_ms"],
        )
        await _save(session, total=total_of(session))
    return session


async def _save(session: acp.CheckoutSession, **columns: Any) -> None:
    session.updated_at = iso(now_ms())
    values: dict[Any, Any] = {
        CheckoutSession.status: session.status,
        CheckoutSession.state: acp.encode(session).decode(),
        CheckoutSession.updated_ms: now_ms(),
    }
    values.update({getattr(CheckoutSession, name): value for name, value in columns.items()})
    await CheckoutSession.update(values).where(CheckoutSession.id == session.id)


async def cancel(platform: Platform, caller: Caller, session_id: str) -> acp.CheckoutSession:
    psp_of(platform)
    async with storage.transaction():
        row = await _load(caller, session_id, lock=True)
        if row["status"] in (COMPLETED, "canceled", "expired"):
            raise AcpError(
                405, "invalid_request", "invalid_state", f"The session is {row['status']}: it cannot be canceled."
            )
        if row["status"] == IN_PROGRESS:
            raise AcpError(
                409,
                "invalid_request",
                "checkout_in_progress",
                "A payment of this session is in progress: it cannot be canceled now.",
            )
        session = _decoded(row)
        session.status = "canceled"
        session.messages = [acp.MessageInfo(content_type="plain", content="Checkout session has been canceled.")]
        await _save(session)
    return session


# --- complete ---------------------------------------------------------------------------------


def charge_key(session_id: str, attempt: int) -> str:
    """The PSP idempotency key of a session's charge attempt: derived from the session, so
    every retry and the reconciler ask for the same payment."""
    return f"tollway-acp-{session_id}-{attempt}"


async def complete(
    platform: Platform,
    caller: Caller,
    session_id: str,
    request: acp.CheckoutSessionCompleteRequest,
    keep: Keep | None = None,
) -> acp.CheckoutSession:
    psp = psp_of(platform)
    data = request.payment_data
    if data.purchase_order_number is not UNSET and data.instrument is UNSET:
        raise AcpError(
            400,
            "invalid_request",
            "unsupported",
            "Purchase orders are not accepted: pay with a delegated token.",
            "$.payment_data",
        )
    if data.handler_id is UNSET or data.instrument is UNSET:
        raise AcpError(
            400, "invalid_request", "missing", "payment_data needs handler_id and instrument.", "$.payment_data"
        )
    if data.handler_id != HANDLER_ID:
        raise AcpError(
            400,
            "invalid_request",
            "invalid",
            f"Unknown payment handler {data.handler_id!r}: use {HANDLER_ID!r}.",
            "$.payment_data.handler_id",
        )
    settings = platform.settings(FAMILY)
    in_flight_ms = number(settings, IN_FLIGHT_S, low=1) * 1000
    async with storage.transaction():
        row = await _load(caller, session_id, lock=True)
        status = row["status"]
        now = now_ms()
        if status == IN_PROGRESS and (row["complete_started_ms"] or 0) > now - in_flight_ms:
            raise AcpError(
                409,
                "invalid_request",
                "checkout_in_progress",
                "A payment of this session is in progress: ask again in a moment.",
                headers={"Retry-After": "1"},
            )
        if status == "authentication_required" and request.authentication_result is UNSET:
            raise AcpError(
                400,
                "invalid_request",
                acp.errors.REQUIRES_3DS,
                "This checkout session requires issuer authentication. The request must include 'authentication_result'.",
                "$.authentication_result",
            )
        if status == COMPLETED:  # paid already (a retry whose first answer was lost): its state, nothing charged
            return _decoded(row)
        if status not in ("ready_for_payment", "authentication_required", IN_PROGRESS):
            raise AcpError(409, "invalid_request", "invalid_state", f"The session is {status}: it cannot be completed.")
        session = _decoded(row)
        attempt = int(row["attempt"])
        step: dict[str, Any]
        if status == "ready_for_payment":
            attempt += 1
            step = {"step": "charge", "token": data.instrument.credential.token, "attempt": attempt}
        elif status == "authentication_required":
            step = {
                "step": "authenticate",
                "payment_intent": row["payment_intent"],
                "authentication": msgspec.to_builtins(request.authentication_result),
                "attempt": attempt,
            }
        else:  # a payment left in progress: resume it (the same key asks for the same payment)
            step = storage.loads(row["payment"])
        if request.buyer is not UNSET:  # the buyer as the agent confirms it at payment
            if (await _buyer_messages(platform, request.buyer)) != []:
                raise AcpError(
                    400,
                    "invalid_request",
                    "invalid",
                    "buyer.customer_id is not an agent of this service.",
                    "$.buyer.customer_id",
                )
            session.buyer = request.buyer
        session.status = IN_PROGRESS
        await _save(
            session, attempt=attempt, complete_started_ms=now, payment=storage.dumps(step), total=total_of(session)
        )
    charge = await _ask(psp, session_id, int(row["total"]), step)
    return await settle(platform, caller, session_id, step, charge, keep)


async def _ask(psp: Psp, session_id: str, total: int, step: Mapping[str, Any]) -> Charge:
    key = charge_key(session_id, int(step["attempt"]))
    try:
        if step["step"] == "authenticate":
            return await psp.authenticate(
                payment=step["payment_intent"], authentication=step["authentication"], key=f"{key}-3ds"
            )
        return await psp.charge(
            amount=total, currency=CURRENCY, token=step["token"], key=key, metadata={"checkout_session_id": session_id}
        )
    except PspError as exc:  # nothing known: the session stays in progress for a retry or the reconciler
        raise AcpError(
            503,
            "service_unavailable",
            "payment_processing",
            f"The payment service did not answer ({exc}); the payment is finished on a retry or by the reconciler.",
            headers={"Retry-After": "5"},
        ) from exc


async def settle(
    platform: Platform,
    caller: Caller | None,
    session_id: str,
    step: Mapping[str, Any],
    charge: Charge,
    keep: Keep | None = None,
) -> acp.CheckoutSession:
    """Write what the PSP answered for the session's current attempt: the order (succeeded),
    authentication_required (requires_action), back to ready_for_payment (declined); a
    `processing` answer leaves it in progress. A session some other call already moved on
    is answered as it stands."""
    settings = platform.settings(FAMILY)
    webhook: str | None = None
    outcome: Exception | None = None
    async with storage.transaction():
        row = await storage.lock_rows(CheckoutSession.select().where(CheckoutSession.id == session_id)).first()
        session = _decoded(row)
        if row["status"] != IN_PROGRESS or int(row["attempt"]) != int(step["attempt"]):
            if row["status"] == COMPLETED:
                return session
            raise AcpError(409, "invalid_request", "invalid_state", f"The session is {row['status']}.")
        if charge.status == "processing":
            raise AcpError(
                503,
                "service_unavailable",
                "payment_processing",
                "The payment is still processing; the session is completed when it settles.",
                headers={"Retry-After": "5"},
            )
        if charge.status == "declined":
            session.status = "ready_for_payment"
            session.messages = [
                acp.MessageError(
                    code="payment_declined",
                    param="$.payment_data",
                    content_type="plain",
                    content=f"The payment was declined ({charge.decline_code or 'declined'}): complete again with another payment token.",
                )
            ]
            await _save(session, payment_intent=None, complete_started_ms=None, payment=None)
            outcome = Declined(session, charge)
        if charge.status == "requires_action":
            session.status = "authentication_required"
            session.authentication_metadata = _authentication_metadata(charge)
            session.messages = [
                acp.MessageInfo(
                    content_type="plain",
                    content="The card issuer asks for 3-D Secure: authenticate, then complete again with authentication_result.",
                )
            ]
            await _save(session, payment_intent=charge.id, complete_started_ms=None)
            outcome = NeedsAuthentication(session)
    if outcome is not None:  # raised after the commit of the session's new status
        raise outcome
    async with storage.transaction():
        row = await storage.lock_rows(CheckoutSession.select().where(CheckoutSession.id == session_id)).first()
        session = _decoded(row)
        if row["status"] != IN_PROGRESS or int(row["attempt"]) != int(step["attempt"]):
            if row["status"] == COMPLETED:
                return session
            raise AcpError(409, "invalid_request", "invalid_state", f"The session is {row['status']}.")
        total = int(row["total"])
        if charge.amount != total or charge.currency.lower() != CURRENCY:
            raise PaymentMismatch(charge)
        token = caller or await _caller_of(row["token_id"])
        order_id = new_id("ord")
        permalink = f"{public_url(settings)}/v1/commerce/orders/{order_id}"
        receipt = await _book(platform, token, session, row, charge)
        await Order.insert(
            Order(
                id=order_id,
                session_id=session_id,
                token_id=row["token_id"],
                agent_id=receipt["agent_id"],
                receipt_id=receipt["receipt_id"],
                payment_intent=charge.id,
                total=total,
                status="confirmed",
                created_ms=now_ms(),
                # a souls order was opened (_book): the reconciler watches how it ends (refunds.py)
                soul_order_open=any(li.item.id.startswith("soul:") for li in session.line_items),
            )
        )
        session.status = COMPLETED
        session.messages = []
        session.authentication_metadata = UNSET
        session.order = acp.Order(
            id=order_id,
            checkout_session_id=session_id,
            permalink_url=permalink,
            status="confirmed",
            confirmation=acp.OrderConfirmation(
                confirmation_number=order_id, receipt_url=f"{public_url(settings)}/v1/receipts/{receipt['receipt_id']}"
            ),
        )
        await _save(session, payment_intent=charge.id, complete_started_ms=None)
        if keep is not None:  # the answer kept against the Idempotency-Key commits with the order (RFC §6.8)
            await keep(200, acp.encode(session))
        if token.webhook_url and token.webhook_secret:
            # order_create as the order is confirmed; credits are delivered in this same
            # transaction, so their order is fulfilled at once: order_update says so.
            events = [("order_create", "confirmed")]
            products = await catalogue.find(settings, [li.item.id for li in session.line_items])
            if all(product.kind == "credits" for product in products.values()):
                events.append(("order_update", "fulfilled"))
            for kind, status in events:
                event = acp.WebhookEvent(
                    type=kind,  # type: ignore[arg-type]
                    data=acp.EventDataOrder(
                        checkout_session_id=session_id,
                        permalink_url=permalink,
                        status=status,
                        refunds=[],  # type: ignore[arg-type]
                    ),
                )
                await platform.enqueue_webhook(
                    webhook_id=f"{order_id}_{kind[6:]}",
                    kind=f"acp.{kind}",
                    subject=session_id,
                    url=token.webhook_url,
                    secret=token.webhook_secret,
                    body=acp.to_builtins(event),
                    signing="acp",
                )
            webhook = order_id
    if webhook:
        await platform.webhooks_due()
    return session


def _authentication_metadata(charge: Charge) -> dict[str, Any]:
    """ACP's 3-D Secure metadata for the agent's authentication (the acquirer and directory
    server the PSP's next action names, else the card network's defaults)."""
    action = charge.next_action or {}
    details = action.get("three_d_secure") or {}
    return {
        "channel": {
            "type": "browser",
            "browser": {
                "accept_header": "application/json",
                "ip_address": "0.0.0.0",
                "javascript_enabled": False,
                "language": "en-US",
                "user_agent": "Tollway ACP",
            },
        },
        "acquirer_details": {
            "acquirer_bin": str(details.get("acquirer_bin") or "000000"),
            "acquirer_country": str(details.get("acquirer_country") or "US"),
            "acquirer_merchant_id": str(details.get("acquirer_merchant_id") or "tollway"),
            "merchant_name": "Tollway",
        },
        "directory_server": str(details.get("directory_server") or "visa"),
    }


async def _caller_of(token_id: str) -> Caller:
    return Caller.of(await AcpToken.select().where(AcpToken.id == token_id).first())


async def _book(
    platform: Platform, caller: Caller, session: acp.CheckoutSession, row: Mapping[str, Any], charge: Charge
) -> dict[str, Any]:
    """The receipt of category `commerce` and what the sale moves: credits to the buyer, or
    the soul's share (the fee on the receipt), all in the caller's transaction."""
    settings = platform.settings(FAMILY)
    buyer = session.buyer
    agent_id = buyer.customer_id if buyer is not UNSET and buyer.customer_id is not UNSET else caller.agent_id
    found = await catalogue.find(settings, [li.item.id for li in session.line_items])
    missing = [li.item.id for li in session.line_items if li.item.id not in found]
    if missing:
        raise NotOnSale(missing)
    amount = int(row["total"]) * catalogue.MICRO_PER_CENT
    credit = sum(found[li.item.id].credit * li.quantity for li in session.line_items)
    seller = next((found[li.item.id] for li in session.line_items if found[li.item.id].kind == "soul_service"), None)
    share = fee = 0
    if seller is not None:
        share, fee = catalogue.split(amount, catalogue.souls_fee_percent(platform.settings("souls")))
    receipt = dict(
        await platform.record_outside_sale(
            agent_id=agent_id,
            amount=amount,
            payment_method=f"psp:{charge_psp(platform)}",
            payment_reference=charge.id,
            category="commerce",
            subcategory="soul_service" if seller else "credit_pack",
            tool=TOOL,
            request_id=session.id,
            credit=credit,
            soul_agent_id=seller.soul_id if seller else None,
            service_fee=fee,
            memo=", ".join(f"{li.quantity} x {li.item.id}" for li in session.line_items),
        )
    )
    if seller is not None:
        line = next(li for li in session.line_items if li.item.id == seller.item_id)
        share = await souls_order(
            platform,
            seller,
            order_id=session.id,
            buyer_agent_id=agent_id,
            receipt_id=receipt["receipt_id"],
            price=amount,
            request={
                "checkout_session_id": session.id,
                "item_id": seller.item_id,
                "quantity": line.quantity,
                "buyer": acp.to_builtins(session.buyer) if session.buyer is not UNSET else None,
                "metadata": session.metadata if session.metadata is not UNSET else None,
            },
        )
        await platform.pay_share(receipt["receipt_id"], seller_agent_id=seller.seller_agent_id or "", share=share)
    receipt.setdefault("agent_id", agent_id)
    return receipt


async def souls_order(
    platform: Platform,
    seller: catalogue.Product,
    *,
    order_id: str,
    buyer_agent_id: str,
    receipt_id: str,
    price: int,
    request: dict[str, Any],
) -> int:
    """The souls marketplace's order of a soul service sold over ACP, through the souls
    plugin's own `open_paid_order` (the order an x402 purchase makes: its state machine, its
    webhook to the seller), in the caller's transaction; the seller's share it answers."""
    from tollway_souls.orders import open_paid_order  # a soul service is on sale only with the souls plugin

    soul, service = seller.item_id.removeprefix("soul:").split("/", 1)
    return await open_paid_order(
        platform,
        order_id=order_id,
        soul=soul,
        service=service,
        buyer_agent_id=buyer_agent_id,
        receipt_id=receipt_id,
        price=price,
        request=request,
    )


def charge_psp(platform: Platform) -> str:
    try:
        return psp_of(platform).name
    except AcpError:
        return "unknown"


class Declined(Exception):
    def __init__(self, session: acp.CheckoutSession, charge: Charge) -> None:
        super().__init__("declined")
        self.session = session
        self.charge = charge


class NeedsAuthentication(Exception):
    def __init__(self, session: acp.CheckoutSession) -> None:
        super().__init__("authentication required")
        self.session = session


class PaymentMismatch(Exception):
    def __init__(self, charge: Charge) -> None:
        super().__init__(f"the PSP charged {charge.amount} {charge.currency}, not the session's total")
        self.charge = charge


class NotOnSale(Exception):
    def __init__(self, items: list[str]) -> None:
        super().__init__(f"no longer on sale: {', '.join(items)}")
        self.items = items
