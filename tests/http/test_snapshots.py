"""Snapshots of the public surfaces: the OpenAPI document, a paid recall answer,
a receipt, and the error bodies. Volatile values (ids, times, hashes,
signatures, addresses) are normalised first so the snapshots hold the shapes."""
from __future__ import annotations

import re
from typing import Any

import pytest
from eth_account import Account

from core.money import to_micro
from tollway.testing import http_client, pay_402
from tests.support.replay import nhtsa_honda_accord_2021

OPERATOR = {"Authorization": "Bearer test-operator-token"}
VOLATILE = [
    (re.compile(r"^rcpt_[0-9a-f]+$"), "<receipt_id>"),
    (re.compile(r"^req_[0-9a-f]+$"), "<request_id>"),
    (re.compile(r"^q_[0-9a-f]+$"), "<quote_id>"),
    (re.compile(r"^txn_[0-9a-f]+$"), "<transaction_id>"),
    (re.compile(r"^rk_[0-9a-f]+$"), "<key_id>"),
    (re.compile(r"^0x[0-9a-fA-F]{64}$"), "<hash>"),
    (re.compile(r"^0x[0-9a-fA-F]{40}$"), "<address>"),
    (re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"), "<time>"),
    (re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"), "<uuid>"),
    (re.compile(r"^[0-9a-f]{64}$"), "<sha256>"),
]


def normalise(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if key == "signature" and isinstance(value, str):
        return "<signature>"
    if key == "retrieved_at":
        return "<time>"
    if isinstance(value, str):
        for pattern, stand_in in VOLATILE:
            if pattern.match(value):
                return stand_in
    return value


@pytest.fixture
async def kernel(kernel_factory):
    return await kernel_factory(installed={"tollway_vehicles"}, transport=nhtsa_honda_accord_2021())


async def test_openapi_document(kernel, snapshot):
    async with http_client(kernel) as client:
        doc = (await client.get("/schema/openapi.json")).json()
    assert normalise(doc) == snapshot


async def test_paid_recall_answer_and_receipt(kernel, snapshot):
    payer = Account.create()
    await kernel.accounts.fund_chain(payer.address, to_micro("1"))
    body = {"make": "Honda", "model": "Accord", "model_year": 2021, "limit": 1, "memo": "fleet check"}
    async with http_client(kernel) as client:
        quote = await client.post("/v1/tools/lookup/vehicle-recalls", json=body)
        paid = await client.post(
            "/v1/tools/lookup/vehicle-recalls", json=body, headers={"payment-signature": pay_402(payer, quote.headers["PAYMENT-REQUIRED"])}
        )
        receipt = (await client.get(f"/v1/receipts/{paid.json()['data']['receipt_id']}", headers={"X-Agent-ID": payer.address})).json()
    assert paid.status_code == 200
    assert normalise(quote.json()) == snapshot(name="quote")
    assert normalise(paid.json()) == snapshot(name="answer")
    assert normalise(receipt) == snapshot(name="receipt")


async def test_error_bodies(kernel, snapshot):
    async with http_client(kernel) as client:
        answers = {
            "bad_year": await client.post("/v1/tools/lookup/vehicle-recalls", json={"make": "Honda", "model": "Accord", "model_year": 1900}),
            "missing_make": await client.post("/v1/tools/lookup/vehicle-recalls", json={"model": "Accord", "model_year": 2020}),
            "several_fields": await client.post(
                "/v1/tools/lookup/vehicle-recalls", json={"make": "H", "model": "", "model_year": "2021", "limit": 0, "colour": "red"}
            ),
            "not_json": await client.post("/v1/tools/lookup/vehicle-recalls", content=b"{nope", headers={"content-type": "application/json"}),
            "top_up_amount": await client.post("/v1/credits/top-up", json={"amount": 5000}, headers={"X-Agent-ID": Account.create().address}),
            "unknown_route": await client.get("/v1/nothing-here"),
            "operator": await client.post("/v1/tools/internal/credits/grant", json={}, headers={"Authorization": "Bearer wrong"}),
        }
    shaped = {name: {"status": r.status_code, "body": normalise(r.json())} for name, r in answers.items()}
    shaped["not_json"]["body"]["details"] = [{"field": d["field"], "message": "<decoder message>"} for d in shaped["not_json"]["body"]["details"]]
    assert shaped == snapshot
