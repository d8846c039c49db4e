"""The paid-call bench's anchors: a bare Litestar endpoint, the x402 SDK's own paid endpoint
over an in-memory facilitator, and the floor of the signature work a paid call needs."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from typing import Any

from paid_server import HONDA

PATH = "/lookup"
PRICE_MICRO = 5000  # the vehicle recall lookup's price, 0.005 USDC
SDK_PAY_TO = "0x2222222222222222222222222222222222222222"
SDK_PAYER_ENV = "BENCH_SDK_PAYER"  # the address the SDK server's in-memory chain funds at start
FACILITATOR = "0x1111111111111111111111111111111111111111"

# What both anchor endpoints answer: the recorded NHTSA answer in an envelope like the
# service's, about the size of a paid lookup's response (~2.7 kB).
ANSWER: dict[str, Any] = {
    "data": {
        "request_id": "req_00000000000000000000",
        "receipt_id": "rcpt_0000000000000000000",
        "status": "completed",
        "tool": "vehicle_recalls",
        "result": json.loads(HONDA.read_bytes()),
    }
}


# ---------------------------------------------------------------- the bare framework


def framework_app() -> Any:
    """One POST endpoint on Litestar, the framework under the service: decode a small JSON
    body, answer ANSWER."""
    from litestar import Litestar, post

    @post(PATH, status_code=200)
    async def lookup(data: dict[str, Any]) -> dict[str, Any]:
        return ANSWER

    return Litestar([lookup])


# ---------------------------------------------------------------- the x402 SDK's server


class MemoryChain:
    """The facilitator signer the SDK's exact-EVM scheme calls, over an in-memory USDC:
    balances and used nonces in dicts, `transferWithAuthorization` checked (validity
    window, nonce, balance) and booked, its receipt carrying the Transfer event the
    scheme checks. (The scheme recovers a plain wallet's signature itself; a signature
    handed to `verify_typed_data` is recovered here.)"""

    TRANSFER = "transferWithAuthorization"

    def __init__(self, token: str, chain_id: int, funded: dict[str, int]) -> None:
        self.token = token.lower()
        self.chain_id = chain_id
        self.balances = {address.lower(): micro for address, micro in funded.items()}
        self.used: set[tuple[str, bytes]] = set()
        self.receipts: dict[str, Any] = {}
        self.block = 0

    def get_addresses(self) -> list[str]:
        return [FACILITATOR]

    def get_chain_id(self) -> int:
        return self.chain_id

    def get_code(self, address: str) -> bytes:
        return b"\x60\x80" if address.lower() == self.token else b""  # the token is the one contract

    def get_balance(self, address: str, token_address: str) -> int:
        return self.balances.get(address.lower(), 0) if token_address.lower() == self.token else 0

    def verify_typed_data(
        self,
        address: str,
        domain: Any,
        types: dict[str, list[Any]],
        primary_type: str,
        message: dict[str, Any],
        signature: bytes,
    ) -> bool:
        from x402.mechanisms.evm.eip712 import hash_typed_data
        from x402.mechanisms.evm.verify import verify_eoa_signature

        fields = {
            name: [{"name": f.name, "type": f.type} if not isinstance(f, dict) else f for f in fs]
            for name, fs in types.items()
        }
        return verify_eoa_signature(hash_typed_data(domain, fields, primary_type, message), signature, address)

    def _check(
        self, from_: str, to: str, value: int, valid_after: int, valid_before: int, nonce: bytes, *_sig: Any
    ) -> None:
        now = time.time()
        if now <= valid_after:
            raise RuntimeError("execution reverted: FiatTokenV2: authorization is not yet valid")
        if now >= valid_before:
            raise RuntimeError("execution reverted: FiatTokenV2: authorization is expired")
        if (from_.lower(), bytes(nonce)) in self.used:
            raise RuntimeError("execution reverted: FiatTokenV2: authorization is used or canceled")
        if self.balances.get(from_.lower(), 0) < value:
            raise RuntimeError("execution reverted: ERC20: transfer amount exceeds balance")

    def read_contract(self, address: str, abi: Any, function_name: str, *args: Any) -> Any:
        if address.lower() != self.token:
            raise RuntimeError("execution reverted: no contract at " + address)
        if function_name == self.TRANSFER:  # the simulation before a payment is accepted
            self._check(*args)
            return None
        if function_name == "balanceOf":
            return self.balances.get(args[0].lower(), 0)
        if function_name == "authorizationState":
            return (args[0].lower(), bytes(args[1])) in self.used
        if function_name in ("name", "version"):
            return {"name": "USDC", "version": "2"}[function_name]
        raise RuntimeError(f"execution reverted: {function_name} is not modelled")

    def write_contract(
        self, address: str, abi: Any, function_name: str, *args: Any, data_suffix: str | None = None
    ) -> str:
        if address.lower() != self.token or function_name != self.TRANSFER:
            raise RuntimeError(f"execution reverted: {function_name} is not modelled")
        self._check(*args)
        from_, to, value, nonce = args[0].lower(), args[1].lower(), int(args[2]), bytes(args[5])
        self.used.add((from_, nonce))
        self.balances[from_] -= value
        self.balances[to] = self.balances.get(to, 0) + value
        self.block += 1
        tx = "0x" + hashlib.sha256(from_.encode() + nonce).hexdigest()
        self.receipts[tx] = self._receipt(tx, from_, to, value)
        return tx

    def _receipt(self, tx: str, from_: str, to: str, value: int) -> Any:
        from x402.mechanisms.evm.exact.eip3009_utils import ERC20_TRANSFER_EVENT_TOPIC
        from x402.mechanisms.evm.types import TransactionReceipt

        def word(address: str) -> str:
            return "0x" + "00" * 12 + address[2:]

        log = {
            "address": self.token,
            "topics": [ERC20_TRANSFER_EVENT_TOPIC, word(from_), word(to)],
            "data": "0x" + f"{value:064x}",
        }
        return TransactionReceipt(status=1, block_number=self.block, tx_hash=tx, logs=[log])

    def send_transaction(self, to: str, data: bytes) -> str:
        raise RuntimeError("no smart-wallet deployments on this chain")

    def wait_for_transaction_receipt(self, tx_hash: str) -> Any:
        return self.receipts.pop(tx_hash)


def sdk_app() -> Any:
    """The official x402 SDK's resource server: its FastAPI middleware protecting one POST
    endpoint priced like the lookup (exact scheme, the local network's USDC and EIP-712
    domain), settled by the SDK's facilitator with its exact-EVM scheme over MemoryChain."""
    from fastapi import FastAPI
    from x402 import x402Facilitator, x402ResourceServer
    from x402.http.middleware.fastapi import payment_middleware
    from x402.http.types import PaymentOption, RouteConfig
    from x402.mechanisms.evm.exact import ExactEvmFacilitatorScheme, ExactEvmServerScheme

    from tollway._core.payments.networks import get_network

    network = get_network("local")
    chain = MemoryChain(network.asset, network.chain_id, {os.environ[SDK_PAYER_ENV]: 10**15})
    facilitator = x402Facilitator()
    facilitator.register([network.caip2], ExactEvmFacilitatorScheme(chain))
    server = x402ResourceServer(facilitator)
    server.register(network.caip2, ExactEvmServerScheme())
    price = {
        "amount": str(PRICE_MICRO),
        "asset": network.asset,
        "extra": {"name": network.eip712_name, "version": network.eip712_version},
    }
    routes = {
        f"POST {PATH}": RouteConfig(
            accepts=PaymentOption(scheme="exact", pay_to=SDK_PAY_TO, price=price, network=network.caip2)
        )
    }
    pay = payment_middleware(routes, server)

    app = FastAPI()

    @app.middleware("http")
    async def x402(request: Any, call_next: Any) -> Any:
        return await pay(request, call_next)

    @app.post(PATH)
    async def lookup(body: dict[str, Any]) -> dict[str, Any]:
        return ANSWER

    return app


