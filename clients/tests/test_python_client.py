"""The Python client against a real `tollway serve` (SQLite, the local test network): a lookup paid
by x402 within a spend cap, credits, a job waited on by two channels (and finished by polling
when the WebSocket is cut halfway), receipts verified offline, refusals as typed exceptions."""

from __future__ import annotations

import copy
from decimal import Decimal

import pytest

from tollway_client import (
    AsyncClient,
    Client,
    InvalidRequest,
    JobResult,
    PaymentRequired,
    ReceiptInvalid,
    SpendCapExceeded,
    ToolResult,
    _wait,
    check_receipt,
    verify_receipt,
)

RECALL = {"make": "Honda", "model": "Accord", "model_year": 2021}
# A routing problem PyVRP works on for about its whole time limit: the job runs ~2.5 s.
STOPS = [(17, 72), (97, 8), (32, 15), (63, 97), (57, 60), (83, 48), (26, 12), (62, 3), (49, 55), (77, 97)] * 4
SOLVE = {
    "problem": "routing",
    "time_limit_s": 3,
    "routing": {
        "vehicles": [{"id": "van", "capacity": 100, "start": {"id": "depot"}, "count": 5}],
        "stops": [{"id": f"s{i}", "demand": 5, "location": {"id": f"s{i}"}} for i in range(len(STOPS))],
        "coordinates": [{"id": "depot", "x": 50, "y": 50}]
        + [{"id": f"s{i}", "x": x + i % 7, "y": y + i % 5} for i, (x, y) in enumerate(STOPS)],
    },
}


async def test_a_lookup_paid_by_x402_and_its_receipt_verified_offline(service):
    key = service.funded_wallet("1")
    async with AsyncClient(service.url, wallet_key=key, max_payment_usdc="0.01") as tollway:
        answer = await tollway.vehicle_recalls(RECALL)
        assert isinstance(answer, ToolResult)
        assert answer.data["tool"] == "vehicle_recalls" and answer.data["result"]["total"] == 1
        assert answer.payment.method == "x402" and answer.payment.amount_usdc == Decimal("0.005")
        assert answer.payment.settlement and answer.payment.settlement["success"] is True
        assert tollway.spent_usdc == Decimal("0.005")

        receipt = await tollway.verify_receipt(answer.receipt_id)  # fetched as its owner, checked
        assert receipt["status"] == "settled" and receipt["payment_method"] == "x402"
        keys = await tollway.receipt_keys()

    # Offline: nothing but the receipt and the published keys.
    assert verify_receipt(receipt, keys)
    tampered = copy.deepcopy(receipt)
    tampered["amount_usdc"] = "0.000001"
    assert not verify_receipt(tampered, keys)
    with pytest.raises(ReceiptInvalid) as refused:
        check_receipt(tampered, keys)
    assert refused.value.code == "digest_mismatch"
    forged = {**receipt, "signature": receipt["signature"][::-1]}
    with pytest.raises(ReceiptInvalid) as refused:
        check_receipt(forged, keys)
    assert refused.value.code == "bad_signature"
    other_key = {"keys": [{**keys["keys"][0], "public_key": "A" * 43}]}
    assert not verify_receipt(receipt, other_key)


async def test_a_quote_above_the_spend_cap_is_not_signed(service):
    key = service.funded_wallet("1")
    async with AsyncClient(service.url, wallet_key=key, max_payment_usdc="0.001") as tollway:
        with pytest.raises(SpendCapExceeded) as refused:
            await tollway.vehicle_recalls(RECALL)
        assert refused.value.code == "spend_cap_exceeded" and tollway.spent_usdc == 0
    async with AsyncClient(service.url, wallet_key=key, max_spend_usdc="0.006") as tollway:
        await tollway.vehicle_recalls(RECALL)
        with pytest.raises(SpendCapExceeded):
            await tollway.vehicle_recalls({**RECALL, "model_year": 2020})
        assert tollway.spent_usdc == Decimal("0.005")
        balance = await tollway.balance()
    assert balance["on_chain_balance"] == "0.995000"


async def test_refusals_are_typed_exceptions_with_the_contracts_code(service):
    async with AsyncClient(service.url) as anonymous:
        with pytest.raises(InvalidRequest) as refused:
            await anonymous.vehicle_recalls({"make": "Honda"})  # type: ignore[typeddict-item]
        assert refused.value.code == "invalid_request" and refused.value.status == 400
        assert {d["field"] for d in refused.value.details} >= {"model", "model_year"}
        with pytest.raises(PaymentRequired) as unpaid:  # no wallet, no credits: the 402's quote
            await anonymous.vehicle_recalls(RECALL)
        assert unpaid.value.code == "payment_required" and unpaid.value.quote["amount_usdc"] == "0.005000"


def test_the_blocking_client_pays_from_credits(service):
    with Client(service.url, token=service.token_with_credits("1")) as tollway:
        answer = tollway.vehicle_recalls(RECALL)
        assert answer.payment.method == "credits" and tollway.spent_usdc == 0
        assert tollway.balance()["credits_balance"] == "0.995000"
        assert tollway.verify_receipt(answer.receipt_id)["payment_method"] == "credits"


async def test_a_job_waited_on_finishes_by_websocket_and_by_polling_when_the_websocket_is_cut_halfway(
    service, monkeypatch
):
    token = service.token_with_credits("5")
    async with AsyncClient(service.url, token=token) as whole, AsyncClient(service.cutting_url, token=token) as cut:
        with monkeypatch.context() as patched:  # polling held back: only the socket can finish this wait
            patched.setattr(_wait, "POLL_DELAYS_S", (60.0,) * 4)
            by_socket = await whole.solve({**SOLVE, "time_limit_s": 1})
        by_polling = await cut.solve(SOLVE, idempotency_key="cut-halfway")
    assert isinstance(by_polling, JobResult) and isinstance(by_socket, JobResult)
    assert by_socket.channel == "websocket" and by_polling.channel == "polling"
    for done in (by_polling, by_socket):
        assert done.job["status"] == "completed" and done.result["solution"]["routes"]
        assert done.payment is not None and done.payment.method == "credits"


def test_the_polling_backoff():
    assert [_wait.poll_delay(i, push_alive=True) for i in range(6)] == [0.3, 0.6, 1.0, 2.0, 5.0, 5.0]
    assert _wait.poll_delay(7, push_alive=False) == 2.0


async def test_a_job_paid_by_x402_is_waited_for_as_its_payer(service):
    key = service.funded_wallet("1")
    async with AsyncClient(service.url, wallet_key=key, pay_with="x402") as tollway:
        accepted = await tollway.solve({**SOLVE, "time_limit_s": 1}, wait=False)
        assert accepted.payment.method == "x402" and accepted.status == "pending"
        done = await tollway.wait(accepted.request_id, timeout_s=60)
        assert done.job["status"] == "completed" and done.receipt_id == accepted.receipt_id
        assert (await tollway.verify_receipt(done.receipt_id))["tool"] == "solve"
