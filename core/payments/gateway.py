"""The x402 gateway: quote -> 402, then verify -> reserve -> settle.

A quote is minted with no write (core/payments/quotes.py); verifying checks it and the
payment, reading nothing but the payer's funds (on PostgreSQL the local network's funds are
read by the reservation's statement instead); reserving records the quote used and
writes the authorization's row (keyed by chain, asset, payer and nonce) in one
transaction, committed before any tool runs, so two requests carrying one
authorization, or one quote, can never both be served, and a refused one leaves the
quote unused.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import msgspec

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.ids import iso, now_ms
from tollway._core.basics.money import usdc
from tollway._core.basics.request import CallRequest
from tollway._core.credits import ledger
from tollway._core.payments import quotes, x402
from tollway._core.payments.eip3009 import authorization_key, verify_authorization
from tollway._core.payments.networks import Network
from tollway._core.payments.settlement import LocalSettlement, SettlementBackend, SettlementResult
from tollway._core.storage import sql
from tollway._core.wire.errors import QuoteTerms

# Tollway's own reason when `accepted` echoes other requirements than the quote's.
REQUIREMENTS_MISMATCH = "accepted_requirements_mismatch"

log = logging.getLogger("tollway.payments")

PAYMENT_HEADERS = ("payment-signature", "x-payment-proof", "x-payment")

# The requirements' fields a v2 payment's `accepted` must echo (any case).
_ECHOED = ("scheme", "network", "amount", "payTo", "asset")
# How many quotes' requirements a gateway keeps (`X402Gateway.terms`).
_TERMS_KEPT = 1024

# An authorization's recorded state (the paid path, raw: bench/paid_calls.py); a transaction or
# receipt id not given keeps the one stored. The second only moves a row still `reserved`.
_RECORD = (
    "UPDATE tw_payment_authorizations SET status = {}, settlement_tx = COALESCE({}, settlement_tx), "
    "receipt_id = COALESCE({}, receipt_id), updated_ms = {} WHERE id = {} RETURNING id"
)
_RECORD_OVER_RESERVED = (
    "UPDATE tw_payment_authorizations SET status = {}, settlement_tx = COALESCE({}, settlement_tx), "
    "receipt_id = COALESCE({}, receipt_id), updated_ms = {} WHERE id = {} AND status = 'reserved' RETURNING id"
)


_RECORD_AUTHORIZATION = (
    "INSERT INTO tw_payment_authorizations (id, payer, pay_to, value, nonce, quote_id, purpose, "
    "status, settlement_tx, payload, receipt_id, created_ms, updated_ms) VALUES ({}, {}, {}, {}, {}, "
    "{}, {}, 'reserved', NULL, {}, NULL, {}, {}) ON CONFLICT (id) DO NOTHING RETURNING id"
)
# PostgreSQL: the reservation as one statement, no transaction around it: the authorization's
# row (`_RECORD_AUTHORIZATION`), and the quote's record (`quotes.record_used`'s) only when that
# row was made: an authorization seen before leaves the quote unused, as the transaction's
# rollback does on SQLite. With its first value true, the local network's funds check
# (`LocalSettlement.verify`) rides in it too: the payer's balance (its key and the amount
# follow) must cover the amount, else nothing is written. The row's values come next, then
# the quote's (`quotes.used_values`).
_RESERVE_AND_USE = (
    "WITH funded AS (SELECT NOT {}::boolean OR EXISTS (SELECT 1 FROM tw_chain_balances WHERE address = {} "
    "AND balance >= {}) AS ok), "
    "reserved AS (INSERT INTO tw_payment_authorizations (id, payer, pay_to, value, nonce, quote_id, purpose, "
    "status, settlement_tx, payload, receipt_id, created_ms, updated_ms) SELECT {}, {}, {}, {}, {}, {}, {}, "
    "'reserved', NULL, {}, NULL, {}, {} FROM funded WHERE ok ON CONFLICT (id) DO NOTHING RETURNING id), "
    "used AS (INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, used_ms, "
    "created_ms) SELECT {}, {}, {}, {}, {}, {}, {}, {}, {} FROM reserved ON CONFLICT (id) DO NOTHING RETURNING id) "
    "SELECT (SELECT ok FROM funded) AS funded, EXISTS (SELECT 1 FROM reserved) AS reserved, "
    "EXISTS (SELECT 1 FROM used) AS used"
)
# ... and a quote found used takes back the row just reserved, so that the authorization
# may pay another quote (a crash in between leaves it reserved: the reconciler voids it).
_UNRESERVE = "DELETE FROM tw_payment_authorizations WHERE id = {} AND status = 'reserved'"
_START_SETTLING = (
    "UPDATE tw_payment_authorizations SET status = 'settling', updated_ms = {} WHERE id = {} AND "
    "status = 'reserved' RETURNING id"
)


def find_payment_header(headers: Any) -> str | None:
    """The payment payload from whichever header carries it (docs/payments.md)."""
    for name in PAYMENT_HEADERS:
        value = headers.get(name)
        if value:
            return value
    auth = headers.get("authorization")
    if auth and not auth[:7].lower() == "bearer ":
        return auth
    return None


def find_payment(req: CallRequest) -> dict[str, Any] | str | None:
    """The request's x402 payment: the object (or header form) the front passed, else the header
    carrying it (looked for once per request: the rate limiter and the pipeline both ask)."""
    if req.payment is not None:
        return req.payment
    found = req.memo.get("payment_header", _UNREAD)
    if found is _UNREAD:
        found = req.memo["payment_header"] = find_payment_header(req.headers)
    return found  # type: ignore[no-any-return]


_UNREAD = object()


def decode_payment(payment: dict[str, Any] | str) -> x402.PaymentPayload:
    """Decode a payment in either form; raises x402.PaymentError."""
    return x402.decode_payment_header(payment) if isinstance(payment, str) else x402.decode_payment(payment)


def payment_of(req: CallRequest) -> x402.PaymentPayload:
    """The request's x402 payment (`find_payment`'s, which must be there) decoded once per
    request: the rate limiter's payer and the payment's check read the same; raises
    x402.PaymentError, each time asked, when it does not decode."""
    done = req.memo.get("payment")
    if done is None:
        value = find_payment(req)
        assert value is not None, "payment_of is asked only of a request carrying a payment"
        try:
            done = decode_payment(value)
        except x402.PaymentError as exc:
            done = exc
        req.memo["payment"] = done
    if isinstance(done, x402.PaymentError):
        raise x402.PaymentError(done.reason, done.message)
    return done


@dataclasses.dataclass
class Accepted:
    """A verified, reserved payment waiting for settlement or voiding."""

    payment: x402.PaymentPayload
    payer: str
    key: str
    quote_id: str
    amount: int
    requirements: dict[str, Any]


class _NonceSeen(Exception):
    """The authorization's row exists: the reservation's transaction rolls back."""


class AuthorizationVoided(Exception):
    """The reconciler voided a reserved authorization before its settlement was recorded."""


class PaymentFailed(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _cannot_settle(reason: str) -> PaymentFailed:
    """The refusal of a payment the settlement backend says cannot settle."""
    return PaymentFailed(reason, f"The payment cannot settle: {reason}.")


class X402Gateway:
    def __init__(
        self,
        *,
        network: Network,
        pay_to: str,
        backend: SettlementBackend,
        db: Any,
        quote_ttl_s: int,
        quote_secret: bytes,
    ) -> None:
        self.network = network
        self.pay_to = pay_to
        self.backend = backend
        self.db = db
        self.quote_ttl_s = quote_ttl_s
        self.quotes = quotes.QuoteBook(quote_secret, pay_to=pay_to, network=network.caip2, ttl_s=quote_ttl_s)
        self._terms: dict[tuple[int, str], tuple[dict[str, Any], tuple[str, ...]]] = {}

    def terms(self, amount: int, quote_id: str) -> tuple[dict[str, Any], tuple[str, ...]]:
        """A quote's x402 PaymentRequirements and the lower-cased text of the fields a payment
        echoes (`_ECHOED`), made once and kept for the last quotes: the 402 makes them, and its
        paid resend checks the payment against them and settles with them. A pure function of
        the amount and the quote id; no user changes them."""
        key = (amount, quote_id)
        found = self._terms.get(key)
        if found is None:
            if len(self._terms) >= _TERMS_KEPT:
                self._terms.clear()
            made = x402.build_requirements(self.network, amount, self.pay_to, quote_id, self.quote_ttl_s)
            found = self._terms[key] = (made, tuple(str(made[field]).lower() for field in _ECHOED))
        return found

    def requirements(self, amount: int, quote_id: str) -> dict[str, Any]:
        return self.terms(amount, quote_id)[0]

    async def payment_required(
        self,
        *,
        purpose: str,
        description: str,
        input_hash: str,
        amount: int,
        resource_url: str,
        failure: PaymentFailed | None = None,
        settlement: dict[str, Any] | None = None,
    ) -> ServiceError:
        """A fresh quote as the 402 body (docs/payments.md), carrying the x402
        PaymentRequired object (each front sends it its own way) and, for a payment
        whose settlement was refused, that settlement's SettleResponse."""
        quote = self.quotes.mint(tool=purpose, input_hash=input_hash, amount=amount)
        price = usdc(amount)
        error_text = failure.reason if failure else "payment_required"
        required = x402.build_payment_required(
            error_text, resource_url, description, [self.requirements(amount, quote["id"])]
        )
        terms = QuoteTerms(
            code=402,
            quote_id=quote["id"],
            amount_usdc=price,
            pay_to=self.pay_to,
            network=self.network.caip2,
            expires_at=iso(quote["expires_ms"]),
        )
        extra = msgspec.structs.asdict(terms)
        if failure:
            return ServiceError(
                402,
                "payment_verification_failed",
                failure.message,
                {"reason": failure.reason},
                payment_required=required,
                extra=extra,
                settlement=settlement,
            )
        return ServiceError(
            402, "payment_required", f"Payment of {price} USDC required.", payment_required=required, extra=extra
        )

    def decode(self, payment: dict[str, Any] | str) -> x402.PaymentPayload:
        try:
            return decode_payment(payment)
        except x402.PaymentError as exc:
            raise PaymentFailed(exc.reason, exc.message) from exc

    def decoded(self, req: CallRequest) -> x402.PaymentPayload:
        """`payment_of(req)`, a payment that does not decode refused as `PaymentFailed`."""
        try:
            return payment_of(req)
        except x402.PaymentError as exc:
            raise PaymentFailed(exc.reason, exc.message) from exc

    async def verify(
        self, payment: x402.PaymentPayload, quote_id_header: str | None, *, purpose: str, input_hash: str
    ) -> tuple[dict, str]:
        """Everything short of reserving, writing nothing: the quote (ours, unexpired, for
        this tool and input), then the accepted requirements, the signature and the funds
        (the local network's on PostgreSQL: `reserve`'s statement reads them)."""
        quote_id = quote_id_header or x402.quote_id_from(payment)
        try:
            quote = self.quotes.check(quote_id, tool=purpose, input_hash=input_hash)
        except quotes.QuoteProblem as exc:
            raise PaymentFailed(exc.reason, exc.message) from exc
        return quote, await self._check(payment, quote)

    async def _check(self, payment: x402.PaymentPayload, quote: dict) -> str:
        requirements, echoed = self.terms(quote["amount"], quote["id"])
        self._check_accepted(payment, echoed)
        try:
            payer = verify_authorization(
                self.network,
                payment.authorization,
                payment.signature,
                pay_to=quote["pay_to"],
                amount_micro=quote["amount"],
                now=int(time.time()),
            )
        except x402.PaymentError as exc:
            raise PaymentFailed(exc.reason, exc.message) from exc
        if not self._funds_checked_in_reservation():
            reason = await self.backend.verify(payment, requirements, payer)
            if reason:
                raise _cannot_settle(reason)
        return payer

    def _funds_checked_in_reservation(self) -> bool:
        """Whether the local network's funds check rides in the reservation's statement
        (PostgreSQL: one round trip fewer) instead of running in `verify`."""
        return type(self.backend) is LocalSettlement and sql.on_postgres()

    def _check_accepted(self, payment: x402.PaymentPayload, echoed: tuple[str, ...]) -> None:
        """The payment's scheme and network, and the requirements a v2 payment echoes: each
        `_ECHOED` field's text equal to ours in any case (`echoed`: ours lower-cased)."""
        try:
            x402.check_scheme_and_network(payment, self.network)
        except x402.PaymentError as exc:
            raise PaymentFailed(exc.reason, exc.message) from exc
        acc = payment.accepted
        if acc is None:
            return
        for field, mine in zip(_ECHOED, echoed, strict=True):
            if str(acc.get(field)).lower() != mine:
                raise PaymentFailed(REQUIREMENTS_MISMATCH, f"accepted.{field} does not match the quote.")

    async def reserve(self, payment: x402.PaymentPayload, quote: dict, payer: str, purpose: str) -> Accepted:
        """For a payment `verify` passed, committed before the caller runs anything: the
        quote recorded used (`quote_already_used` if it was) and the authorization's row
        (`invalid_exact_evm_nonce_already_used` if it exists, and then the quote stays
        unused). One transaction on SQLite (a refusal rolls it back), one statement on
        PostgreSQL (`_RESERVE_AND_USE`), which on the local network first checks the funds
        `verify` left to it (`invalid_exact_evm_insufficient_balance`, nothing written)."""
        key = authorization_key(self.network, payment.authorization)
        now = now_ms()
        auth = payment.authorization
        row = (key, payer.lower(), auth.to.lower(), auth.value, auth.nonce, quote["id"], purpose)
        row += (msgspec.json.encode(payment.raw).decode(), now, now)
        if sql.on_postgres():  # one round trip instead of four (BEGIN, two inserts, COMMIT)
            funds = (self._funds_checked_in_reservation(), ledger.chain_key(self.network.chain_id, payer), auth.value)
            done = await sql.fetch_one(_RESERVE_AND_USE, *funds, *row, *quotes.used_values(quote, now))
            if not done["funded"]:
                raise _cannot_settle(x402.ERR_INSUFFICIENT_BALANCE)
            reserved, used = done["reserved"], done["used"]
            if reserved and not used:
                await sql.fetch(_UNRESERVE, key)
        else:
            try:
                async with self.db.transaction():
                    await quotes.record_used(quote)
                    reserved = used = bool(await sql.fetch_one(_RECORD_AUTHORIZATION, *row))
                    if not reserved:
                        raise _NonceSeen
            except quotes.QuoteProblem:
                reserved, used = True, False
            except _NonceSeen:
                pass
        if not reserved:
            raise PaymentFailed(x402.ERR_NONCE_ALREADY_USED, "This payment authorization was already used.")
        if not used:
            problem = quotes.already_used(quote)
            raise PaymentFailed(problem.reason, problem.message)
        return Accepted(
            payment, payer, key, quote["id"], quote["amount"], self.requirements(quote["amount"], quote["id"])
        )

    async def accept(
        self,
        payment_value: x402.PaymentPayload | dict[str, Any] | str,
        quote_id_header: str | None,
        *,
        purpose: str,
        input_hash: str,
    ) -> Accepted:
        """Decode (unless decoded already), verify and reserve a payment."""
        payment = payment_value if isinstance(payment_value, x402.PaymentPayload) else self.decode(payment_value)
        quote, payer = await self.verify(payment, quote_id_header, purpose=purpose, input_hash=input_hash)
        return await self.reserve(payment, quote, payer, purpose)

    async def settle(self, accepted: Accepted) -> SettlementResult:
        """Settle through the backend; the caller records the outcome with `record`
        (together with the receipt id, in one write).

        The authorization is marked `settling` first: if this process dies while
        the backend holds the payment, the reconciler knows money may have moved
        (a `reserved` one was never sent anywhere and is simply voided)."""
        sending = await sql.fetch_one(
            _START_SETTLING,
            now_ms(),
            accepted.key,
        )
        if sending is None:  # the reconciler voided it meanwhile: it must never move money now
            return SettlementResult("failed", None, "authorization_voided")
        try:
            return await self.backend.settle(accepted.payment, accepted.requirements, accepted.payer)
        except Exception:  # a broken backend: the payment may have moved, so pending, never a fresh 402
            log.exception("settlement of %s did not finish; left pending", accepted.key)
            return SettlementResult("pending", None, "settlement_pending")

    async def settle_in_transaction(self, accepted: Accepted) -> SettlementResult:
        """Settle on a backend that settles in our database, inside the caller's
        transaction, which records the outcome there with `record(..., reserved=True)`.

        No `settling` mark: nothing outside the transaction could see it. The guard
        against a payment the reconciler voided meanwhile is that record: it raises
        `AuthorizationVoided`, and the transaction's money movements roll back."""
        return await self.backend.settle(accepted.payment, accepted.requirements, accepted.payer)

    async def record(
        self,
        accepted: Accepted,
        status: str,
        transaction: str | None = None,
        receipt_id: str | None = None,
        *,
        reserved: bool = False,
    ) -> None:
        """Write the authorization's state (settled, pending, failed, voided) and its receipt;
        with `reserved`, only over a `reserved` row (else `AuthorizationVoided`)."""
        row = await sql.fetch_one(
            _RECORD_OVER_RESERVED if reserved else _RECORD,
            status,
            transaction,
            receipt_id,
            now_ms(),
            accepted.key,
        )
        if reserved and row is None:
            raise AuthorizationVoided(accepted.key)

    def accepted_from_row(self, row: Any) -> Accepted:
        """Rebuild the accepted payment of a stored authorization (for the reconciler)."""
        payment = x402.decode_payment(msgspec.json.decode(row["payload"]))
        amount = int(row["value"])
        return Accepted(
            payment, row["payer"], row["id"], row["quote_id"], amount, self.requirements(amount, row["quote_id"])
        )

    async def fate(self, accepted: Accepted) -> SettlementResult:
        """Ask the backend what became of a payment sent for settlement."""
        try:
            return await self.backend.fate(accepted.payment, accepted.requirements, accepted.payer)
        except Exception:
            log.exception("asking the fate of %s failed; still pending", accepted.key)
            return SettlementResult("pending", None, "fate_unknown")

    def settlement(self, accepted: Accepted, result: SettlementResult) -> dict[str, Any]:
        """The x402 SettleResponse object of a payment sent for settlement."""
        return x402.build_settle_response(
            result.status == "settled", result.transaction or "", self.network.caip2, accepted.payer, result.reason
        )
