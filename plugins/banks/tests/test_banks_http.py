"""The "exactly one of name / fdic_certificate" rule through the HTTP front, on
SQLite and PostgreSQL: a 400 `invalid_request` with `details`, before any quote."""

from __future__ import annotations

import pytest

from tollway.testing import count_quotes, count_receipts, http_client

PATH = "/v1/tools/lookup/company-bank-profile"


@pytest.mark.parametrize(
    "body",
    [{}, {"limit": 3}, {"name": "Bank of Hancock County", "fdic_certificate": 10057}, {"fdic_certificate": 0},
     {"name": "B"}, {"fdic_certificate": 10057, "limit": 11}],
)  # fmt: skip
async def test_bad_input_is_400_with_details_before_payment(kernel_factory, body) -> None:
    kernel = await kernel_factory(installed={"tollway_banks"})
    async with http_client(kernel) as client:
        resp = await client.post(PATH, json=body)
    assert resp.status_code == 400, resp.text
    payload = resp.json()
    assert payload["error"] == "invalid_request"
    assert payload["details"] and all("field" in d and "message" in d for d in payload["details"])
    assert "PAYMENT-REQUIRED" not in resp.headers
    assert await count_quotes(kernel) == 0 and await count_receipts() == 0


async def test_either_input_gets_a_quote(kernel_factory) -> None:
    kernel = await kernel_factory(installed={"tollway_banks"})
    async with http_client(kernel) as client:
        for body in ({"fdic_certificate": 10057}, {"name": "Bank of Hancock County"}):
            resp = await client.post(PATH, json=body)
            assert resp.status_code == 402, resp.text
            assert resp.json()["amount_usdc"].startswith("0.005")
