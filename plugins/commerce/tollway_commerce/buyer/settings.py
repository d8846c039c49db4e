"""The buyer side's settings (family `commerce`, the seller side's family too: every name
here starts with a word the seller's do not use) and the prices of its two tools."""

from __future__ import annotations

from collections.abc import Mapping

from tollway import Setting, to_micro

FAMILY = "commerce"

SEARCH_PRICE = "0.01"  # USDC per commerce_search call (the contract shows none: docs/commerce.md)

BUY_FEE = Setting(
    FAMILY,
    "buy_fee_usdc",
    "0.25",
    "The service fee of one commerce_buy, in USDC, charged with max_total_usdc and never returned "
    "unless the checkout fails.",
)
BUY_MAX_TOTAL = Setting(
    FAMILY,
    "buy_max_total_usdc",
    "1000",
    "The largest max_total_usdc an agent may name in one commerce_buy (USDC).",
)
FX_RATES = Setting(
    FAMILY,
    "fx_rates",
    "",
    "USDC per one major unit of each non-USD currency merchants price in, e.g. `eur=1.0825,gbp=1.27`. "
    "USD is 1:1. A currency not listed has no USDC equivalent: search shows it without one and buy refuses it.",
)
FEED_INTERVAL_S = Setting(
    FAMILY,
    "feed_interval_s",
    "900",
    "Seconds between two reads of each merchant's product feed (the periodic task runs every 30 s "
    "and reads the feeds that are due).",
)
TOKEN_TTL_S = Setting(
    FAMILY,
    "token_ttl_s",
    "900",
    "Seconds a delegated payment token minted for one checkout stays usable.",
)

BUY_RECHECK_S = Setting(
    FAMILY,
    "buy_recheck_s",
    "30",
    "Seconds before a commerce_buy whose merchant left the payment's outcome unknown (its answer to "
    "complete lost) asks it again; each later wait is half the time waited so far, at most "
    "TOLLWAY_COMMERCE_BUY_RECHECK_MAX_S.",
)
BUY_RECHECK_MAX_S = Setting(
    FAMILY, "buy_recheck_max_s", "1800", "The longest wait (seconds) between two asks of a merchant about a payment."
)
BUY_OUTCOME_WAIT_S = Setting(
    FAMILY,
    "buy_outcome_wait_s",
    "86400",
    "How long (seconds, from the first complete) a merchant is asked again about a payment whose outcome it "
    "left unknown before the order is held for the operator (`outcome_unknown`: neither refunded nor settled). "
    "The default is the 24 hours ACP merchants keep an Idempotency-Key's answer.",
)

SETTINGS = (
    BUY_FEE,
    BUY_MAX_TOTAL,
    FX_RATES,
    FEED_INTERVAL_S,
    TOKEN_TTL_S,
    BUY_RECHECK_S,
    BUY_RECHECK_MAX_S,
    BUY_OUTCOME_WAIT_S,
)


def value(settings: Mapping[str, str], setting: Setting) -> str:
    raw = settings.get(setting.name)
    return raw.strip() if raw is not None and raw.strip() else (setting.default or "")


def buy_fee(settings: Mapping[str, str]) -> int:
    return to_micro(value(settings, BUY_FEE))


def max_total_ceiling(settings: Mapping[str, str]) -> int:
    return to_micro(value(settings, BUY_MAX_TOTAL))


def feed_interval_ms(settings: Mapping[str, str]) -> int:
    return int(float(value(settings, FEED_INTERVAL_S)) * 1000)


def token_ttl_s(settings: Mapping[str, str]) -> int:
    return int(value(settings, TOKEN_TTL_S))


def recheck_after_s(settings: Mapping[str, str], waited_s: float) -> float:
    """How long to wait before asking a merchant again, `waited_s` after the first complete:
    the first wait, then half the time waited so far (the waits grow by half each time), capped."""
    first = float(value(settings, BUY_RECHECK_S))
    return min(max(first, waited_s / 2), float(value(settings, BUY_RECHECK_MAX_S)))


def outcome_wait_s(settings: Mapping[str, str]) -> float:
    return float(value(settings, BUY_OUTCOME_WAIT_S))
