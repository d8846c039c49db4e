"""The commerce plugin's settings (`TOLLWAY_COMMERCE_*`)."""

from __future__ import annotations

from collections.abc import Mapping

from tollway import Setting

FAMILY = "commerce"

PUBLIC_URL = Setting(
    FAMILY,
    "public_url",
    "http://127.0.0.1:8000",
    "The service's public base URL: order permalinks and the policy links of every session start with it.",
)
CREDIT_PACKS = Setting(
    FAMILY,
    "credit_packs",
    "5,20,100",
    "The credit packs on sale, in whole US dollars, comma separated: a pack of N dollars costs N00 cents and credits N USDC.",
)
IDEMPOTENCY_TTL_S = Setting(
    FAMILY,
    "idempotency_ttl_s",
    "86400",
    "How long an Idempotency-Key's answer is kept and replayed (seconds; at least 86400, RFC §6.6).",
)
SIGNATURE_TOLERANCE_S = Setting(
    FAMILY, "signature_tolerance_s", "300", "How far a signed request's Timestamp may be from now (seconds)."
)
SESSION_TTL_S = Setting(FAMILY, "session_ttl_s", "21600", "How long a checkout session stays open (seconds).")
IN_FLIGHT_S = Setting(
    FAMILY,
    "in_flight_s",
    "60",
    "How long a complete may stay in progress before the reconciler finishes it (seconds), and how long an "
    "Idempotency-Key stays in flight before a retry may take it over.",
)
RECONCILE_INTERVAL_S = 15.0
SETTINGS = (
    PUBLIC_URL,
    CREDIT_PACKS,
    IDEMPOTENCY_TTL_S,
    SIGNATURE_TOLERANCE_S,
    SESSION_TTL_S,
    IN_FLIGHT_S,
)


def number(settings: Mapping[str, str], setting: Setting, *, low: int = 0) -> int:
    raw = (settings.get(setting.name) or setting.default or "0").strip()
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{setting.env_var} must be a whole number") from None
    return max(low, value)


def credit_packs(settings: Mapping[str, str]) -> list[int]:
    """The packs on sale, in whole dollars."""
    raw = (settings.get(CREDIT_PACKS.name) or CREDIT_PACKS.default or "").strip()
    packs = []
    for part in raw.split(","):
        part = part.strip()
        if part:
            if not part.isdigit() or not 0 < int(part) <= 10_000:
                raise ValueError(f"{CREDIT_PACKS.env_var}: {part!r} is not a whole number of dollars from 1 to 10000")
            packs.append(int(part))
    return sorted(set(packs))


def public_url(settings: Mapping[str, str]) -> str:
    return (settings.get(PUBLIC_URL.name) or PUBLIC_URL.default or "").strip().rstrip("/")
