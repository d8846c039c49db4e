"""The commerce plugin's tables: ACP tokens (one per agent platform, stored hashed), checkout
sessions (the authoritative state as JSON beside the columns the flow locks and sweeps on),
orders (one per completed session), and the idempotency records of RFC §6 (scoped to the
token and the path, kept at least 24 hours). Money columns are integers of minor units
(cents) unless named otherwise, times unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Boolean, Integer, Text, Varchar
from piccolo.table import Table


class AcpToken(Table, tablename="commerce_acp_tokens"):
    id = Varchar(length=40, primary_key=True)  # acpt_...
    platform = Varchar(length=100)  # who it was issued to (an agent platform's name)
    token_hash = Varchar(length=64, unique=True)  # SHA-256 hex of the bearer token; the token is never stored
    agent_id = Varchar(length=36)  # the platform's agent: the buyer of record unless buyer.customer_id names one
    webhook_url = Text(null=True, default=None)  # where order events go
    webhook_secret = Text(null=True, default=None)  # their HMAC key (Merchant-Signature)
    signing_key = Text(null=True, default=None)  # set: every request must carry a valid Signature + Timestamp
    created_ms = BigInt()
    revoked_ms = BigInt(null=True, default=None)


class CheckoutSession(Table, tablename="commerce_sessions"):
    id = Varchar(length=40, primary_key=True)  # cs_...
    token_id = Varchar(length=40, index=True)  # the platform that created it: no other may see it
    status = Varchar(length=32, index=True)
    state = Text()  # JSON: the session as last answered, less what is derived per answer
    total = BigInt()  # cents, what complete charges
    attempt = Integer(default=0)  # PSP attempts begun; the idempotency key of the charge is id + attempt
    payment_intent = Varchar(length=80, null=True, default=None)  # the PSP's id of the current attempt
    complete_started_ms = BigInt(null=True, default=None)  # when complete_in_progress began (the reconciler's clock)
    payment = Text(null=True, default=None)  # JSON: what the PSP charge needs again (token, handler), never served
    created_ms = BigInt()
    updated_ms = BigInt(index=True)
    expires_ms = BigInt()


class Order(Table, tablename="commerce_orders"):
    id = Varchar(length=40, primary_key=True)  # ord_...
    session_id = Varchar(length=40, unique=True)  # one order per session, whatever the retries
    token_id = Varchar(length=40, index=True)
    agent_id = Varchar(length=36)  # the buyer of record (its receipt)
    receipt_id = Varchar(length=40)
    payment_intent = Varchar(length=80)
    total = BigInt()  # cents charged
    status = Varchar(length=16)  # confirmed (digital goods are delivered at once)
    created_ms = BigInt()
    # a soul service whose souls order has not ended yet, as commerce last saw: the reconciler asks
    # the souls plugin about these only, and refunds those that end declined or expired (refunds.py)
    soul_order_open = Boolean(default=False, index=True)


class IdempotencyRecord(Table, tablename="commerce_idempotency"):
    id = Varchar(length=64, primary_key=True)  # SHA-256 hex of token id, method, path and key
    fingerprint = Varchar(length=64)  # SHA-256 hex of the body's RFC 8785 canonical JSON
    status = Integer(null=True, default=None)  # NULL while the first request is in flight
    body = Text(null=True, default=None)  # the answer's exact bytes (UTF-8 JSON)
    started_ms = BigInt()
    created_ms = BigInt(index=True)


class Refund(Table, tablename="commerce_refunds"):
    """A refund of a completed order, in full or in part (refunds.py): the operator's, or the
    reconciler's of a soul service whose souls order ended declined or expired."""

    id = Varchar(length=40, primary_key=True)  # rf_...
    order_id = Varchar(length=40, index=True)
    key_hash = Varchar(length=64, unique=True)  # SHA-256 hex of the order id and the Idempotency-Key (or AUTO_KEY)
    fingerprint = Varchar(length=64)  # SHA-256 hex of the request (amount asked, reason): a key's one request
    amount = BigInt()  # cents given back
    reason = Text(default="")
    status = Varchar(length=12, index=True)  # pending (the PSP asked or to be asked), succeeded, failed
    psp_refund_id = Varchar(length=80, null=True, default=None)
    receipt_id = Varchar(length=40, null=True, default=None)  # the buyer's refund receipt
    credits_taken = BigInt(default=0)  # micro-USDC of credits taken back from the buyer
    share_taken = BigInt(default=0)  # micro-USDC of the seller's share taken back
    error = Text(null=True, default=None)  # why the PSP refused (failed)
    started_ms = BigInt()  # when the PSP was last asked: a pending refund older than IN_FLIGHT_S is the reconciler's
    created_ms = BigInt()
    updated_ms = BigInt()


TABLES = [AcpToken, CheckoutSession, Order, IdempotencyRecord, Refund]
