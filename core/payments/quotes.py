"""402 quotes: a price for one tool and one exact input, valid until it expires
and usable once."""
from __future__ import annotations

from ..ids import new_id, now_ms
from .. import sql


class QuoteProblem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def create_quote(*, tool: str, input_hash: str, amount: int, pay_to: str, network: str, ttl_s: int) -> dict:
    created = now_ms()
    quote_id, expires = new_id("q"), created + ttl_s * 1000
    await sql.fetch(
        "INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, used_ms, created_ms) "
        "VALUES ({}, {}, {}, {}, {}, {}, {}, NULL, {})",
        quote_id, tool, input_hash, amount, pay_to, network, expires, created,
    )
    return {"id": quote_id, "amount": amount, "pay_to": pay_to, "network": network, "expires_ms": expires}


async def check_quote(quote_id: str | None, *, tool: str, input_hash: str) -> dict:
    """The quote's row if it exists, is unexpired, unused and for this tool and input."""
    if not quote_id:
        raise QuoteProblem("missing_quote_id", "Send the quote id from the 402 answer in X-Quote-ID.")
    row = await sql.fetch_one("SELECT id, tool, input_hash, amount, pay_to, expires_ms, used_ms FROM tw_quotes WHERE id = {}", quote_id)
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
    row = await sql.fetch_one("UPDATE tw_quotes SET used_ms = {} WHERE id = {} AND used_ms IS NULL RETURNING id", now_ms(), quote_id)
    return row is not None
