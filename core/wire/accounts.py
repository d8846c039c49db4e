"""Credits and accounts: balance, top-up, and the operator routes' bodies."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

Memo = Annotated[str, Meta(max_length=1000)]
# USDC as a JSON number or a decimal string, at most 6 decimals (read without floats)
Amount = Annotated[str, Meta(pattern=r"^[0-9]+(\.[0-9]{1,6})?$")] | Annotated[float, Meta(le=1_000_000_000)]
Address = Annotated[str, Meta(pattern=r"^0x[0-9a-fA-F]{40}$")]


class Balance(msgspec.Struct):
    on_chain_balance: str | None  # USDC; null without a wallet or a chain to ask
    credits_balance: str
    currency: Literal["USDC"]
    address: str | None
    chain_id: int
    agent_id: str | None  # null: a wallet that has no agent yet


class TopUpRequest(msgspec.Struct, forbid_unknown_fields=True):
    amount: Annotated[float, Meta(ge=0.01, le=1000)] | Annotated[str, Meta(pattern=r"^[0-9]+(\.[0-9]{1,6})?$")]
    memo: Memo | None = None


class TopUpRecord(msgspec.Struct):
    """The Credit top-up record; `pending` (202) while the payment settles, then
    `credited`. A resubmitted settled payment answers `already_credited: true`."""

    status: Literal["credited", "pending"]
    topped_up: str
    credits_balance: str
    transaction_id: str | None
    settlement_tx: str | None
    already_credited: bool
    amount: str | UnsetType = UNSET  # pending only: what will be credited
    message: str | UnsetType = UNSET


# -- operator routes (bearer operator token) -----------------------------------------
class RegisterAgentRequest(msgspec.Struct, forbid_unknown_fields=True):
    wallet_address: str | None = None
    name: str | None = None


class RegisteredAgent(msgspec.Struct):
    agent_id: str
    wallet_address: str | None
    name: str | None
    created_at: str


class GrantCreditsRequest(msgspec.Struct, forbid_unknown_fields=True):
    agent_id: str  # agent UUID or wallet address
    amount: Amount
    memo: Memo | None = None


class CreditsGranted(msgspec.Struct):
    agent_id: str
    credits_balance: str
    transaction_id: str


class AccessTokenRequest(msgspec.Struct, forbid_unknown_fields=True):
    agent_id: str


class AccessToken(msgspec.Struct):
    token: str
    agent_id: str
    expires_at: str


class ChainFundRequest(msgspec.Struct, forbid_unknown_fields=True):
    address: Address
    amount: Amount


class ChainFunded(msgspec.Struct):
    address: str
    on_chain_balance: str


class PendingItem(msgspec.Struct):
    """Money in an intermediate state: a credit hold, a payment or top-up, a receipt, or a payout."""

    kind: Literal["credit_hold", "payment", "top_up", "receipt", "payout"]
    id: str
    amount_usdc: str
    tool: str | None
    state: str
    age_s: float
    reason: str
    agent_id: str | UnsetType = UNSET
    payer: str | UnsetType = UNSET
    receipt_id: str | None | UnsetType = UNSET
    last_checked_s: float | UnsetType = UNSET


class PendingReport(msgspec.Struct):
    pending: list[PendingItem]
    count: int
    reconcile_after_s: float
    reconcile_interval_s: float
