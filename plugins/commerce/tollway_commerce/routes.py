"""The ACP merchant API (`/v1/checkout_sessions...`) as declared `tollway.Route`s, plus the
operator's ACP tokens and the product feed.

The checkout routes answer in ACP's own terms, not the service's envelope: every error is
ACP's flat error object, every answer's bytes are written here (so an idempotent replay is
the first answer byte for byte). Each call goes through the same gate, in this order:

1. `Authorization: Bearer <ACP token>` — a token the operator issued, not revoked (401);
2. `API-Version` — missing or not 2026-01-30: 400 with `supported_versions` (RFC §2.1);
3. `Signature` + `Timestamp` — required and verified when the platform registered a signing
   key (401 when missing, stale or wrong);
4. `Idempotency-Key` on every POST (RFC §6): 400 without one; scoped to the token and the
   path; same key and equivalent body → the first answer and status again
   (`Idempotent-Replayed: true`); same key, other body → 422; same key while the first is
   still running → 409 with `Retry-After`; 5xx answers are never kept; kept
   `TOLLWAY_COMMERCE_IDEMPOTENCY_TTL_S` (≥ 24 h), in the database;
5. the body, decoded into the ACP request type (400 naming the JSONPath of the bad field).
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from msgspec import UNSET

from tollway import Page, Refusal, Route, RouteCall, now_ms, storage

from . import acp, catalogue, sessions
from .acp import AcpError
from .sessions import Caller
from .settings import FAMILY, IDEMPOTENCY_TTL_S, IN_FLIGHT_S, SIGNATURE_TOLERANCE_S, number, public_url
from .tables import AcpToken, IdempotencyRecord

log = logging.getLogger("tollway.commerce")

JSON = "application/json"
MAX_KEY = 255
_AT = re.compile(r"at `([^`]+)`")

# --- the gate ---------------------------------------------------------------------------------


def _page(status: int, body: bytes, headers: dict[str, str]) -> Page:
    return Page(body, status=status, headers=headers, media_type=JSON)


def _echo(call: RouteCall) -> dict[str, str]:
    headers = {}
    key = call.request.headers.get("idempotency-key")
    if key and call.request.method == "POST":
        headers["Idempotency-Key"] = key
    request_id = call.request.headers.get("request-id")
    if request_id:
        headers["Request-Id"] = request_id
    return headers


def _error_page(call: RouteCall, error: AcpError) -> Page:
    return _page(error.status, error.body(), {**_echo(call), **error.headers})


async def caller_of(call: RouteCall) -> Caller:
    header = call.request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AcpError(401, "invalid_request", "unauthorized", "Authorization: Bearer <ACP token> is required.")
    digest = hashlib.sha256(token.strip().encode()).hexdigest()
    row = await AcpToken.select().where((AcpToken.token_hash == digest) & (AcpToken.revoked_ms.is_null())).first()
    if row is None:
        raise AcpError(401, "invalid_request", "unauthorized", "The ACP token is unknown or revoked.")
    return Caller.of(row)


def check_version(call: RouteCall) -> None:
    version = call.request.headers.get("api-version", "").strip()
    supported = {"supported_versions": list(acp.SUPPORTED_VERSIONS)}
    if not version:
        raise AcpError(
            400,
            "invalid_request",
            acp.errors.MISSING_API_VERSION,
            f"The API-Version header is required; this merchant supports {', '.join(acp.SUPPORTED_VERSIONS)}.",
            extra=supported,
        )
    if version not in acp.SUPPORTED_VERSIONS:
        raise AcpError(
            400,
            "invalid_request",
            acp.errors.UNSUPPORTED_API_VERSION,
            f"API-Version {version!r} is not supported; this merchant supports {', '.join(acp.SUPPORTED_VERSIONS)}.",
            extra=supported,
        )


def check_signature(call: RouteCall, caller: Caller) -> None:
    if not caller.signing_key:
        return
    signature = call.request.headers.get("signature", "")
    sent = call.request.headers.get("timestamp", "")
    if not signature or not sent:
        raise AcpError(
            401,
            "invalid_request",
            "signature_required",
            "This platform signs its requests: Signature and Timestamp are required.",
        )
    settings = call.platform.settings(FAMILY)
    problem = acp.signing.verify_request(
        caller.signing_key,
        signature,
        sent,
        call.request.body,
        tolerance_s=number(settings, SIGNATURE_TOLERANCE_S, low=1),
        now=time.time(),
    )
    if problem is not None:
        raise AcpError(401, "invalid_request", "invalid_signature", f"The request's signature is refused: {problem}.")


def decode(body: bytes, type_: type[Any]) -> Any:
    try:
        return msgspec.json.decode(body or b"{}", type=type_)
    except msgspec.ValidationError as exc:
        found = _AT.search(str(exc))
        raise AcpError(
            400, "invalid_request", "invalid", str(exc).split(" - at ")[0], found.group(1) if found else "$"
        ) from exc
    except msgspec.DecodeError as exc:
        raise AcpError(400, "invalid_request", "invalid", "The body is not JSON.", "$") from exc


Operation = Callable[[RouteCall, Caller, "sessions.Keep"], Awaitable[tuple[int, bytes]]]


class _Replay(Exception):
    def __init__(self, page: Page) -> None:
        super().__init__("replay")
        self.page = page


async def _claim_key(call: RouteCall, caller: Caller) -> str | None:
    """The idempotency record this POST owns now (its id), or a replay / refusal raised."""
    if call.request.method != "POST":
        return None
    key = call.request.headers.get("idempotency-key", "")
    if not key:
        raise AcpError(
            400,
            "invalid_request",
            acp.errors.IDEMPOTENCY_KEY_REQUIRED,
            "Idempotency-Key header is required on all POST requests",
        )
    if len(key) > MAX_KEY:
        raise AcpError(400, "invalid_request", "invalid", f"Idempotency-Key is at most {MAX_KEY} characters.")
    record_id = hashlib.sha256("\0".join((caller.token_id, call.request.path, key)).encode()).hexdigest()
    fingerprint = acp.signing.fingerprint(call.request.body)
    settings = call.platform.settings(FAMILY)
    now = now_ms()
    ttl_ms = max(86_400, number(settings, IDEMPOTENCY_TTL_S)) * 1000
    in_flight_ms = number(settings, IN_FLIGHT_S, low=1) * 1000
    async with storage.transaction():
        await IdempotencyRecord.delete().where(
            (IdempotencyRecord.id == record_id) & (IdempotencyRecord.created_ms < now - ttl_ms)
        )
        won = (
            await IdempotencyRecord.insert(
                IdempotencyRecord(
                    id=record_id, fingerprint=fingerprint, status=None, body=None, started_ms=now, created_ms=now
                )
            )
            .on_conflict(action="DO NOTHING")
            .returning(IdempotencyRecord.id)
        )
        if won:
            return record_id
        row = await storage.lock_rows(IdempotencyRecord.select().where(IdempotencyRecord.id == record_id)).first()
        if row["fingerprint"] != fingerprint:
            raise AcpError(
                422,
                "invalid_request",
                acp.errors.IDEMPOTENCY_CONFLICT,
                "Idempotency-Key has already been used with a different request body",
            )
        if row["status"] is not None:
            raise _Replay(
                _page(int(row["status"]), row["body"].encode(), {**_echo(call), "Idempotent-Replayed": "true"})
            )
        if row["started_ms"] > now - in_flight_ms:
            raise AcpError(
                409,
                "invalid_request",
                acp.errors.IDEMPOTENCY_IN_FLIGHT,
                "A request with this Idempotency-Key is currently being processed",
                headers={"Retry-After": "1"},
            )
        # the first request died with its key in flight: this one takes it over
        await IdempotencyRecord.update({IdempotencyRecord.started_ms: now}).where(IdempotencyRecord.id == record_id)
        return record_id


async def _keep(record_id: str | None, status: int, body: bytes) -> None:
    if record_id is None:
        return
    if status >= 500:  # RFC §6.5: never kept; a retry is a fresh request
        await IdempotencyRecord.delete().where(IdempotencyRecord.id == record_id)
        return
    await IdempotencyRecord.update({IdempotencyRecord.status: status, IdempotencyRecord.body: body.decode()}).where(
        IdempotencyRecord.id == record_id
    )


def acp_handler(operation: Operation, *, atomic: bool) -> Callable[[RouteCall], Awaitable[Page]]:
    """A checkout route's handler: the gate, then `operation`, its answer kept against the
    Idempotency-Key — in the operation's own transaction when `atomic` (no PSP call inside)."""

    async def handle(call: RouteCall) -> Page:
        record_id: str | None = None
        try:
            caller = await caller_of(call)
            check_version(call)
            check_signature(call, caller)
            record_id = await _claim_key(call, caller)
        except _Replay as replay:
            return replay.page
        except AcpError as error:
            return _error_page(call, error)

        async def keep(status: int, body: bytes) -> None:
            await _keep(record_id, status, body)

        try:
            if atomic:
                async with storage.transaction():
                    status, body = await operation(call, caller, keep)
                    await _keep(record_id, status, body)
                return _page(status, body, _echo(call))
            status, body = await operation(call, caller, keep)
        except AcpError as error:
            status, body = error.status, error.body()
            await _keep(record_id, status, body)
            return _error_page(call, error)
        except Exception:
            log.exception("ACP %s %s failed", call.request.method, call.request.path)
            await _keep(record_id, 500, b"")
            error = AcpError(500, "processing_error", "internal_error", "The request could not be processed; retry it.")
            return _error_page(call, error)
        await _keep(record_id, status, body)
        return _page(status, body, _echo(call))

    return handle


