"""The souls plugin's settings (TOLLWAY_SOULS_*)."""

from __future__ import annotations

from tollway import Setting

FAMILY = "souls"
FEE_PERCENT = Setting(
    FAMILY,
    "fee_percent",
    "20",
    "The service's fee on each sale, in whole percent of the price (the seller is credited the rest): 0 to 100.",
)
EXPIRY_INTERVAL_S = Setting(FAMILY, "expiry_interval_s", "60", "How often orders past their deadline are refunded.")

SETTINGS = (FEE_PERCENT, EXPIRY_INTERVAL_S)


def fee_percent(settings: dict[str, str] | None) -> int:
    raw = ((settings or {}).get(FEE_PERCENT.name) or FEE_PERCENT.default or "20").strip()
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{FEE_PERCENT.env_var} must be a whole number of percent") from None
    if not 0 <= value <= 100:
        raise ValueError(f"{FEE_PERCENT.env_var} must be from 0 to 100")
    return value


def split(price: int, percent: int) -> tuple[int, int]:
    """(the seller's share, the service's fee) of `price` micro-USDC: the fee rounds down,
    so the two add up to the price exactly."""
    fee = price * percent // 100
    return price - fee, fee
