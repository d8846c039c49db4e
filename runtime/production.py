"""What a real network (`base-sepolia`, `base`) requires of the settings before a process
starts: every refusal names its setting in one line (docs/deploy.md, "Settings that must
be set"). On the local test network nothing here applies; there the missing secrets are
generated into TOLLWAY_HOME, and nowhere else."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

LOCAL_NETWORK = "local"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


@dataclasses.dataclass(frozen=True)
class Refusal:
    """One setting that stops a process from starting, and why."""

    setting: str
    message: str

    def __str__(self) -> str:
        return self.message


def _is_http_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def malformed_settings(env: Mapping[str, str]) -> list[Refusal]:
    """Values that are set but cannot be right, on any network."""
    found: list[Refusal] = []
    pay_to = (env.get("TOLLWAY_PAY_TO") or "").strip()
    if pay_to and not _ADDRESS.fullmatch(pay_to):
        found.append(Refusal("TOLLWAY_PAY_TO", "TOLLWAY_PAY_TO must be an address: 0x and 40 hexadecimal digits"))
    seed = (env.get("TOLLWAY_RECEIPT_KEY") or "").strip()
    if seed:
        try:
            ok = len(base64.b64decode(seed, validate=True)) == 32
        except (binascii.Error, ValueError):
            ok = False
        if not ok:
            found.append(Refusal("TOLLWAY_RECEIPT_KEY", "TOLLWAY_RECEIPT_KEY must be base64 of a 32-byte Ed25519 seed"))
    for name in ("TOLLWAY_FACILITATOR_URL", "TOLLWAY_CHAIN_RPC_URL"):
        value = (env.get(name) or "").strip()
        if value and not _is_http_url(value):
            found.append(Refusal(name, f"{name} must be an http:// or https:// URL"))
    return found


def production_refusals(env: Mapping[str, str]) -> list[Refusal]:
    """What a real network lacks: settings that on the local network would be generated
    or are not needed. Empty on the local network."""
    network = env.get("TOLLWAY_NETWORK") or LOCAL_NETWORK
    if network == LOCAL_NETWORK:
        return []
    found: list[Refusal] = []

    def missing(name: str, why: str) -> None:
        if not (env.get(name) or "").strip():
            found.append(Refusal(name, f"{name} is not set: {why} (network {network})"))

    missing(
        "TOLLWAY_PAY_TO",
        "quotes would ask agents to pay a wallet generated into this machine's TOLLWAY_HOME; "
        "set the address you receive USDC at",
    )
    missing("TOLLWAY_FACILITATOR_URL", "payments on a real network are verified and settled by an x402 facilitator")
    if network == "base":
        missing(
            "TOLLWAY_CHAIN_RPC_URL",
            "with real money the reconciler must read a settlement's fate from the chain (any Base JSON-RPC endpoint)",
        )
    missing(
        "TOLLWAY_RECEIPT_KEY",
        "receipts would be signed with a key generated into this machine's TOLLWAY_HOME, "
        "which no other machine shares and a lost disk takes with it",
    )
    missing(
        "TOLLWAY_OPERATOR_TOKEN",
        "a token generated into this machine's TOLLWAY_HOME is not the one the other machines accept",
    )
    return found


def layout_refusal(env: Mapping[str, str], database_url: str, *, processes: int, role: str) -> Refusal | None:
    """Several processes on the embedded SQLite file: each would hold its own lock on
    one machine's disk, so a real network wants PostgreSQL for them."""
    network = env.get("TOLLWAY_NETWORK") or LOCAL_NETWORK
    if network == LOCAL_NETWORK or not database_url.startswith("sqlite"):
        return None
    if role == "worker":
        what = "`tollway worker` runs beside the API processes"
    elif processes > 1:
        what = f"--processes {processes} runs several API processes"
    else:
        return None
    return Refusal(
        "TOLLWAY_DATABASE_URL",
        f"TOLLWAY_DATABASE_URL is the embedded SQLite file: {what}, which on network {network} "
        "must share one PostgreSQL (postgres://…)",
    )


__all__ = ["Refusal", "layout_refusal", "malformed_settings", "production_refusals"]