# --- the operations ---------------------------------------------------------------------------


async def _create(call: RouteCall, caller: Caller, _kept: sessions.Keep) -> tuple[int, bytes]:
    request = decode(call.request.body, acp.CheckoutSessionCreateRequest)
    return 201, acp.encode(await sessions.create(call.platform, caller, request))


async def _update(call: RouteCall, caller: Caller, _kept: sessions.Keep) -> tuple[int, bytes]:
    request = decode(call.request.body, acp.CheckoutSessionUpdateRequest)
    session = await sessions.update(call.platform, caller, call.params["checkout_session_id"], request)
    return 200, acp.encode(session)


async def _retrieve(call: RouteCall, caller: Caller, _kept: sessions.Keep) -> tuple[int, bytes]:
    return 200, acp.encode(await sessions.retrieve(caller, call.params["checkout_session_id"]))


async def _cancel(call: RouteCall, caller: Caller, _kept: sessions.Keep) -> tuple[int, bytes]:
    decode(call.request.body, acp.CancelSessionRequest)  # the intent trace is read, not kept
    return 200, acp.encode(await sessions.cancel(call.platform, caller, call.params["checkout_session_id"]))


async def _complete(call: RouteCall, caller: Caller, keep: sessions.Keep) -> tuple[int, bytes]:
    request = decode(call.request.body, acp.CheckoutSessionCompleteRequest)
    session_id = call.params["checkout_session_id"]
    try:
        session = await sessions.complete(call.platform, caller, session_id, request, keep)
    except sessions.Declined as declined:
        raise AcpError(
            402,
            "invalid_request",
            "payment_declined",
            f"The payment was declined ({declined.charge.decline_code or 'declined'}): the session is ready for payment "
            "again; complete it with another payment token.",
            "$.payment_data",
        ) from None
    except sessions.NeedsAuthentication:
        raise AcpError(
            402,
            "invalid_request",
            acp.errors.REQUIRES_3DS,
            "The card issuer requires 3-D Secure: the session is authentication_required; authenticate with its "
            "authentication_metadata (GET the session) and complete again with authentication_result.",
            "$.authentication_result",
        ) from None
    except (sessions.PaymentMismatch, sessions.NotOnSale) as exc:
        await refund_and_close(call.platform, session_id, str(exc))
        raise AcpError(
            409,
            "invalid_request",
            "invalid_state",
            f"The session could not be completed ({exc}); the payment was refunded.",
        ) from exc
    return 200, acp.encode(session)


