"""The settings every process of one deployment must share, compared through the database.

Each process records at start a fingerprint of each shared setting (a salted hash of a
secret, the public half of a key, an address as it is) with its host. A process whose
fingerprint differs from the one another process recorded logs which setting differs;
`tollway doctor` reports it as something to fix. A rotation (every process given the new
value, then restarted) looks the same while it runs and ends when the last one restarts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import socket

from tollway._core.auth.tables import SharedSetting
from tollway._core.basics.ids import now_ms
from tollway._core.config import KernelConfig

log = logging.getLogger("tollway.settings")

OPERATOR_TOKEN = "TOLLWAY_OPERATOR_TOKEN"
RECEIPT_KEY = "TOLLWAY_RECEIPT_KEY"


@dataclasses.dataclass(frozen=True)
class Difference:
    """A shared setting this process holds differently from the last process that recorded it."""

    setting: str
    ours: str
    theirs: str
    host: str
    recorded_ms: int


def fingerprints(
    *, network: str, pay_to: str, operator_token: str, receipt_key_id: str, payout_address: str | None
) -> dict[str, str]:
    """What is compared, by setting name; a secret appears only as a salted hash."""
    token = hashlib.sha256(f"tollway-shared-setting:{operator_token}".encode()).hexdigest()[:32]
    return {
        "TOLLWAY_NETWORK": network,
        "TOLLWAY_PAY_TO": pay_to.lower(),
        OPERATOR_TOKEN: f"sha256:{token}",
        RECEIPT_KEY: receipt_key_id,
        "TOLLWAY_PAYOUT_KEY": (payout_address or "none").lower(),
    }


def for_config(config: KernelConfig, receipt_key_id: str) -> dict[str, str]:
    """The fingerprints of a kernel's configuration, its receipts signed by `receipt_key_id`."""
    payout = None
    if config.payout_key:
        from eth_account import Account

        payout = Account.from_key(config.payout_key).address
    return fingerprints(
        network=config.network,
        pay_to=config.pay_to,
        operator_token=config.operator_token,
        receipt_key_id=receipt_key_id,
        payout_address=payout,
    )


def this_host() -> str:
    return f"{socket.gethostname()} (pid {os.getpid()})"


async def compare(ours: dict[str, str]) -> list[Difference]:
    """The shared settings whose last recorded fingerprint is not ours."""
    rows = await SharedSetting.select().where(SharedSetting.name.is_in(list(ours)))
    return [
        Difference(r["name"], ours[r["name"]], r["fingerprint"], r["host"], r["recorded_ms"])
        for r in rows
        if r["fingerprint"] != ours[r["name"]]
    ]


async def record(ours: dict[str, str], host: str | None = None) -> list[Difference]:
    """Record `ours` as the latest, returning how it differs from what was recorded before
    (each difference is logged as a warning)."""
    differences = await compare(ours)
    when, host = now_ms(), host or this_host()
    await SharedSetting.insert(
        *(SharedSetting(name=n, fingerprint=f, host=host, recorded_ms=when) for n, f in ours.items())
    ).on_conflict(
        target=SharedSetting.name,
        action="DO UPDATE",
        values=[SharedSetting.fingerprint, SharedSetting.host, SharedSetting.recorded_ms],
    )
    for d in differences:
        log.warning(
            "%s differs from the one %s started with: every process of a deployment must share it "
            "(a rotation in progress ends when the last process restarts with the new value)",
            d.setting,
            d.host,
        )
    return differences


__all__ = ["Difference", "compare", "fingerprints", "for_config", "record", "this_host"]
