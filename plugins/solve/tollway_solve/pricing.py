"""The price of one solve call, published in docs/solve.md:

    price (micro-USDC) = 10,000                                  # 0.01 USDC per call
                       + 1,000 * ceil(size_units / 1,000)        # 0.001 USDC per started 1,000 size units, at most 2 USDC
                       + 200 * time_limit_s                      # 0.0002 USDC per second of time cap

`size_units` is the size rule of docs/solve.md, computed by the family: allocation
items x options; packing item kinds x bins x dimensions (bins = the bins the
model may open, see docs); routing and schedule the variable estimate.
"""

from __future__ import annotations

BASE_MICRO = 10_000
PER_THOUSAND_UNITS_MICRO = 1_000
SIZE_CAP_MICRO = 2_000_000
PER_SECOND_MICRO = 200


def price_micro(size_units: int, time_limit_s: int) -> int:
    thousands = -(-max(0, int(size_units)) // 1000)
    return (
        BASE_MICRO
        + min(SIZE_CAP_MICRO, PER_THOUSAND_UNITS_MICRO * max(1, thousands))
        + PER_SECOND_MICRO * int(time_limit_s)
    )