async def refund_and_close(platform: Any, session_id: str, reason: str) -> None:
    """Give a charged session's payment back and cancel the session (nothing was booked)."""
    from .reconciler import refund

    await refund(platform, session_id, reason)


# --- declarations -----------------------------------------------------------------------------

SESSION = "/v1/checkout_sessions/{checkout_session_id}"
ACP_STATUSES = (400, 401, 404, 405, 409, 422, 503)


def _acp_route(
    method: str, path: str, name: str, title: str, description: str, operation: Operation, **kw: Any
) -> Route:
    return Route(
        method=method,  # type: ignore[arg-type]
        path=path,
        name=name,
        title=title,
        description=description
        + " ACP 2026-01-30 (Agentic Commerce Protocol): Authorization: Bearer <ACP token>, API-Version: 2026-01-30, "
        "Idempotency-Key on every POST; errors are ACP's flat error object.",
        handle=acp_handler(operation, atomic=kw.pop("atomic", True)),
        auth="public",  # the ACP token is checked by the handler: an agent platform is no agent
        rate_limit=None,
        raw_body=True,
        page=True,
        media_type=JSON,
        tags=("acp",),
        statuses=ACP_STATUSES,
        param_docs=(("checkout_session_id", "The checkout session's id (cs_...)."),),
        answer_type=kw.pop("answer_type", acp.CheckoutSession),
        error_type=acp.Error,
        **kw,
    )


