"""Merchant prices (integers of a currency's minor unit, as ACP sends them) and their USDC
equivalent (micro-USDC).

The rule (docs/commerce.md, "USDC equivalents"): USD is USDC 1:1; any other currency
converts at the operator's rate in TOLLWAY_COMMERCE_FX_RATES (USDC per major unit); a
currency without a rate has no equivalent (None). An equivalent is rounded UP to the
micro-USDC, so a cap compared against it is never underestimated. The minor unit's
exponent is ISO 4217's: 0 for the zero-decimal currencies below, 3 for the three-decimal
ones, 2 for every other."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from .settings import FX_RATES, value

ZERO_DECIMAL = frozenset(
    [
        "bif",
        "clp",
        "djf",
        "gnf",
        "isk",
        "jpy",
        "kmf",
        "krw",
        "pyg",
        "rwf",
        "ugx",
        "uyi",
        "vnd",
        "vuv",
        "xaf",
        "xof",
        "xpf",
    ]
)  # ISO 4217 exponent 0
THREE_DECIMAL = frozenset(["bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd"])  # ISO 4217 exponent 3
MICRO = Decimal(1_000_000)


def exponent(currency: str) -> int:
    code = currency.lower()
    return 0 if code in ZERO_DECIMAL else 3 if code in THREE_DECIMAL else 2


def rates(settings: Mapping[str, str]) -> dict[str, Decimal]:
    """USDC per major unit by lower-case currency code; `usd` is always 1. A malformed entry is ignored."""
    found: dict[str, Decimal] = {"usd": Decimal(1)}
    for part in value(settings, FX_RATES).split(","):
        code, _, rate = part.partition("=")
        code = code.strip().lower()
        if len(code) != 3 or not code.isalpha() or code == "usd":
            continue
        try:
            number = Decimal(rate.strip())
        except InvalidOperation:
            continue
        if number.is_finite() and number > 0:
            found[code] = number
    return found


def to_usdc(amount_minor: int, currency: str, table: Mapping[str, Decimal]) -> int | None:
    """`amount_minor` of `currency` in micro-USDC, rounded up; None when there is no rate."""
    rate = table.get(currency.lower())
    if rate is None:
        return None
    exact = Decimal(int(amount_minor)) * rate * MICRO / (Decimal(10) ** exponent(currency))
    whole = int(exact)
    return whole + (1 if exact > whole else 0)
