"""Settlement through an x402 facilitator's HTTP API (/verify, /settle).

A settlement that times out is "pending" (the receipt says so and the
reconciler settles it later), never a fresh 402: the payer may already be
charged. The x402 facilitator API has no status route, so a payment's fate is
read from the chain when `TOLLWAY_CHAIN_RPC_URL` is set, and otherwise by
sending the same payment to /settle again (facilitators settle an
authorization at most once).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from tollway._core.payments.chain import ChainError, ChainReader
from tollway._core.payments.settlement import BackendServices, SettlementResult
from tollway._core.payments.x402 import ERR_NONCE_ALREADY_USED, ERR_VALID_BEFORE_EXPIRED, PaymentPayload

log = logging.getLogger("tollway.facilitator")


class FacilitatorSettlement:
    name = "facilitator"
    settles_in_database = False  # the facilitator moves the money, outside our transaction

    def __init__(self, services: BackendServices) -> None:
        url = services.facilitator_url
        if not url:
            raise RuntimeError("TOLLWAY_FACILITATOR_URL must be set to settle through a facilitator")
        self.url = url.rstrip("/")
        self.http = services.http
        self.timeout = httpx.Timeout(services.facilitator_timeout_s)
        self.chain: ChainReader | None = None
        if services.chain_rpc_url:
            self.chain = ChainReader(
                services.http, services.chain_rpc_url, services.network.asset, timeout_s=services.facilitator_timeout_s
            )

    def _body(self, payment: PaymentPayload, requirements: dict[str, Any]) -> dict[str, Any]:
        return {"x402Version": payment.version, "paymentPayload": payment.raw, "paymentRequirements": requirements}

    async def supported(self) -> dict[str, Any]:
        resp = await self.http.get(f"{self.url}/supported", timeout=self.timeout)
        resp.raise_for_status()
        return resp.json()

    async def verify(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> str | None:
        try:
            resp = await self.http.post(
                f"{self.url}/verify", json=self._body(payment, requirements), timeout=self.timeout
            )
            data = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("facilitator /verify failed: %s", exc)
            return "facilitator_unavailable"
        if resp.status_code >= 500:
            return "facilitator_unavailable"
        if data.get("isValid") is True:
            return None
        return str(data.get("invalidReason") or "invalid_payment")

    async def settle(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> SettlementResult:
        try:
            resp = await self.http.post(
                f"{self.url}/settle", json=self._body(payment, requirements), timeout=self.timeout
            )
        except httpx.TimeoutException:
            return SettlementResult("pending", None, "settlement_timeout")
        except httpx.HTTPError as exc:
            log.warning("facilitator /settle unreachable: %s", exc)
            return SettlementResult("pending", None, "facilitator_unavailable")
        try:
            data = resp.json()
        except ValueError:
            return SettlementResult("pending", None, "facilitator_bad_answer")
        if data.get("success") is True and data.get("transaction"):
            return SettlementResult("settled", str(data["transaction"]))
        if resp.status_code >= 500:
            return SettlementResult("pending", None, "facilitator_unavailable")
        return SettlementResult("failed", None, str(data.get("errorReason") or "settlement_failed"))

    async def on_chain_balance(self, address: str) -> int | None:
        return None  # a facilitator does not report balances

    async def fate(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> SettlementResult:
        auth = payment.authorization
        if self.chain is not None:
            try:
                outcome, tx = await self.chain.authorization_outcome(auth)
            except ChainError as exc:
                log.warning("chain lookup of %s failed: %s", auth.nonce, exc)
                return SettlementResult("pending", None, "chain_unavailable")
            if outcome == "transferred":
                return SettlementResult("settled", tx)
            if outcome == "canceled":
                return SettlementResult("failed", None, "authorization_canceled")
            if outcome == "used":
                return SettlementResult("pending", None, "authorization_used_transaction_not_found")
            if time.time() >= auth.valid_before:
                return SettlementResult("failed", None, "authorization_expired_unused")
            return await self.settle(payment, requirements, payer)
        result = await self.settle(payment, requirements, payer)
        if result.status == "failed" and result.reason in (ERR_NONCE_ALREADY_USED, ERR_VALID_BEFORE_EXPIRED):
            # Spent or expired: whether it was our transfer only the chain can say.
            return SettlementResult("pending", None, f"{result.reason}: set TOLLWAY_CHAIN_RPC_URL to confirm on chain")
        return result