ACP_ROUTES = (
    _acp_route(
        "POST",
        "/v1/checkout_sessions",
        "acp_create_checkout_session",
        "Create a checkout session",
        "Starts a checkout of credit packs or a soul service; answers 201 with the authoritative session.",
        _create,
        status=201,
        body_type=acp.CheckoutSessionCreateRequest,
    ),
    _acp_route(
        "POST",
        SESSION,
        "acp_update_checkout_session",
        "Update a checkout session",
        "Changes the items, buyer or fulfilment of an open session.",
        _update,
        body_type=acp.CheckoutSessionUpdateRequest,
    ),
    _acp_route(
        "GET",
        SESSION,
        "acp_get_checkout_session",
        "Get a checkout session",
        "The session's authoritative state.",
        _retrieve,
    ),
    _acp_route(
        "POST",
        SESSION + "/complete",
        "acp_complete_checkout_session",
        "Complete a checkout session",
        "Pays the session's total with a delegated payment token through the payment service provider and creates "
        "the order (credits added, or the soul's service sold).",
        _complete,
        body_type=acp.CheckoutSessionCompleteRequest,
        atomic=False,
    ),
    _acp_route(
        "POST",
        SESSION + "/cancel",
        "acp_cancel_checkout_session",
        "Cancel a checkout session",
        "Cancels a session not completed yet (405 once completed or canceled).",
        _cancel,
        body_type=acp.CancelSessionRequest,
    ),
)


# --- operator: ACP tokens ---------------------------------------------------------------------


class TokenRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """An ACP token for an agent platform."""

    platform: str  # who it is for, e.g. "openai"
    agent_id: str  # the platform's agent here: buyer of record of its sessions unless buyer.customer_id names another
    webhook_url: str | None = None  # where order events go (order_create, order_update)
    signing_key: str | None = None  # set: every request of the platform must be signed (Signature + Timestamp)


class IssuedToken(msgspec.Struct, kw_only=True):
    """A new ACP token: `token` is shown this once and stored only hashed."""

    token_id: str
    token: str
    platform: str
    agent_id: str
    webhook_url: str | None
    webhook_secret: str | None  # the key of order events' Merchant-Signature, shown this once
    signed_requests: bool