def sdk_payments(payer: Any, required: dict[str, Any], resource: dict[str, Any] | None, count: int) -> list[str]:
    """`count` PAYMENT-SIGNATURE headers for the SDK server's 402 `required`, signed ahead."""
    from tollway._core.payments.eip3009 import make_payment_header, sign_authorization
    from tollway._core.payments.networks import get_network

    network = get_network("local")
    now = int(time.time())
    headers = []
    for _ in range(count):
        auth, sig = sign_authorization(
            payer,
            network,
            to=required["payTo"],
            value=int(required["amount"]),
            valid_after=now - 10,
            valid_before=now + 3600,
        )
        headers.append(make_payment_header(network, required, auth, sig, resource=resource))
    return headers


def payment_required(header: str) -> dict[str, Any]:
    return json.loads(base64.b64decode(header))


# ---------------------------------------------------------------- the crypto floor


def crypto_floor(iterations: int = 3000) -> float:
    """Iterations per second of one paid call's signature work, in this process: hash the
    authorization to its EIP-712 digest, recover the secp256k1 key (coincurve) and its
    address (keccak), hash a 600-byte receipt (SHA-256) and sign the digest (Ed25519,
    PyNaCl), as receipts are signed."""
    from coincurve import PublicKey
    from eth_account import Account
    from eth_utils import keccak
    from nacl.signing import SigningKey

    from tollway._core.payments.eip3009 import authorization_digest, sign_authorization
    from tollway._core.payments.networks import get_network

    network = get_network("local")
    payer = Account.from_key(b"\x01" * 32)
    auth, sig = sign_authorization(payer, network, to=SDK_PAY_TO, value=PRICE_MICRO, valid_after=0, valid_before=2**40)
    digest = authorization_digest(network, auth)
    raw = bytes.fromhex(sig[2:])
    recoverable = raw[:64] + bytes([raw[64] - 27])  # coincurve wants the recovery id 0/1
    recovered = PublicKey.from_signature_and_message(recoverable, digest, hasher=None).format(compressed=False)
    assert "0x" + keccak(recovered[1:])[-20:].hex() == payer.address.lower(), "the recovery check failed"
    key = SigningKey(b"\x07" * 32)
    receipt = json.dumps({**ANSWER["data"], "result": {"recalls": ANSWER["data"]["result"]["results"][:1]}})[
        :600
    ].encode()
    assert len(receipt) == 600
    start = time.perf_counter()
    for _ in range(iterations):
        point = PublicKey.from_signature_and_message(recoverable, authorization_digest(network, auth), hasher=None)
        keccak(point.format(compressed=False)[1:])
        key.sign(hashlib.sha256(receipt).digest())
    return iterations / (time.perf_counter() - start)
