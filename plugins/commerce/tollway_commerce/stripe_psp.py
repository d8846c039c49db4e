"""The first `psp` provider: Stripe, through its official library (`stripe`), charging ACP's
Shared Payment Tokens on PaymentIntents.

A granted Shared Payment Token (`spt_...`) is passed as
`payment_method_data[shared_payment_granted_token]` on a PaymentIntent created with
`confirm=true` (Stripe's "accept payments with SharedPaymentTokens"). Stripe serves the token
parameters and endpoints under a preview API version only, so those calls carry
`Stripe-Version: <TOLLWAY_PSP_STRIPE_PREVIEW_VERSION>`; confirm, retrieve and refunds use the
library's pinned version. Every create, confirm
and refund carries an `Idempotency-Key` (Stripe replays the first answer of a key for 24
hours), and the API base is a setting, so tests and `make run` point it at a local server
that speaks the same API. A PaymentIntent that answers `requires_action` is 3-D Secure: it
is confirmed again with the agent's authentication result as
`payment_method_options[card][three_d_secure]` (Stripe's import of 3-D Secure results done
elsewhere)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import stripe

from tollway import Provider, Setting

from .psp import KIND, Charge, PspError, PspRefused, RefundResult

# The library's telemetry writes a machine id under ~/.config/stripe and sends it, with
# request timings, on every call: a service sends Stripe the payment and nothing else.
stripe.enable_telemetry = False

SECRET_KEY = Setting(KIND, "stripe_secret_key", None, "Stripe secret key (sk_test_... for test mode).", secret=True)
API_BASE = Setting(
    KIND,
    "stripe_api_base",
    "https://api.stripe.com",
    "Base URL of the Stripe API (a local stand-in in tests).",
)
ACCOUNT = Setting(KIND, "stripe_account", "", "The Stripe account id shown to agents in the payment handler's config.")
PAYMENT_METHOD = Setting(
    KIND,
    "stripe_payment_method",
    "",
    "The buyer side's card (a PaymentMethod, pm_...) this service pays ACP merchants with when agents buy "
    "(commerce_buy): each purchase shares it as a Shared Payment Token limited to that checkout's total.",
)
PREVIEW_VERSION = Setting(
    KIND,
    "stripe_preview_version",
    "2026-04-22.preview",
    "The Stripe API version (Stripe-Version) sent on the Shared Payment Token calls, which Stripe serves only "
    "under a preview version: the PaymentIntent paid with a granted token, and the buyer side's issued tokens. "
    "Every other call uses the library's own version.",
)
# ACP's payment handler for delegated card tokens (rfc.payment_handlers).
HANDLER_ID = "stripe_spt"

# ACP's 3-D Secure outcomes as the ARes transStatus Stripe takes (ares_trans_status): authenticated,
# attempted, informational, rejected, not performed for a technical reason; any other is N.
_ARES = {
    "authenticated": "Y",
    "attempt_acknowledged": "A",
    "informational": "I",
    "rejected": "R",
    "internal_error": "U",
    "processing_error": "U",
    "not_supported": "U",
}


def _refunded(intent: Any) -> int:
    """What was refunded of a PaymentIntent: its Charge's `amount_refunded` (a PaymentIntent has no
    such field), known when `latest_charge` was expanded, else 0."""
    latest = intent.get("latest_charge")
    return int(latest.get("amount_refunded") or 0) if isinstance(latest, dict) else 0


def _charge(intent: Any) -> Charge:
    if hasattr(intent, "to_dict"):  # a stripe.PaymentIntent; a decline's body is already a dict
        intent = intent.to_dict()
    status = intent["status"]
    if status == "succeeded":
        kind = "succeeded"
    elif status == "requires_action":
        kind = "requires_action"
    elif status in ("requires_payment_method", "canceled"):
        kind = "declined"
    else:  # processing, requires_capture, requires_confirmation
        kind = "processing"
    error = intent.get("last_payment_error") or {}
    return Charge(
        id=intent["id"],
        status=kind,
        amount=int(intent.get("amount") or 0),
        currency=str(intent.get("currency") or ""),
        decline_code=(error.get("decline_code") or error.get("code")) if kind == "declined" else None,
        message=error.get("message") if kind == "declined" else None,
        next_action=dict(intent["next_action"]) if kind == "requires_action" and intent.get("next_action") else None,
        refunded=_refunded(intent),
    )


class StripePsp:
    name = "stripe"

    def __init__(
        self,
        secret_key: str,
        api_base: str,
        account: str = "",
        payment_method: str = "",
        preview_version: str = PREVIEW_VERSION.default or "",
    ) -> None:
        self.account = account
        self.payment_method = payment_method
        self.preview_version = preview_version
        self.live = secret_key.startswith("sk_live_")
        self.client = stripe.StripeClient(
            secret_key,
            base_addresses={"api": api_base.rstrip("/")},
            http_client=stripe.HTTPXClient(allow_sync_methods=False),
            max_network_retries=2,  # safe: every call carries its idempotency key
        )

    async def charge(self, *, amount: int, currency: str, token: str, key: str, metadata: Mapping[str, str]) -> Charge:
        params: dict[str, Any] = {
            "amount": amount,
            "currency": currency,
            "confirm": True,
            "payment_method_data": {"shared_payment_granted_token": token},
            "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
            "metadata": dict(metadata),
        }
        options = {"idempotency_key": key, "stripe_version": self.preview_version}  # the token is a preview parameter
        return await self._ask(self.client.v1.payment_intents.create_async(params, options))

    async def authenticate(self, *, payment: str, authentication: Mapping[str, Any], key: str) -> Charge:
        details = authentication.get("outcome_details") or {}
        # cryptogram, transaction_id and version are required by Stripe; the indicator only when known
        result = {
            "cryptogram": details.get("three_ds_cryptogram", ""),
            "transaction_id": details.get("transaction_id", ""),
            "version": details.get("version", ""),
            "ares_trans_status": _ARES.get(str(authentication.get("outcome")), "N"),
        }
        if details.get("electronic_commerce_indicator"):
            result["electronic_commerce_indicator"] = details["electronic_commerce_indicator"]
        params = {"payment_method_options": {"card": {"three_d_secure": result}}}
        return await self._ask(self.client.v1.payment_intents.confirm_async(payment, params, {"idempotency_key": key}))

    async def refund(self, *, payment: str, key: str) -> Charge:
        try:
            await self.client.v1.refunds.create_async({"payment_intent": payment}, {"idempotency_key": key})
        except stripe.StripeError as exc:
            raise PspError(f"Stripe refused the refund of {payment}: {exc.user_message or exc}") from exc
        return await self.retrieve(payment)

    async def refund_amount(self, *, payment: str, amount: int, key: str, metadata: Mapping[str, str]) -> RefundResult:
        """`POST /v1/refunds` for `amount` of the PaymentIntent (reason `requested_by_customer`);
        the same key answers the same refund again."""
        params = {
            "payment_intent": payment,
            "amount": amount,
            "reason": "requested_by_customer",
            "metadata": dict(metadata),
        }
        try:
            refund = await self.client.v1.refunds.create_async(params, {"idempotency_key": key})  # type: ignore[arg-type]
        except stripe.InvalidRequestError as exc:  # Stripe answered and refused: nothing was refunded
            raise PspRefused(f"Stripe refused the refund of {payment}: {exc.user_message or exc}") from exc
        except stripe.StripeError as exc:
            raise PspError(f"Stripe did not refund {payment}: {exc.user_message or exc}") from exc
        return RefundResult(id=refund.id, status=refund.status, amount=refund.amount, currency=refund.currency)

    async def retrieve(self, payment: str) -> Charge:
        params = {"expand": ["latest_charge"]}  # the Charge says what was refunded
        return await self._ask(self.client.v1.payment_intents.retrieve_async(payment, params))

    async def _ask(self, call: Any) -> Charge:
        try:
            return _charge(await call)
        except stripe.CardError as exc:  # a decline: the PaymentIntent is in the error's body
            error = (exc.json_body or {}).get("error") or {}
            intent = error.get("payment_intent")
            if intent:
                charge = _charge(intent)
                if charge.status == "declined":
                    charge.decline_code = error.get("decline_code") or error.get("code") or charge.decline_code
                    charge.message = error.get("message") or charge.message
                return charge
            return Charge(id="", status="declined", decline_code=exc.code, message=exc.user_message)
        except stripe.InvalidRequestError as exc:  # a token Stripe does not know, spent or expired: nothing charged
            if exc.http_status in (400, 404) and (exc.code or "").startswith(("resource_missing", "shared_payment")):
                return Charge(id="", status="declined", decline_code=exc.code, message=exc.user_message)
            raise PspError(f"Stripe refused the request: {exc.user_message or exc}") from exc
        except stripe.StripeError as exc:
            raise PspError(f"Stripe could not be asked: {exc.user_message or exc}") from exc

    def issue_problem(self) -> str | None:
        """Why this service cannot mint payment tokens to buy with (None: it can)."""
        if not self.payment_method:
            return f"{PAYMENT_METHOD.env_var} is not set: this service has no card to pay merchants with"
        return None

    async def issue_token(
        self,
        *,
        amount: int,
        currency: str,
        checkout_session_id: str,
        merchant_id: str,
        expires_at: int,
        idempotency_key: str,
    ) -> dict[str, Any]:
        """The buyer side's call: a Shared Payment Token (an issued token, `spt_...`) over the
        operator's PaymentMethod for at most `amount` minor units of `currency` until `expires_at`,
        for the seller `merchant_id` and the checkout session in its shared metadata
        (`POST /v1/shared_payment/issued_tokens`; the library has no typed call for it yet)."""
        problem = self.issue_problem()
        if problem is not None:
            raise PspError(problem)
        try:
            reply = await self.client.raw_request_async(
                "post",
                "/v1/shared_payment/issued_tokens",
                payment_method=self.payment_method,
                usage_limits={"currency": currency, "max_amount": amount, "expires_at": expires_at},
                seller_details={"external_id": merchant_id},
                shared_metadata={"checkout_session_id": checkout_session_id},
                idempotency_key=idempotency_key,
                stripe_version=self.preview_version,
            )
        except stripe.StripeError as exc:
            raise PspError(f"Stripe refused the payment token: {exc.user_message or exc}") from exc
        token = dict(self.client.deserialize(reply, api_mode="V1").to_dict())
        if token.get("status", "active") != "active":  # requires_action or deactivated: no merchant can charge it
            raise PspError(f"Stripe's payment token {token.get('id')} is {token.get('status')}, not active")
        return token

    def handler_config(self) -> dict[str, Any]:
        return {
            "psp": "stripe",
            "merchant_id": self.account or "acct_unset",
            "accepted_brands": ["visa", "mastercard", "amex", "discover"],
            "supports_3ds": True,
            "environment": "production" if self.live else "test",
        }


def _build(values: Mapping[str, str], http: httpx.AsyncClient) -> StripePsp:
    return StripePsp(
        (values.get("stripe_secret_key") or "").strip(),
        (values.get("stripe_api_base") or API_BASE.default or "").strip(),
        (values.get("stripe_account") or "").strip(),
        (values.get("stripe_payment_method") or "").strip(),
        (values.get("stripe_preview_version") or PREVIEW_VERSION.default or "").strip(),
    )


STRIPE = Provider(
    kind=KIND,
    name="stripe",
    build=_build,
    settings=(SECRET_KEY, API_BASE, ACCOUNT, PAYMENT_METHOD, PREVIEW_VERSION),
    requires=(SECRET_KEY,),
    description="Stripe: ACP Shared Payment Tokens confirmed on PaymentIntents, with idempotency keys.",
)