class RevokedToken(msgspec.Struct, kw_only=True):
    token_id: str
    revoked: bool


def _check_token_request(body: TokenRequest) -> None:
    if not 1 <= len(body.platform.strip()) <= 100:
        raise ValueError("platform must be 1 to 100 characters")
    if body.signing_key is not None and len(body.signing_key) < 16:
        raise ValueError("signing_key must be at least 16 characters")


async def _issue(call: RouteCall) -> IssuedToken:
    body: TokenRequest = call.body
    if not await call.platform.agent_exists(body.agent_id):
        raise Refusal(
            "not_found",
            f"No agent {body.agent_id!r}.",
            status=404,
            details=[{"field": "agent_id", "message": "no such agent"}],
        )
    secret = None
    if body.webhook_url:
        problem = call.platform.webhook_target_problem(body.webhook_url)
        if problem:
            raise Refusal(
                "invalid_request", f"webhook_url {problem}", details=[{"field": "webhook_url", "message": problem}]
            )
        secret = call.platform.new_webhook_secret()
    token = "acp_" + secrets.token_urlsafe(32)
    token_id = sessions.new_id("acpt")
    await AcpToken.insert(
        AcpToken(
            id=token_id,
            platform=body.platform.strip(),
            token_hash=hashlib.sha256(token.encode()).hexdigest(),
            agent_id=body.agent_id,
            webhook_url=body.webhook_url,
            webhook_secret=secret,
            signing_key=body.signing_key,
            created_ms=now_ms(),
            revoked_ms=None,
        )
    )
    return IssuedToken(
        token_id=token_id,
        token=token,
        platform=body.platform.strip(),
        agent_id=body.agent_id,
        webhook_url=body.webhook_url,
        webhook_secret=secret,
        signed_requests=body.signing_key is not None,
    )


async def _revoke(call: RouteCall) -> RevokedToken:
    token_id = call.params["token_id"]
    done = (
        await AcpToken.update({AcpToken.revoked_ms: now_ms()})
        .where((AcpToken.id == token_id) & (AcpToken.revoked_ms.is_null()))
        .returning(AcpToken.id)
    )
    if not done and not await AcpToken.exists().where(AcpToken.id == token_id):
        raise Refusal("not_found", f"No ACP token {token_id!r}.", status=404)
    return RevokedToken(token_id=token_id, revoked=True)


TOKEN_ROUTES = (
    Route(
        method="POST",
        path="/v1/tools/internal/acp-tokens",
        name="operator_issue_acp_token",
        title="Issue an ACP token",
        description="Issues a bearer token with which an agent platform calls the ACP checkout routes "
        "(/v1/checkout_sessions...). Shown once, stored hashed.",
        handle=_issue,
        auth="operator",
        rate_limit=None,
        body_type=TokenRequest,
        answer_type=IssuedToken,
        check=_check_token_request,
        status=201,
        tags=("operator",),
        statuses=(400, 401, 404),
    ),
    Route(
        method="DELETE",
        path="/v1/tools/internal/acp-tokens/{token_id}",
        name="operator_revoke_acp_token",
        title="Revoke an ACP token",
        description="Revokes an ACP token: its platform's calls get 401 from now on.",
        handle=_revoke,
        auth="operator",
        rate_limit=None,
        answer_type=RevokedToken,
        tags=("operator",),
        statuses=(401, 404),
    ),
)


# --- the product feed -------------------------------------------------------------------------

FEED_ID = "tollway"


