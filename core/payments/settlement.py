"""Settlement backends: who moves the USDC once a payment is verified.

`local` settles on the embedded test network's ledger in our own database;
`facilitator` calls an x402 facilitator's /verify and /settle over HTTP.
Both are idempotent on the authorization: settling twice returns the same hash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal, Protocol

import httpx

from tollway._core.basics.keccak import keccak
from tollway._core.credits import ledger
from tollway._core.payments.networks import Network
from tollway._core.payments.x402 import ERR_INSUFFICIENT_BALANCE, PaymentPayload
from tollway._core.plugin_api.context import Transactions


@dataclasses.dataclass(frozen=True)
class SettlementResult:
    status: Literal["settled", "pending", "failed"]
    transaction: str | None
    reason: str | None = None


class SettlementBackend(Protocol):
    name: str
    # True when `settle` moves the money in our own database (the embedded network):
    # the paid call then settles inside its own transaction, together with the receipt
    # and the ledger rows, and nothing can be left half done. False when the money moves
    # elsewhere (a facilitator, a chain): the payment is marked `settling` first and
    # settled outside any transaction, so the reconciler can learn its fate.
    settles_in_database: bool

    async def verify(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> str | None:
        """None when the payment can settle, else an x402 invalid-reason code."""

    async def settle(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> SettlementResult: ...

    async def on_chain_balance(self, address: str) -> int | None:
        """Micro-USDC held by `address`, or None when this backend cannot tell."""

    async def fate(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> SettlementResult:
        """What became of a payment sent for settlement whose answer never came:
        `settled` (with its transaction), `failed` (nothing moved and nothing will)
        or `pending` (not known yet; the reconciler asks again later)."""


@dataclasses.dataclass(frozen=True)
class BackendServices:
    """What a settlement backend factory gets (never the kernel): the network it settles on,
    the shared HTTP client, the database (for backends that settle in it) and the
    facilitator and chain settings."""

    network: Network
    http: httpx.AsyncClient
    db: Transactions
    facilitator_url: str | None = None
    facilitator_timeout_s: float = 15.0
    chain_rpc_url: str | None = None


SettlementBackendFactory = Callable[[BackendServices], SettlementBackend]


def local_transaction_hash(network: Network, payment: PaymentPayload) -> str:
    a = payment.authorization
    key = f"{network.chain_id}:{network.asset.lower()}:{a.from_.lower()}:{a.nonce.lower()}".encode()
    return "0x" + keccak(key).hex()


class LocalSettlement:
    """The embedded test network: USDC balances are rows in our database."""

    name = "local"
    settles_in_database = True  # the caller may settle inside its own transaction

    def __init__(self, services: BackendServices) -> None:
        self.db = services.db
        self.network: Network = services.network

    async def verify(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> str | None:
        if await ledger.chain_balance(self.network.chain_id, payer) < payment.authorization.value:
            return ERR_INSUFFICIENT_BALANCE
        return None

    async def settle(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> SettlementResult:
        tx = local_transaction_hash(self.network, payment)
        value = payment.authorization.value
        async with self.db.transaction():
            if (
                await ledger.chain_transfer(self.network.chain_id, payer, payment.authorization.to, value, reference=tx)
                is not None
            ):
                return SettlementResult("settled", tx)
            if await ledger.transfer_done(tx):  # settled before: the same hash again
                return SettlementResult("settled", tx)
        return SettlementResult("failed", None, ERR_INSUFFICIENT_BALANCE)

    async def on_chain_balance(self, address: str) -> int | None:
        return await ledger.chain_balance(self.network.chain_id, address)

    async def fate(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> SettlementResult:
        # Settlement here is one database transaction: either its transfer row
        # exists, or nothing moved and nothing ever will for that attempt.
        tx = local_transaction_hash(self.network, payment)
        if await ledger.transfer_done(tx):
            return SettlementResult("settled", tx)
        return SettlementResult("failed", None, "not_settled")
