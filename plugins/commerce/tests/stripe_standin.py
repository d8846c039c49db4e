"""A local server that speaks the part of the Stripe API the `psp` provider uses, as Stripe's
API reference documents it (no recorded answers of it exist to replay): form-encoded
requests with `Authorization: Bearer sk_test_...`, JSON answers, errors as
`{"error": {type, code, decline_code, message, param, payment_intent}}`.

- `POST /v1/test_helpers/shared_payment/granted_tokens` — a granted Shared Payment Token
  (`spt_...`) from a test PaymentMethod with `usage_limits[currency|max_amount|expires_at]`;
  the test PaymentMethods behave as Stripe's do: `pm_card_visa` pays,
  `pm_card_visa_chargeDeclined` is declined (card_declined / generic_decline),
  `pm_card_chargeDeclinedInsufficientFunds` is declined (insufficient_funds),
  `pm_card_authenticationRequired` asks for 3-D Secure (`requires_action`).
- `POST /v1/shared_payment/issued_tokens` — the agent platform's side: an issued token over
  `payment_method` with `usage_limits[...]`, `seller_details[external_id]` and
  `shared_metadata[...]`; the seller sees it as a granted token of the same id.
- `POST /v1/payment_intents` with `confirm=true` and
  `payment_method_data[shared_payment_granted_token]`; `POST /v1/payment_intents/{id}/confirm`
  (3-D Secure results in `payment_method_options[card][three_d_secure]`);
  `GET /v1/payment_intents/{id}` (`expand[]=latest_charge` answers the Charge, where Stripe
  keeps `amount_refunded`: a PaymentIntent has no such field); `POST /v1/refunds`
  (`payment_intent`, `amount` in part or all that is left, `reason`, `metadata`; above what
  is left: 400 `amount_too_large`).
- Shared Payment Tokens are a preview of Stripe's API: the two token endpoints and the
  `shared_payment_granted_token` parameter are refused unless the request's `Stripe-Version`
  is a preview version (`<date>.preview`): 404 for the endpoints, 400 `parameter_unknown`
  for the parameter, as Stripe answers what a version does not know. Each request's
  `Stripe-Version` is kept (`versions`). `issue_status` is the status of the next issued
  tokens (`active`; Stripe may answer `requires_action`).
- `Idempotency-Key` on every POST: the same key with the same parameters answers the first
  answer again (`Idempotent-Replayed: true`), with other parameters 400 `idempotency_error`;
  requests of one key are served one at a time.

`before_answer(pi)` runs after a PaymentIntent succeeded and before its answer is sent (the
crash tests kill the API process there: Stripe charged, our side never heard back)."""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

SECRET_KEY = "sk_test_tollway_standin"


def _error(status: int, type_: str, message: str, **more: Any) -> web.Response:
    return web.json_response({"error": {"type": type_, "message": message, **more}}, status=status)


PREVIEW_PATHS = ("/v1/test_helpers/shared_payment/granted_tokens", "/v1/shared_payment/issued_tokens")
SPT_PARAM = "payment_method_data[shared_payment_granted_token]"


def _preview_refusal(request: web.Request, form: dict[str, str]) -> web.Response | None:
    """Stripe's answer to a Shared Payment Token call made without a preview API version."""
    if request.headers.get("Stripe-Version", "").endswith(".preview"):
        return None
    if request.path in PREVIEW_PATHS:
        return _error(404, "invalid_request_error", f"Unrecognized request URL (POST: {request.path}).")
    if SPT_PARAM in form:
        return _error(
            400,
            "invalid_request_error",
            f"Received unknown parameter: {SPT_PARAM}",
            code="parameter_unknown",
            param=SPT_PARAM,
        )
    return None