async def feed_products(platform: Any) -> acp.FeedProducts:
    settings = platform.settings(FAMILY)
    base = public_url(settings)
    products = []
    for p in await catalogue.products(settings):
        variant = acp.Variant(
            id=p.item_id,
            title=p.title,
            description=acp.Description(plain=p.description),
            url=f"{base}/v1/commerce/feed/products#{p.item_id}",
            price=acp.Price(amount=p.unit_amount, currency="USD"),
            availability=acp.Availability(available=True, status="in_stock"),
            categories=["credits" if p.kind == "credits" else "agent_services"],
            condition="new",
            seller=acp.feed.Seller(name=p.seller_name) if p.seller_name else UNSET,
            marketplace=acp.feed.Seller(name="Tollway", url=base) if p.seller_name else UNSET,
        )
        products.append(
            acp.Product(
                id=p.item_id,
                title=p.title,
                description=acp.Description(plain=p.description),
                url=variant.url,
                variants=[variant],
            )
        )
    return acp.FeedProducts(products=products)


async def _feed(call: RouteCall) -> acp.FeedMetadata:
    return acp.FeedMetadata(id=FEED_ID, target_country="US", updated_at=_iso_now())


def _iso_now() -> str:
    from tollway import iso

    return iso(now_ms())


async def _feed_products(call: RouteCall) -> acp.FeedProducts:
    return await feed_products(call.platform)


POLICIES = """<!doctype html><title>Tollway: terms of sale</title>
<h1>Terms of sale</h1>
<p id="terms">Credit packs add prepaid credits to the buying agent's balance the moment the payment succeeds; a soul
service is sold by the soul named on the line item, Tollway keeping the marketplace fee shown on the receipt.</p>
<p id="privacy">The buyer's name, email and address are kept with the order and used for it only.</p>
<p id="returns">Credits and services are digital and delivered at once: a payment is refunded only when the order could
not be completed.</p>"""


class OrderView(msgspec.Struct, kw_only=True):
    """An order's permalink: what was bought, for how much, and its state."""

    id: str
    checkout_session_id: str
    status: str
    total: int  # cents
    currency: str
    receipt_id: str
    created_at: str


async def _order(call: RouteCall) -> OrderView:
    from tollway import iso

    from .tables import Order

    row = await Order.select().where(Order.id == call.params["order_id"]).first()
    if row is None:
        raise Refusal("not_found", "No such order.", status=404)
    return OrderView(
        id=row["id"],
        checkout_session_id=row["session_id"],
        status=row["status"],
        total=int(row["total"]),
        currency=sessions.CURRENCY,
        receipt_id=row["receipt_id"],
        created_at=iso(row["created_ms"]),
    )


async def _policies(call: RouteCall) -> Page:
    return Page(POLICIES)


FEED_ROUTES = (
    Route(
        method="GET",
        path="/v1/commerce/feed",
        name="commerce_feed",
        title="Product feed metadata",
        description="The ACP product feed's metadata (rfc.product_feeds FeedMetadata): feed id, target country, updated_at.",
        handle=_feed,
        auth="public",
        answer_type=acp.FeedMetadata,
        tags=("acp",),
        statuses=(429,),
    ),
    Route(
        method="GET",
        path="/v1/commerce/feed/products",
        name="commerce_feed_products",
        title="Product feed",
        description="Everything Tollway sells over ACP (credit packs, soul services) as ACP product feed Products: "
        "each variant's id is the checkout item id.",
        handle=_feed_products,
        auth="public",
        answer_type=acp.FeedProducts,
        tags=("acp",),
        statuses=(429,),
    ),
    Route(
        method="GET",
        path="/v1/commerce/orders/{order_id}",
        name="commerce_order",
        title="An order",
        description="An ACP order's permalink: its session, state, total and receipt (the id is the capability: "
        "unguessable, given only to the platform that paid).",
        handle=_order,
        auth="public",
        answer_type=OrderView,
        tags=("acp",),
        statuses=(404, 429),
    ),
    Route(
        method="GET",
        path="/v1/commerce/policies",
        name="commerce_policies",
        title="Terms of sale",
        description="The terms, privacy and return policies every checkout session links to.",
        handle=_policies,
        auth="public",
        page=True,
        tags=("acp",),
        statuses=(429,),
    ),
)

ROUTES = (*ACP_ROUTES, *TOKEN_ROUTES, *FEED_ROUTES)
