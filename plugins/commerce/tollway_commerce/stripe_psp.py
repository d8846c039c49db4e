"""The first `psp` provider: Stripe, through its official library (`stripe`), charging ACP's
Shared Payment Tokens on PaymentIntents.

A granted Shared Payment Token (`spt_...`) is passed as
`payment_method_data[shared_payment_granted_token]` on a PaymentIntent created with
`confirm=true` (Stripe's "accept payments with SharedPaymentTokens"); every create, confirm
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
# ACP's payment handler for delegated card tokens (rfc.payment_handlers).
HANDLER_ID = "stripe_spt"

# 3-D Secure outcomes Stripe can be told of (ares_trans_status): authenticated, attempted, informational.
_ARES = {"authenticated": "Y", "attempt_acknowledged": "A", "informational": "I"}


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
        refunded=int(intent.get("amount_refunded") or 0),
    )


class StripePsp:
    name = "stripe"

    def __init__(self, secret_key: str, api_base: str, account: str = "", payment_method: str = "") -> None:
        self.account = account
        self.payment_method = payment_method
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
        return await self._ask(self.client.v1.payment_intents.create_async(params, {"idempotency_key": key}))

    async def authenticate(self, *, payment: str, authentication: Mapping[str, Any], key: str) -> Charge:
        details = authentication.get("outcome_details") or {}
        params = {
            "payment_method_options": {
                "card": {
                    "three_d_secure": {
                        "cryptogram": details.get("three_ds_cryptogram", ""),
                        "electronic_commerce_indicator": details.get("electronic_commerce_indicator", ""),
                        "transaction_id": details.get("transaction_id", ""),
                        "version": details.get("version", ""),
                        "ares_trans_status": _ARES.get(str(authentication.get("outcome")), "N"),
                    }
                }
            }
        }
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
        return await self._ask(self.client.v1.payment_intents.retrieve_async(payment))

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
            )
        except stripe.StripeError as exc:
            raise PspError(f"Stripe refused the payment token: {exc.user_message or exc}") from exc
        return dict(self.client.deserialize(reply, api_mode="V1").to_dict())

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
    )


STRIPE = Provider(
    kind=KIND,
    name="stripe",
    build=_build,
    settings=(SECRET_KEY, API_BASE, ACCOUNT, PAYMENT_METHOD),
    requires=(SECRET_KEY,),
    description="Stripe: ACP Shared Payment Tokens confirmed on PaymentIntents, with idempotency keys.",
)
