"""Who the rate limiter counts a request as: the identity it proves (signed payment,
agent proof, access token), else its client IP; never a bare X-Agent-ID. `RateGate`
counts a request and puts the `RateLimit-*` headers on whatever it answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tollway._core.auth.auth import Authenticator
from tollway._core.basics.errors import ServiceError
from tollway._core.basics.request import Answer, CallRequest
from tollway._core.calls.ratelimits import RateLimiter, caller_key
from tollway._core.payments import x402
from tollway._core.payments.eip3009 import recover_payer
from tollway._core.payments.gateway import find_payment, payment_of
from tollway._core.payments.networks import Network


def payer_of(network: Network, req: CallRequest) -> str | None:
    """The wallet that signed the request's payment (which it must carry; its signature
    checked, lower case), or None if unreadable; recovered once per request. The payment
    itself is verified in full later."""
    if "payer" not in req.memo:
        try:
            payment = payment_of(req)
            req.memo["payer"] = recover_payer(network, payment.authorization, payment.signature).lower()
        except x402.PaymentError:
            req.memo["payer"] = None
    return req.memo["payer"]


async def rate_key(network: Network, auth: Authenticator, req: CallRequest) -> str:
    """The counter key of `req`: `wallet:<payer>` when it carries a payment whose
    signature recovers, else the agent proof's or access token's identity, else
    `ip:<client ip>`. Credentials are checked once: the route reuses the outcome."""
    payer = payer_of(network, req) if find_payment(req) is not None else None
    identity = f"wallet:{payer}" if payer else await auth.proven_identity(req)
    return caller_key(identity, req.client_ip)


class RateGate:
    """Counts requests per category and proven identity (core/calls/ratelimits.py)."""

    def __init__(self, *, limiter: RateLimiter, auth: Authenticator, network: Network) -> None:
        self.limiter = limiter
        self.auth = auth
        self.network = network

    async def limited(self, category: str, req: CallRequest, run: Callable[[], Awaitable[Answer]]) -> Answer:
        """Count `req` in `category`, then run; the `RateLimit-*` headers on every outcome
        (added to the answer `run` gives, or to the refusal it raises)."""
        state = await self.limiter.hit(category, await rate_key(self.network, self.auth, req))
        if not state.allowed:
            raise state.exceeded()
        try:
            answer = await run()
        except ServiceError as exc:
            exc.headers.update(state.headers())
            raise
        answer.headers.update(state.headers())
        return answer


__all__ = ["RateGate", "payer_of", "rate_key"]
