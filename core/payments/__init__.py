"""x402 payments: wire format, EIP-3009 verification, quotes, the gateway that
runs the verify-reserve-settle sequence, and settlement backends."""
