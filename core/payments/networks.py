"""The EVM networks Tollway takes x402 payments on: chain id, USDC contract and
its EIP-712 domain name/version."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Network:
    name: str
    chain_id: int
    asset: str  # USDC contract, checksummed
    eip712_name: str
    eip712_version: str

    @property
    def caip2(self) -> str:
        return f"eip155:{self.chain_id}"


_BASE_SEPOLIA_USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"

NETWORKS: dict[str, Network] = {
    # `local` settles on the embedded ledger but signs exactly like Base Sepolia,
    # so any real x402 client configured for Base Sepolia can pay it.
    "local": Network("local", 84532, _BASE_SEPOLIA_USDC, "USDC", "2"),
    "base-sepolia": Network("base-sepolia", 84532, _BASE_SEPOLIA_USDC, "USDC", "2"),
    "base": Network("base", 8453, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USD Coin", "2"),
}


def get_network(name: str) -> Network:
    try:
        return NETWORKS[name]
    except KeyError:
        raise ValueError(f"unknown network {name!r} (known: {', '.join(sorted(NETWORKS))})") from None
