"""402 quotes: a price for one tool and one exact input, valid until it expires
and usable once."""
from __future__ import annotations

from ..ids import new_id, now_ms
from ..tables import Quote


class QuoteProblem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def create_quote(*, tool: str, input_hash: str, amount: int, pay_to: str, network: str, ttl_s: int) -> dict:
    created = now_ms()
    row = Quote(
        id=new_id("q"),
        tool=tool,
        input_hash=input_hash,
        amount=amount,
        pay_to=pay_to,
        network=network,
        expires_ms=created + ttl_s * 1000,
        used_ms=None,
        created_ms=created,
    )
    await Quote.insert(row)
    return {"id": row.id, "amount": amount, "pay_to": pay_to, "network": network, "expires_ms": row.expires_ms}


async def check_quote(quote_id: str | None, *, tool: str, input_hash: str) -> dict:
    """The quote's row if it exists, is unexpired, unused and for this tool and input."""
    if not quote_id:
        raise QuoteProblem("missing_quote_id", "Send the quote id from the 402 answer in X-Quote-ID.")
    row = await Quote.select().where(Quote.id == quote_id).first()
    if row is None:
        raise QuoteProblem("quote_not_found", f"Quote {quote_id} does not exist.")
    if row["used_ms"] is not None:
        raise QuoteProblem("quote_already_used", f"Quote {quote_id} was already used.")
    if row["expires_ms"] < now_ms():
        raise QuoteProblem("quote_expired", f"Quote {quote_id} has expired.")
    if row["tool"] != tool or row["input_hash"] != input_hash:
        raise QuoteProblem("quote_mismatch", f"Quote {quote_id} was made for another tool or another input.")
    return row


async def mark_used(quote_id: str) -> bool:
    """Atomically mark the quote used; False when another request used it first."""
    rows = (
        await Quote.update({Quote.used_ms: now_ms()})
        .where((Quote.id == quote_id) & Quote.used_ms.is_null())
        .returning(Quote.id)
    )
    return bool(rows)
