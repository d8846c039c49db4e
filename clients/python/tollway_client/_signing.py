"""What a wallet signs: the x402 payment a 402 asks for (an EIP-3009 TransferWithAuthorization
of USDC, EIP-712) and the agent proof (`X-Agent-Proof`) that lets it spend its credits."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any

from eth_account import Account

TRANSFER_WITH_AUTHORIZATION = {
    "TransferWithAuthorization": [
        {"name": "from", "type": "address"},
        {"name": "to", "type": "address"},
        {"name": "value", "type": "uint256"},
        {"name": "validAfter", "type": "uint256"},
        {"name": "validBefore", "type": "uint256"},
        {"name": "nonce", "type": "bytes32"},
    ]
}
AGENT_PROOF = {
    "AgentProof": [
        {"name": "agent", "type": "address"},
        {"name": "scope", "type": "string"},
        {"name": "method", "type": "string"},
        {"name": "path", "type": "string"},
        {"name": "bodyHash", "type": "bytes32"},
        {"name": "issuedAt", "type": "uint64"},
        {"name": "expiresAt", "type": "uint64"},
        {"name": "nonce", "type": "bytes32"},
    ]
}


def _hex(signature: Any) -> str:
    text = signature.hex() if hasattr(signature, "hex") else str(signature)
    return text if text.startswith("0x") else "0x" + text


def decode_payment_required(header: str) -> dict[str, Any]:
    """The x402 `PAYMENT-REQUIRED` header: base64 JSON `{x402Version, accepts: [requirements]}`."""
    return json.loads(base64.b64decode(header))


def chain_id(network: str) -> int:
    """84532 from "eip155:84532"."""
    return int(network.split(":", 1)[1])


def sign_payment(account: Any, requirements: dict[str, Any], *, valid_for_s: int = 300) -> str:
    """The x402 v2 payment header value for one requirement of a 402 (`accepts[0]`): an EIP-3009
    authorization of exactly `amount` to `payTo`, valid from a little before now."""
    now = int(time.time())
    nonce = "0x" + secrets.token_hex(32)
    auth = {
        "from": account.address,
        "to": requirements["payTo"],
        "value": int(requirements["amount"]),
        "validAfter": now - 5,
        "validBefore": now + max(valid_for_s, 30),
        "nonce": nonce,
    }
    extra = requirements.get("extra") or {}
    signed = Account.sign_typed_data(
        account.key,
        domain_data={
            "name": extra.get("name", "USDC"),
            "version": extra.get("version", "2"),
            "chainId": chain_id(requirements["network"]),
            "verifyingContract": requirements["asset"],
        },
        message_types=TRANSFER_WITH_AUTHORIZATION,
        message_data={**auth, "nonce": bytes.fromhex(nonce[2:])},
    )
    payload = {
        "x402Version": 2,
        "accepted": requirements,
        "payload": {"signature": _hex(signed.signature), "authorization": {k: str(v) for k, v in auth.items()}},
    }
    return base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()


def agent_proof(account: Any, *, chain: int, scope: str, method: str, path: str, body: bytes = b"") -> str:
    """An `X-Agent-Proof` for one request (`path` without the query): base64url JSON of the
    EIP-712 AgentProof message and its signature, valid 120 s, with a fresh nonce."""
    issued = int(time.time())
    message = {
        "agent": account.address,
        "scope": scope,
        "method": method.upper(),
        "path": path,
        "bodyHash": "0x" + hashlib.sha256(body).hexdigest(),
        "issuedAt": issued,
        "expiresAt": issued + 120,
        "nonce": "0x" + secrets.token_hex(32),
    }
    signed = Account.sign_typed_data(
        account.key,
        domain_data={"name": "Tollway", "version": "1", "chainId": chain},
        message_types=AGENT_PROOF,
        message_data=message,
    )
    envelope = {"message": message, "signature": _hex(signed.signature)}
    raw = json.dumps(envelope, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
