"""Reads the USDC contract over Ethereum JSON-RPC (`TOLLWAY_CHAIN_RPC_URL`): was an
EIP-3009 authorization used, and by which transaction.

The chain is the one witness of a settlement whose facilitator answer was lost:
`authorizationState(authorizer, nonce)` says whether the nonce is spent, and
the contract's `AuthorizationUsed` / `AuthorizationCanceled` events say how.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import httpx

from tollway._core.basics.keccak import keccak
from tollway._core.payments.x402 import Authorization

AUTHORIZATION_USED = "0x" + keccak(b"AuthorizationUsed(address,bytes32)").hex()
AUTHORIZATION_CANCELED = "0x" + keccak(b"AuthorizationCanceled(address,bytes32)").hex()
_AUTHORIZATION_STATE = keccak(b"authorizationState(address,bytes32)")[:4].hex()
DEFAULT_LOOKBACK_BLOCKS = 200_000  # about 4.6 days of Base blocks (2 s each)


class ChainError(Exception):
    """The RPC endpoint could not answer; the fate stays unknown for now."""


def _word(address: str) -> str:
    return "0x" + address.lower().removeprefix("0x").rjust(64, "0")


class ChainReader:
    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        asset: str,
        *,
        lookback_blocks: int = DEFAULT_LOOKBACK_BLOCKS,
        timeout_s: float = 15.0,
    ) -> None:
        self.http = http
        self.url = url
        self.asset = asset
        self.lookback_blocks = lookback_blocks
        self.timeout = httpx.Timeout(timeout_s)
        self._ids = itertools.count(1)

    async def _rpc(self, method: str, params: list[Any]) -> Any:
        try:
            resp = await self.http.post(
                self.url,
                json={"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params},
                timeout=self.timeout,
            )
            data = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ChainError(f"{method}: {exc}") from exc
        if not isinstance(data, dict) or "error" in data or "result" not in data:
            raise ChainError(f"{method}: {data.get('error') if isinstance(data, dict) else data!r}")
        return data["result"]

    async def authorization_used(self, auth: Authorization) -> bool:
        data = "0x" + _AUTHORIZATION_STATE + _word(auth.from_)[2:] + auth.nonce.removeprefix("0x").rjust(64, "0")
        result = await self._rpc("eth_call", [{"to": self.asset, "data": data}, "latest"])
        try:
            return int(str(result), 16) != 0
        except ValueError as exc:
            raise ChainError(f"eth_call answered {result!r}") from exc

    async def _log(self, topic: str, auth: Authorization) -> str | None:
        latest = int(str(await self._rpc("eth_blockNumber", [])), 16)
        logs = await self._rpc(
            "eth_getLogs",
            [
                {
                    "address": self.asset,
                    "fromBlock": hex(max(0, latest - self.lookback_blocks)),
                    "toBlock": "latest",
                    "topics": [topic, _word(auth.from_), auth.nonce],
                }
            ],
        )
        for log in logs or []:
            if isinstance(log, dict) and log.get("transactionHash"):
                return str(log["transactionHash"])
        return None

    async def authorization_outcome(
        self, auth: Authorization
    ) -> tuple[Literal["unused", "transferred", "canceled", "used"], str | None]:
        """`unused`; `transferred` with the transaction hash; `canceled` by the payer;
        or `used` when the nonce is spent but no event was found in the look-back."""
        if not await self.authorization_used(auth):
            return "unused", None
        tx = await self._log(AUTHORIZATION_USED, auth)
        if tx:
            return "transferred", tx
        if await self._log(AUTHORIZATION_CANCELED, auth):
            return "canceled", None
        return "used", None
