"""Exact money: integer micro-USDC inside, 6-decimal strings at the API edge.

Floats never touch an amount. Anything coming from outside (a JSON number, a
decimal string) is parsed through `Decimal` from its text form.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

MICRO = 1_000_000  # micro-USDC per USDC; USDC has 6 decimals on-chain too


class AmountError(ValueError):
    """An amount that is not a finite decimal with at most 6 decimals."""


def to_micro(value: Decimal | str | int) -> int:
    """Parse a USDC amount (decimal string, int or Decimal) into micro-USDC.

    Floats are refused: a caller that has a float has already lost precision.
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise AmountError("amount must be a decimal string or an exact number")
    try:
        d = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except (InvalidOperation, ValueError) as exc:
        raise AmountError(f"not a decimal amount: {value!r}") from exc
    if not d.is_finite():
        raise AmountError("amount must be finite")
    micro = d * MICRO
    if micro != micro.to_integral_value():
        raise AmountError("amount has more than 6 decimals")
    return int(micro)


def usdc(micro: int) -> str:
    """Format micro-USDC as the API's 6-decimal string (e.g. 5000 -> '0.005000')."""
    sign = "-" if micro < 0 else ""
    whole, frac = divmod(abs(int(micro)), MICRO)
    return f"{sign}{whole}.{frac:06d}"


def dollars(micro: int) -> Decimal:
    """Micro-USDC as an exact Decimal of dollars (for fields typed 'number')."""
    return Decimal(int(micro)) / MICRO
