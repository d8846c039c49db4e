"""Numbers in solve requests: the magnitude and precision rules of docs/solve.md, and the
exact decimal scaling that turns input numbers into CP-SAT integers."""

from __future__ import annotations

import math
from decimal import Decimal

from .family import InputProblem

MAX_MAGNITUDE = 1e12
MAX_DECIMALS = 6
INT_SAFE = 2**62  # sums CP-SAT builds must stay below this


def dec(x: float) -> Decimal:
    """The decimal the client wrote (shortest repr of the float)."""
    return Decimal(x) if isinstance(x, int) else Decimal(repr(float(x)))


def decimals(x: float) -> int:
    if isinstance(x, int) or float(x).is_integer():
        return 0
    return max(0, -dec(x).normalize().as_tuple().exponent)  # type: ignore[operator]


def check_number(x: float, field: str, *, limit: float = MAX_MAGNITUDE) -> None:
    if isinstance(x, float) and not math.isfinite(x):
        raise InputProblem("non_finite", "must be a finite number", field)
    if x < 0:
        raise InputProblem("negative_value", "must not be negative", field)
    if x > limit:
        raise InputProblem("magnitude_too_large", f"must be at most {limit:g}", field)
    if decimals(x) > MAX_DECIMALS:
        raise InputProblem("unsupported_precision", f"at most {MAX_DECIMALS} decimal places are supported", field)


def scale_for(values: list[float | int]) -> int:
    """The power of ten that makes every value an integer (at most MAX_DECIMALS)."""
    return max((decimals(v) for v in values), default=0)


def scaled(x: float, d: int) -> int:
    return int(dec(x).scaleb(d))


def unscale(n: int, d: int) -> float:
    return float(Decimal(n).scaleb(-d))
