"""x402 payment state: price quotes, EIP-3009 authorizations, the embedded test network's balances.

Piccolo tables of this area (money in integer micro-USDC, times in unix milliseconds);
its app is `migrations.APP`."""

from __future__ import annotations

from piccolo.columns import BigInt, Text, Varchar
from piccolo.table import Table

from tollway._core.storage.tables import PLACEHOLDER_ENGINE


class ChainBalance(Table, tablename="tw_chain_balances", db=PLACEHOLDER_ENGINE):
    """The embedded test network's USDC ledger (local network only)."""

    address = Varchar(length=60, primary_key=True)  # "<chain_id>:<lower-case address>"
    balance = BigInt(default=0)


class Quote(Table, tablename="tw_quotes", db=PLACEHOLDER_ENGINE):
    """A 402 price quote: one tool, one exact input (hash), one amount, one expiry."""

    id = Varchar(length=40, primary_key=True)
    tool = Varchar(length=64)
    input_hash = Varchar(length=64)
    amount = BigInt()
    pay_to = Varchar(length=42)
    network = Varchar(length=32)
    expires_ms = BigInt()
    used_ms = BigInt(null=True, default=None)
    created_ms = BigInt()


class PaymentAuthorization(Table, tablename="tw_payment_authorizations", db=PLACEHOLDER_ENGINE):
    """An EIP-3009 authorization reserved before the tool runs: its key is
    (chain id, asset, from, nonce), so one authorization pays at most once."""

    id = Varchar(length=64, primary_key=True)  # sha256 of chain:asset:from:nonce
    payer = Varchar(length=42, index=True)
    pay_to = Varchar(length=42)
    value = BigInt()
    nonce = Varchar(length=66)
    quote_id = Varchar(length=40, null=True, default=None)
    purpose = Varchar(length=64)  # tool name or "credits_top_up"
    # reserved (verified, nothing sent) -> settling (sent to a remote backend) ->
    # settled | pending (fate unknown: the reconciler asks again) | failed | voided
    status = Varchar(length=16)
    settlement_tx = Varchar(length=66, null=True, default=None)
    payload = Text()  # the payment payload as received (JSON), for settlement retries
    receipt_id = Varchar(length=40, null=True, default=None)
    created_ms = BigInt()
    updated_ms = BigInt()


TABLES: tuple[type[Table], ...] = (
    ChainBalance,
    Quote,
    PaymentAuthorization,
)