class StripeStandin:
    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.issued: dict[str, dict[str, Any]] = {}  # the buyer side's issued tokens (also in `tokens`)
        self.intents: dict[str, dict[str, Any]] = {}
        self.refunds: list[dict[str, Any]] = []
        self.charges: dict[str, dict[str, Any]] = {}  # a PaymentIntent's Charge holds what was refunded
        self.keys: dict[str, tuple[str, int, bytes]] = {}  # key -> (params, status, body)
        self.locks: dict[str, asyncio.Lock] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (method, path, form)
        self.before_answer: Callable[[dict[str, Any]], Any] | None = None
        self.gate: asyncio.Event | None = None  # set by `hold`: PaymentIntents wait for it
        self.held = asyncio.Event()  # set when a PaymentIntent is waiting at the gate
        self.failures = 0  # the next this many PaymentIntent creations answer 500
        self.versions: list[tuple[str, str]] = []  # (path, Stripe-Version) of every request
        self.issue_status = "active"
        self.refund_failures = 0  # the next this many refund requests answer 500
        self.url = ""
        self._runner: web.AppRunner | None = None

    # --- what the tests read ---------------------------------------------------------------
    def succeeded(self) -> list[dict[str, Any]]:
        return [pi for pi in self.intents.values() if pi["status"] == "succeeded"]

    def grant(
        self,
        payment_method: str = "pm_card_visa",
        *,
        max_amount: int = 1_000_000,
        currency: str = "usd",
        expires_in_s: int = 3600,
    ) -> str:
        token = "spt_" + secrets.token_hex(8)
        self.tokens[token] = {
            "id": token,
            "object": "shared_payment.granted_token",
            "payment_method": payment_method,
            "usage_limits": {
                "currency": currency,
                "max_amount": max_amount,
                "expires_at": int(time.time()) + expires_in_s,
            },
            "created": int(time.time()),
        }
        return token

    def hold(self) -> asyncio.Event:
        """Hold every PaymentIntent creation until the returned event is set."""
        self.gate = asyncio.Event()
        self.held = asyncio.Event()
        return self.gate

    # --- the server --------------------------------------------------------------------------
    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/test_helpers/shared_payment/granted_tokens", self._keyed(self._grant))
        app.router.add_post("/v1/shared_payment/issued_tokens", self._keyed(self._issue))
        app.router.add_post("/v1/payment_intents", self._keyed(self._create))
        app.router.add_post("/v1/payment_intents/{id}/confirm", self._keyed(self._confirm))
        app.router.add_get("/v1/payment_intents/{id}", self._retrieve)
        app.router.add_post("/v1/refunds", self._keyed(self._refund))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        site = web.SockSite(self._runner, sock)
        await site.start()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization", "") == f"Bearer {SECRET_KEY}"

    def _keyed(self, handler: Callable[[web.Request, dict[str, str]], Any]) -> Callable[[web.Request], Any]:
        async def serve(request: web.Request) -> web.StreamResponse:
            if not self._authorized(request):
                return _error(401, "invalid_request_error", "Invalid API Key provided.")
            form = {k: v for k, v in (await request.post()).items()}
            self.requests.append((request.method, request.path, dict(form)))
            self.versions.append((request.path, request.headers.get("Stripe-Version", "")))
            refused = _preview_refusal(request, form)
            if refused is not None:
                return refused
            key = request.headers.get("Idempotency-Key")
            if not key:
                return await handler(request, form)
            params = json.dumps([request.path, sorted(form.items())])
            async with self.locks.setdefault(key, asyncio.Lock()):
                if key in self.keys:
                    first, status, body = self.keys[key]
                    if first != params:
                        return _error(
                            400,
                            "idempotency_error",
                            "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                        )
                    return web.Response(
                        body=body,
                        status=status,
                        content_type="application/json",
                        headers={"Idempotent-Replayed": "true"},
                    )
                response = await handler(request, form)
                if response.status < 500:
                    self.keys[key] = (params, response.status, response.body)
                return response

        return serve

    async def _grant(self, request: web.Request, form: dict[str, str]) -> web.Response:
        token = self.grant(
            form.get("payment_method", "pm_card_visa"),
            max_amount=int(form.get("usage_limits[max_amount]", "1000000")),
            currency=form.get("usage_limits[currency]", "usd"),
            expires_in_s=int(form.get("usage_limits[expires_at]", str(int(time.time()) + 3600))) - int(time.time()),
        )
        return web.json_response(self.tokens[token])

    async def _issue(self, request: web.Request, form: dict[str, str]) -> web.Response:
        """An agent platform's issued token (the buyer side): the seller it names sees it as a
        granted token of the same id, limited as issued."""
        if not form.get("payment_method") or "usage_limits[max_amount]" not in form:
            return _error(400, "invalid_request_error", "Missing required param: payment_method or usage_limits.")
        token = self.grant(
            form["payment_method"],
            max_amount=int(form["usage_limits[max_amount]"]),
            currency=form.get("usage_limits[currency]", "usd"),
            expires_in_s=int(form.get("usage_limits[expires_at]", str(int(time.time()) + 3600))) - int(time.time()),
        )
        issued = {
            **self.tokens[token],
            "object": "shared_payment.issued_token",
            "seller_details": {"external_id": form.get("seller_details[external_id]")},
            "shared_metadata": {"checkout_session_id": form.get("shared_metadata[checkout_session_id]")},
            "status": self.issue_status,
        }
        self.issued[token] = issued
        return web.json_response(issued)

    async def _create(self, request: web.Request, form: dict[str, str]) -> web.StreamResponse:
        if self.gate is not None:
            self.held.set()
            await self.gate.wait()
        if self.failures > 0:
            self.failures -= 1
            return _error(500, "api_error", "An unexpected error occurred.")
        token_id = form.get(SPT_PARAM, "")
        token = self.tokens.get(token_id)
        if token is None:
            return _error(
                400,
                "invalid_request_error",
                f"No such shared_payment_granted_token: '{token_id}'",
                code="resource_missing",
                param=SPT_PARAM,
            )
        amount, currency = int(form["amount"]), form["currency"]
        limits = token["usage_limits"]
        if currency != limits["currency"] or amount > limits["max_amount"] or time.time() > limits["expires_at"]:
            return _error(
                400,
                "invalid_request_error",
                "The SharedPaymentGrantedToken cannot be used for this amount, currency or time.",
                code="shared_payment_granted_token_usage_limit_exceeded",
                param="amount",
            )
        pi = {
            "id": "pi_" + secrets.token_hex(10),
            "object": "payment_intent",
            "amount": amount,
            "amount_received": 0,
            "latest_charge": None,  # the Charge's id once paid; its object with expand[]=latest_charge
            "currency": currency,
            "status": "requires_confirmation",
            "metadata": {k[9:-1]: v for k, v in form.items() if k.startswith("metadata[")},
            "payment_method": "pm_" + secrets.token_hex(8),
            "last_payment_error": None,
            "next_action": None,
            "created": int(time.time()),
            "livemode": False,
        }
        self.intents[pi["id"]] = pi
        method = token["payment_method"]
        if method in ("pm_card_visa_chargeDeclined", "pm_card_chargeDeclinedInsufficientFunds"):
            decline = "insufficient_funds" if "Insufficient" in method else "generic_decline"
            error = {
                "type": "card_error",
                "code": "card_declined",
                "decline_code": decline,
                "message": "Your card was declined.",
            }
            pi["status"] = "requires_payment_method"
            pi["last_payment_error"] = error
            return _error(
                402, "card_error", error["message"], code="card_declined", decline_code=decline, payment_intent=pi
            )
        if method == "pm_card_authenticationRequired":
            pi["status"] = "requires_action"
            pi["next_action"] = {
                "type": "use_stripe_sdk",
                "use_stripe_sdk": {"type": "three_d_secure_redirect"},
                "three_d_secure": {"directory_server": "visa", "acquirer_bin": "424242", "acquirer_country": "US"},
            }
            return web.json_response(pi)
        return await self._succeed(pi)

    async def _succeed(self, pi: dict[str, Any]) -> web.StreamResponse:
        pi["status"] = "succeeded"
        pi["amount_received"] = pi["amount"]
        charge_id = "ch_" + secrets.token_hex(10)
        self.charges[charge_id] = {
            "id": charge_id,
            "object": "charge",
            "amount": pi["amount"],
            "amount_refunded": 0,
            "refunded": False,
            "currency": pi["currency"],
            "payment_intent": pi["id"],
            "status": "succeeded",
        }
        pi["latest_charge"] = charge_id
        pi["next_action"] = None
        if self.before_answer is not None:
            outcome = self.before_answer(pi)
            if asyncio.iscoroutine(outcome):
                await outcome
        return web.json_response(pi)

    async def _confirm(self, request: web.Request, form: dict[str, str]) -> web.StreamResponse:
        pi = self.intents.get(request.match_info["id"])
        if pi is None:
            return _error(404, "invalid_request_error", "No such payment_intent", code="resource_missing")
        if pi["status"] != "requires_action":
            return _error(
                400,
                "invalid_request_error",
                f"This PaymentIntent's status is {pi['status']}.",
                code="payment_intent_unexpected_state",
            )
        prefix = "payment_method_options[card][three_d_secure]"
        cryptogram = form.get(f"{prefix}[cryptogram]")
        if not cryptogram or form.get(f"{prefix}[ares_trans_status]") not in ("Y", "A"):
            error = {
                "type": "card_error",
                "code": "authentication_required",
                "message": "3-D Secure authentication failed.",
            }
            pi["status"] = "requires_payment_method"
            pi["last_payment_error"] = error
            return _error(402, "card_error", error["message"], code="authentication_required", payment_intent=pi)
        return await self._succeed(pi)

    async def _retrieve(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return _error(401, "invalid_request_error", "Invalid API Key provided.")
        pi = self.intents.get(request.match_info["id"])
        if pi is None:
            return _error(404, "invalid_request_error", "No such payment_intent", code="resource_missing")
        expand = {v for k, v in request.query.items() if k.startswith("expand")}
        if "latest_charge" in expand and pi["latest_charge"]:
            return web.json_response({**pi, "latest_charge": self.charges[pi["latest_charge"]]})
        return web.json_response(pi)

    async def _refund(self, request: web.Request, form: dict[str, str]) -> web.Response:
        """`POST /v1/refunds` as Stripe's Refund API documents it: `payment_intent`, an optional
        `amount` (default: all that is left; above what is left is `amount_too_large`), `reason`
        (duplicate, fraudulent, requested_by_customer) and `metadata`; a Refund object."""
        if self.refund_failures > 0:
            self.refund_failures -= 1
            return _error(500, "api_error", "An unexpected error occurred.")
        pi = self.intents.get(form.get("payment_intent", ""))
        if pi is None:
            return _error(
                404,
                "invalid_request_error",
                f"No such payment_intent: '{form.get('payment_intent', '')}'",
                code="resource_missing",
                param="payment_intent",
            )
        if pi["status"] != "succeeded":
            return _error(
                400,
                "invalid_request_error",
                "This PaymentIntent has nothing to refund.",
                code="charge_already_refunded",
            )
        charge = self.charges[pi["latest_charge"]]
        left = charge["amount"] - charge["amount_refunded"]
        if left <= 0:
            return _error(
                400, "invalid_request_error", "Charge has already been refunded.", code="charge_already_refunded"
            )
        amount = int(form["amount"]) if form.get("amount") else left
        if amount <= 0:
            return _error(400, "invalid_request_error", "Invalid positive integer", code="parameter_invalid_integer")
        if amount > left:
            return _error(
                400,
                "invalid_request_error",
                f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left})",
                code="amount_too_large",
                param="amount",
            )
        reason = form.get("reason")
        if reason is not None and reason not in ("duplicate", "fraudulent", "requested_by_customer"):
            return _error(400, "invalid_request_error", f"Invalid reason: {reason}", param="reason")
        refund = {
            "id": "re_" + secrets.token_hex(10),
            "object": "refund",
            "amount": amount,
            "balance_transaction": "txn_" + secrets.token_hex(10),
            "charge": charge["id"],
            "created": int(time.time()),
            "currency": pi["currency"],
            "metadata": {k[9:-1]: v for k, v in form.items() if k.startswith("metadata[")},
            "payment_intent": pi["id"],
            "reason": reason,
            "receipt_number": None,
            "source_transfer_reversal": None,
            "status": "succeeded",
            "transfer_reversal": None,
        }
        charge["amount_refunded"] += amount
        charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
        self.refunds.append(refund)
        return web.json_response(refund)
