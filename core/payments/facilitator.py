"""Settlement through an x402 facilitator's HTTP API (/verify, /settle).

A settlement that times out is "pending" (the receipt says so and a later
reconciliation settles it), never a fresh 402: the payer may already be charged.
"""
from __future__ import annotations

import logging
from typing import Any

import httpx

from .settlement import SettlementResult
from .x402 import PaymentPayload

log = logging.getLogger("tollway.facilitator")


class FacilitatorSettlement:
    name = "facilitator"

    def __init__(self, kernel: Any) -> None:
        url = kernel.config.facilitator_url
        if not url:
            raise RuntimeError("TOLLWAY_FACILITATOR_URL must be set to settle through a facilitator")
        self.url = url.rstrip("/")
        self.kernel = kernel
        self.timeout = httpx.Timeout(kernel.config.facilitator_timeout_s)

    @property
    def http(self) -> httpx.AsyncClient:
        return self.kernel.http

    def _body(self, payment: PaymentPayload, requirements: dict[str, Any]) -> dict[str, Any]:
        return {"x402Version": payment.version, "paymentPayload": payment.raw, "paymentRequirements": requirements}

    async def supported(self) -> dict[str, Any]:
        resp = await self.http.get(f"{self.url}/supported", timeout=self.timeout)
        resp.raise_for_status()
        return resp.json()

    async def verify(self, payment: PaymentPayload, requirements: dict[str, Any], payer: str) -> str | None:
        try:
            resp = await self.http.post(f"{self.url}/verify", json=self._body(payment, requirements), timeout=self.timeout)
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
            resp = await self.http.post(f"{self.url}/settle", json=self._body(payment, requirements), timeout=self.timeout)
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
