"""A small, honest x402 facilitator for tests, served over real HTTP on 127.0.0.1.

It implements the facilitator API the `facilitator` settlement backend calls
(`POST /verify`, `POST /settle`, `GET /supported`, bodies as the official SDK's
`HTTPFacilitatorClient` sends and parses them). Requests are parsed with the
SDK's own wire models, so a body the SDK would not accept is refused here too.
A payment is checked the way a facilitator checks it before submitting
`transferWithAuthorization`: scheme and network, the EIP-712 domain, the EIP-3009
signature against the requirements (`core.payments.eip3009.verify_authorization`:
signer, recipient, exact amount, validity window), the nonce never used, and the
payer's balance. Its "chain" is an in-memory USDC ledger with a used-nonce set;
/settle moves the funds and returns a transaction hash.

Switches for failure paths: `settle_mode = "hang"` makes /settle wait until
`release()` (then it settles, like a transaction that landed after the caller
gave up), `settle_mode = "fail"` makes /settle answer `success: false` with
`fail_reason`.

It also answers the few Ethereum JSON-RPC calls (`POST /rpc`) a resource server
makes to learn a settlement's fate from the chain: `eth_blockNumber`, `eth_call`
of the token's `authorizationState(address,bytes32)`, and `eth_getLogs` for its
`AuthorizationUsed` events (each settled transfer is mined in a block of its own).

It is served with `tests.support.serving.serve_app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import msgspec
from eth_account import Account
from eth_hash.auto import keccak
from litestar import Litestar, Request, Response, get, post
from pydantic import ValidationError
from x402.schemas import SettleRequest, VerifyRequest

from tollway._core.payments import x402 as wire
from tollway._core.payments.eip3009 import authorization_digest, verify_authorization
from tollway._core.payments.networks import Network, get_network

from .serving import serve_app

AUTHORIZATION_USED_TOPIC = "0x" + keccak(b"AuthorizationUsed(address,bytes32)").hex()
AUTHORIZATION_STATE_SELECTOR = keccak(b"authorizationState(address,bytes32)")[:4].hex()
MISSING_EIP712_DOMAIN = "missing_eip712_domain"  # the SDK's code (x402.mechanisms.evm.constants)
UNKNOWN_ASSET = "invalid_exact_evm_failed_to_get_asset_info"  # likewise


class _Refused(Exception):
    def __init__(self, reason: str, message: str, payer: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.payer = payer


class Facilitator:
    """The facilitator's state and its ASGI app (`.app`)."""

    def __init__(self, network: Network | str = "base-sepolia") -> None:
        self.network = get_network(network) if isinstance(network, str) else network
        self.signer = Account.create().address  # the address that would submit transactions
        self.balances: dict[str, int] = {}
        self.used_nonces: set[tuple[str, str]] = set()  # (payer, nonce), lower case
        self.transactions: list[dict[str, Any]] = []  # settled transfers, in order
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (endpoint, body) as received
        self.settle_mode: Literal["ok", "hang", "fail"] = "ok"
        self.fail_reason = wire.ERR_TRANSACTION_FAILED
        self.settle_finished = asyncio.Event()  # set each time a /settle has answered
        self._release = asyncio.Event()
        self.app = self._build_app()
        self.url = ""  # set by `running_facilitator`

    # -- the ledger ----------------------------------------------------------------
    def fund(self, address: str, micro: int) -> None:
        self.balances[address.lower()] = self.balance(address) + int(micro)

    def balance(self, address: str) -> int:
        return self.balances.get(address.lower(), 0)

    def release(self) -> None:
        """Let every hanging /settle go on."""
        self._release.set()

    def calls(self, endpoint: str) -> int:
        return sum(1 for name, _ in self.requests if name == endpoint)

    # -- checks --------------------------------------------------------------------
    def _check(self, request: VerifyRequest | SettleRequest) -> tuple[str, wire.Authorization, str]:
        """The payer, authorization and signature of a payment that can settle now."""
        payload, req = request.payment_payload, request.payment_requirements
        inner = payload.payload
        raw_auth = inner.get("authorization") if isinstance(inner, dict) else None
        declared = raw_auth.get("from") if isinstance(raw_auth, dict) else None
        payer = declared if isinstance(declared, str) else None
        if request.x402_version != wire.X402_VERSION or payload.x402_version != wire.X402_VERSION:
            raise _Refused(wire.INVALID_X402_VERSION, "only x402 v2 payloads are settled here", payer)
        if payload.accepted.scheme != wire.SCHEME_EXACT or req.scheme != wire.SCHEME_EXACT:
            raise _Refused(wire.ERR_UNSUPPORTED_SCHEME, "only the exact scheme is supported", payer)
        if payload.accepted.network != req.network or req.network != self.network.caip2:
            raise _Refused(wire.ERR_NETWORK_MISMATCH, f"this facilitator settles on {self.network.caip2}", payer)
        if req.asset.lower() != self.network.asset.lower():
            raise _Refused(UNKNOWN_ASSET, f"unknown asset {req.asset}", payer)
        extra = req.extra or {}
        if not extra.get("name") or not extra.get("version"):
            raise _Refused(
                MISSING_EIP712_DOMAIN, "requirements.extra must carry the token's EIP-712 name and version", payer
            )
        if (extra["name"], extra["version"]) != (self.network.eip712_name, self.network.eip712_version):
            raise _Refused(wire.ERR_INVALID_SIGNATURE, "the EIP-712 domain is not the token's", payer)
        if not isinstance(raw_auth, dict) or not isinstance(inner.get("signature"), str):
            raise _Refused(
                wire.INVALID_PAYLOAD, "payload must carry an EIP-3009 authorization and its signature", payer
            )
        try:
            auth = wire.Authorization(
                from_=str(raw_auth["from"]),
                to=str(raw_auth["to"]),
                value=int(raw_auth["value"]),
                valid_after=int(raw_auth["validAfter"]),
                valid_before=int(raw_auth["validBefore"]),
                nonce=str(raw_auth["nonce"]).lower(),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise _Refused(wire.INVALID_PAYLOAD, f"malformed authorization: {exc}", payer) from None
        if len(auth.nonce) != 66 or len(auth.from_) != 42 or len(auth.to) != 42:
            raise _Refused(wire.INVALID_PAYLOAD, "malformed authorization address or nonce", payer)
        try:
            payer = verify_authorization(
                self.network,
                auth,
                inner["signature"],
                pay_to=req.pay_to,
                amount_micro=int(req.amount),
                now=int(time.time()),
            )
        except wire.PaymentError as exc:
            raise _Refused(exc.reason, exc.message, payer) from None
        except ValueError as exc:  # a non-hex field reaching the digest
            raise _Refused(wire.INVALID_PAYLOAD, str(exc), payer) from None
        if (payer.lower(), auth.nonce) in self.used_nonces:
            raise _Refused(wire.ERR_NONCE_ALREADY_USED, "this authorization was already used", payer)
        if self.balance(payer) < auth.value:
            raise _Refused(
                wire.ERR_INSUFFICIENT_BALANCE, f"{payer} holds {self.balance(payer)}, needs {auth.value}", payer
            )
        return payer, auth, inner["signature"]

    # -- endpoints -----------------------------------------------------------------
    def verify(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(("verify", body))
        try:
            request = VerifyRequest.model_validate(body)
        except ValidationError as exc:
            return 400, {"isValid": False, "invalidReason": wire.INVALID_PAYLOAD, "invalidMessage": str(exc)}
        try:
            payer, _, _ = self._check(request)
        except _Refused as exc:
            return 200, {
                "isValid": False,
                "invalidReason": exc.reason,
                "invalidMessage": exc.message,
                "payer": exc.payer,
            }
        return 200, {"isValid": True, "payer": payer}

    async def settle(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(("settle", body))
        try:
            try:
                request = SettleRequest.model_validate(body)
            except ValidationError as exc:
                return 400, self._settle_failure(wire.INVALID_PAYLOAD, str(exc), None)
            if self.settle_mode == "hang":
                await self._release.wait()
            if self.settle_mode == "fail":
                return 200, self._settle_failure(self.fail_reason, "the transfer was not mined", None)
            try:
                payer, auth, _ = self._check(request)
            except _Refused as exc:
                return 200, self._settle_failure(exc.reason, exc.message, exc.payer)
            # From the checks to here nothing awaits: one settlement per nonce.
            self.used_nonces.add((payer.lower(), auth.nonce))
            self.balances[payer.lower()] = self.balance(payer) - auth.value
            self.fund(auth.to, auth.value)
            tx = "0x" + keccak(b"facilitator-tx" + authorization_digest(self.network, auth)).hex()
            self.transactions.append(
                {
                    "transaction": tx,
                    "from": payer,
                    "to": auth.to,
                    "value": auth.value,
                    "nonce": auth.nonce,
                    "block": len(self.transactions) + 1,
                }
            )
            return 200, {
                "success": True,
                "transaction": tx,
                "network": self.network.caip2,
                "payer": payer,
                "amount": str(auth.value),
            }
        finally:
            self.settle_finished.set()

    def _settle_failure(self, reason: str, message: str, payer: str | None) -> dict[str, Any]:
        return {
            "success": False,
            "errorReason": reason,
            "errorMessage": message,
            "payer": payer,
            "transaction": "",
            "network": self.network.caip2,
        }

    def rpc(self, body: dict[str, Any]) -> dict[str, Any]:
        """Ethereum JSON-RPC, as much of it as a settlement lookup needs."""
        self.requests.append(("rpc", body))
        method, params = body.get("method"), body.get("params") or []

        def answer(result: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": body.get("id"), "result": result}

        head = len(self.transactions)
        if method == "eth_chainId":
            return answer(hex(self.network.chain_id))
        if method == "eth_blockNumber":
            return answer(hex(head))
        if method == "eth_call":
            call = params[0]
            data = str(call.get("data", "")).lower()
            if str(call.get("to", "")).lower() != self.network.asset.lower() or not data.startswith(
                "0x" + AUTHORIZATION_STATE_SELECTOR
            ):
                return {
                    "jsonrpc": "2.0",
                    "id": body.get("id"),
                    "error": {"code": -32000, "message": "execution reverted"},
                }
            who, nonce = "0x" + data[10 + 24 : 10 + 64], "0x" + data[10 + 64 : 10 + 128]
            return answer("0x" + ("1" if (who, nonce) in self.used_nonces else "0").rjust(64, "0"))
        if method == "eth_getLogs":
            query = params[0]
            topic, who_word, nonce = (query.get("topics") or [None, None, None])[:3]
            first = int(str(query.get("fromBlock", "0x0")), 16)
            logs = [
                {
                    "address": self.network.asset,
                    "transactionHash": t["transaction"],
                    "blockNumber": hex(t["block"]),
                    "topics": [AUTHORIZATION_USED_TOPIC, "0x" + t["from"].lower()[2:].rjust(64, "0"), t["nonce"]],
                }
                for t in self.transactions
                if t["block"] >= first
                and topic == AUTHORIZATION_USED_TOPIC
                and who_word == "0x" + t["from"].lower()[2:].rjust(64, "0")
                and nonce == t["nonce"]
            ]
            return answer(logs)
        return {
            "jsonrpc": "2.0",
            "id": body.get("id"),
            "error": {"code": -32601, "message": f"method {method} not served here"},
        }

    def supported(self) -> dict[str, Any]:
        self.requests.append(("supported", {}))
        return {
            "kinds": [{"x402Version": wire.X402_VERSION, "scheme": wire.SCHEME_EXACT, "network": self.network.caip2}],
            "extensions": [],
            "signers": {"eip155:*": [self.signer]},
        }

    def _build_app(self) -> Litestar:
        async def json_object(request: Request) -> dict[str, Any] | None:
            try:
                data = msgspec.json.decode(await request.body())
            except msgspec.DecodeError:
                return None
            return data if isinstance(data, dict) else None

        @post("/verify", status_code=200)
        async def verify(request: Request) -> Response:
            data = await json_object(request)
            if data is None:
                return Response(
                    {
                        "isValid": False,
                        "invalidReason": wire.INVALID_PAYLOAD,
                        "invalidMessage": "body must be a JSON object",
                    },
                    status_code=400,
                )
            status, body = self.verify(data)
            return Response(body, status_code=status)

        @post("/settle", status_code=200)
        async def settle(request: Request) -> Response:
            data = await json_object(request)
            if data is None:
                return Response(
                    self._settle_failure(wire.INVALID_PAYLOAD, "body must be a JSON object", None), status_code=400
                )
            status, body = await self.settle(data)
            return Response(body, status_code=status)

        @get("/supported")
        async def supported() -> dict[str, Any]:
            return self.supported()

        @post("/rpc", status_code=200)
        async def rpc(request: Request) -> Response:
            data = await json_object(request)
            if data is None:
                return Response(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}, status_code=200
                )
            return Response(self.rpc(data), status_code=200)

        return Litestar(route_handlers=[verify, settle, supported, rpc])


@contextlib.asynccontextmanager
async def running_facilitator(network: str = "base-sepolia") -> AsyncIterator[Facilitator]:
    """A `Facilitator` served on 127.0.0.1; its `url` is set. Hanging settles are released on exit."""
    facilitator = Facilitator(network)
    try:
        async with serve_app(facilitator.app) as url:
            facilitator.url = url
            try:
                yield facilitator
            finally:
                facilitator.release()
    finally:
        facilitator.release()


__all__ = ["Facilitator", "running_facilitator"]
