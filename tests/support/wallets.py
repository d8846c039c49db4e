"""Money on the local test network for the tests' wallets (the operator's chain fund route)."""

from __future__ import annotations

from typing import Any

OPERATOR = {"Authorization": "Bearer test-operator-token"}


async def fund(client: Any, address: str, amount: str) -> None:
    """Give `address` `amount` USDC on the local network."""
    resp = await client.post(
        "/v1/tools/internal/chain/fund", json={"address": address, "amount": amount}, headers=OPERATOR
    )
    assert resp.status_code == 200, resp.text
