"""The kernel's contract suite (`tollway.testing.PluginContract`) run on the solve
plugin, on SQLite and on PostgreSQL.

`solve` requires an Idempotency-Key, which the generic suite does not send: its
two HTTP tests would stop at the missing key (400) instead of reaching the
input check and the quote. They are repeated here with a key, so they test what
they mean to.
"""

from __future__ import annotations

from typing import Any

from tollway.testing import PluginContract, count_quotes, count_receipts, http_client

KEY = {"Idempotency-Key": "contract-key-0001"}


class TestSolveContract(PluginContract):
    plugin = "tollway_solve"

    async def test_bad_input_is_refused_before_payment(self, contract_kernel: Any) -> None:
        async with http_client(contract_kernel) as client:
            for tool in self._tools(contract_kernel):
                resp = await client.post(
                    tool.path, content=b'{"__not_a_field__": 1}', headers={"content-type": "application/json", **KEY}
                )
                assert resp.status_code == 400, resp.text
                body = resp.json()
                assert body["error"] in ("invalid_request", "invalid_input")
                assert body["details"] and all("field" in d for d in body["details"])
                assert body["details"][0]["field"] != "Idempotency-Key"
                assert "PAYMENT-REQUIRED" not in resp.headers
        assert await count_quotes() == 0
        assert await count_receipts() == 0

    async def test_unpaid_call_gets_a_quote(self, contract_kernel: Any) -> None:
        async with http_client(contract_kernel) as client:
            for tool in self._tools(contract_kernel):
                resp = await client.post(tool.path, json=dict(tool.examples[0].input), headers=KEY)
                assert resp.status_code == 402, resp.text
                assert resp.json()["error"] == "payment_required"
                assert resp.headers["PAYMENT-REQUIRED"]
