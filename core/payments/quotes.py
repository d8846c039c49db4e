"""402 quotes: a price for one tool and one exact input, valid until it expires
and usable once."""

from __future__ import annotations

from tollway._core.basics.ids import new_id, now_ms
from tollway._core.storage import sql

_CREATE = (
    "INSERT INTO tw_quotes (id, tool, input_hash, amount, pay_to, network, expires_ms, used_ms, "
    "created_ms) VALUES ({}, {}, {}, {}, {}, {}, {}, NULL, {})"
)
_CLAIM = (
    "UPDATE tw_quotes SET used_ms = {} WHERE id = {} AND used_ms IS NULL AND expires_ms >= {} AND "
    "tool = {} AND input_hash = {} RETURNING id, amount, pay_to, used_ms"
)
_FIND = "SELECT id, tool, input_hash, expires_ms, used_ms FROM tw_quotes WHERE id = {}"
_RELEASE = "UPDATE tw_quotes SET used_ms = NULL WHERE id = {} AND used_ms = {}"


class QuoteProblem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def create_quote(*, tool: str, input_hash: str, amount: int, pay_to: str, network: str, ttl_s: int) -> dict:
    created = now_ms()
    quote_id, expires = new_id("q"), created + ttl_s * 1000
    await sql.fetch(
        _CREATE,
        quote_id,
        tool,
        input_hash,
        amount,
        pay_to,
        network,
        expires,
        created,
    )
    return {"id": quote_id, "amount": amount, "pay_to": pay_to, "network": network, "expires_ms": expires}


async def claim_quote(quote_id: str | None, *, tool: str, input_hash: str) -> dict:
    """Mark the quote used and return its row, in one statement, when it exists, is
    unexpired, unused and for this tool and input; else say which it is not."""
    if not quote_id:
        raise QuoteProblem("missing_quote_id", "Send the quote id from the 402 answer in X-Quote-ID.")
    now = now_ms()
    row = await sql.fetch_one(
        _CLAIM,
        now,
        quote_id,
        now,
        tool,
        input_hash,
    )
    if row is not None:
        return row
    row = await sql.fetch_one(_FIND, quote_id)
    if row is None:
        raise QuoteProblem("quote_not_found", f"Quote {quote_id} does not exist.")
    if row["expires_ms"] < now and row["used_ms"] is None:
        raise QuoteProblem("quote_expired", f"Quote {quote_id} has expired.")
    if (row["tool"] != tool or row["input_hash"] != input_hash) and row["used_ms"] is None:
        raise QuoteProblem("quote_mismatch", f"Quote {quote_id} was made for another tool or another input.")
    # used, or claimed by a concurrent request between the two statements
    raise QuoteProblem("quote_already_used", f"Quote {quote_id} was already used.")


async def release_quote(quote: dict) -> None:
    """Give back a quote claimed by a payment that was then refused: the quote stays usable."""
    await sql.fetch(_RELEASE, quote["id"], quote["used_ms"])
