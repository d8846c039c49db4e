"""Who the rate limiter counts a request as: the identity it proves (signed payment,
agent proof, access token), else its client IP; never a bare X-Agent-ID."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .payments import x402
from .payments.eip3009 import recover_payer
from .payments.gateway import find_payment_header
from .ratelimits import caller_key
from .request import CallRequest

if TYPE_CHECKING:
    from .kernel import Kernel


def payer_of(kernel: "Kernel", req: CallRequest, payment_header: str) -> str | None:
    """The wallet that signed the request's payment (its signature checked, lower
    case), or None if unreadable; recovered once per request. The payment itself is
    verified in full later."""
    if "payer" not in req.memo:
        try:
            payment = x402.decode_payment_header(payment_header)
            req.memo["payer"] = recover_payer(kernel.network, payment.authorization, payment.signature).lower()
        except x402.PaymentError:
            req.memo["payer"] = None
    return req.memo["payer"]


async def rate_key(kernel: "Kernel", req: CallRequest) -> str:
    """The counter key of `req`: `wallet:<payer>` when it carries a payment whose
    signature recovers, else the agent proof's or access token's identity, else
    `ip:<client ip>`. Credentials are checked once: the route reuses the outcome."""
    header = find_payment_header(req.headers)
    payer = payer_of(kernel, req, header) if header else None
    identity = f"wallet:{payer}" if payer else await kernel.auth.proven_identity(req)
    return caller_key(identity, req.client_ip)


__all__ = ["payer_of", "rate_key"]
