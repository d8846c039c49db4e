"""The price of one predict call, published in docs/predict.md:

    price (micro-USDC) = 10,000                                  # 0.01 USDC per call
                       + 1,000 * ceil(size_units / 100,000)      # 0.001 USDC per started 100,000 size units, at most 1 USDC
                       + 200 * time_limit_s                      # 0.0002 USDC per second of time cap

`size_units` is the size rule of docs/predict.md: simulation runs x (variables + outputs);
forecast series length x horizon.
"""

from __future__ import annotations

BASE_MICRO = 10_000
UNITS_PER_STEP = 100_000
PER_STEP_MICRO = 1_000
SIZE_CAP_MICRO = 1_000_000
PER_SECOND_MICRO = 200


def price_micro(size_units: int, time_limit_s: int) -> int:
    steps = -(-max(0, int(size_units)) // UNITS_PER_STEP)
    return BASE_MICRO + min(SIZE_CAP_MICRO, PER_STEP_MICRO * max(1, steps)) + PER_SECOND_MICRO * int(time_limit_s)
