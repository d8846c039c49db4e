"""The commerce plugin's tables: ACP tokens (one per agent platform, stored hashed), checkout
sessions (the authoritative state as JSON beside the columns the flow locks and sweeps on),
orders (one per completed session), and the idempotency records of RFC §6 (scoped to the
token and the path, kept at least 24 hours). Money columns are integers of minor units
(cents) unless named otherwise, times unix milliseconds."""

from __future__ import annotations

from piccolo.columns import BigInt, Integer, Text, Varchar
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


class IdempotencyRecord(Table, tablename="commerce_idempotency"):
    id = Varchar(length=64, primary_key=True)  # SHA-256 hex of token id, method, path and key
    fingerprint = Varchar(length=64)  # SHA-256 hex of the body's RFC 8785 canonical JSON
    status = Integer(null=True, default=None)  # NULL while the first request is in flight
    body = Text(null=True, default=None)  # the answer's exact bytes (UTF-8 JSON)
    started_ms = BigInt()
    created_ms = BigInt(index=True)


TABLES = [AcpToken, CheckoutSession, Order, IdempotencyRecord]
