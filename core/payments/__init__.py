"""x402 payments: wire format, EIP-3009 verification, quotes, the gateway that
runs the verify-reserve-settle sequence, and settlement backends."""

# The modules other areas, the runtime and the fronts may import; the rest are this area's own.
PUBLIC_MODULES = (
    "eip3009",
    "facilitator",
    "gateway",
    "migrations",
    "networks",
    "paid_settlement",
    "settlement",
    "tables",
    "x402",
)
