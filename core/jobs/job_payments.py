"""Jobs and the payment that pays for them: a job starts only once its payment has settled.

A job paid with credits, or by an x402 payment that settled at once, is accepted whole:
its row and the tool's `on_accept` rows, in the payment's transaction. A job whose x402
payment is still pending when it is accepted only gets its row, waiting (core/jobs/jobs.py):
no worker runs it and its `on_accept` has not run, so nothing is spent on an unpaid job.
The reconciler, which learns the payment's fate, then either starts it (`payment_settled`:
`on_accept` runs in that transaction) or fails it `payment_failed` (`payment_failed`),
charged nothing and owed nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from tollway._core.basics.events import JOB_UPDATES, JOBS_NEW, EventBus, publish_unless_in_sql
from tollway._core.jobs import jobs, notifications
from tollway._core.plugin_api.tool import AcceptedJob, Tool
from tollway._core.receipts.tables import Receipt


async def accept(
    tool: Tool, *, value: Any, price: int, agent_id: str, request_id: str, receipt_id: str, settled: bool, bus: EventBus
) -> None:
    """The accepted job's row; with a settled payment also what the tool writes on acceptance."""
    input_json = msgspec.json.encode(value).decode()
    await jobs.create(
        job_id=request_id,
        tool=tool.name,
        agent_id=agent_id,
        input_json=input_json,
        receipt_id=receipt_id,
        bus=bus,
        payment_settled=settled,
    )
    if settled and tool.on_accept is not None:
        await tool.on_accept(
            AcceptedJob(request_id=request_id, agent_id=agent_id, value=value, price=price, receipt_id=receipt_id)
        )


async def payment_settled(tools: Mapping[str, Tool], receipt_id: str, bus: EventBus) -> str | None:
    """In the caller's transaction: the job waiting for `receipt_id`'s payment starts (its
    `on_accept` runs now). Its id, or None when no job was waiting. Call `announce` after the commit."""
    row = await jobs.waiting_for_payment(receipt_id)
    if row is None or not await jobs.release(row["id"], bus=bus):
        return None
    tool = tools.get(row["tool"])
    if tool is not None and tool.on_accept is not None:
        charge = await Receipt.select(Receipt.amount).where(Receipt.receipt_id == receipt_id).first()
        value = msgspec.json.decode(row["input"].encode(), type=tool.input_type)
        await tool.on_accept(
            AcceptedJob(
                request_id=row["id"],
                agent_id=row["agent_id"],
                value=value,
                price=int(charge["amount"]),
                receipt_id=receipt_id,
            )
        )
    return row["id"]


async def payment_failed(receipt_id: str, reason: str | None, bus: EventBus) -> str | None:
    """In the caller's transaction: the job waiting for `receipt_id`'s payment fails
    `payment_failed`; it never ran and nothing was charged. Its id, or None."""
    row = await jobs.waiting_for_payment(receipt_id)
    message = f"The payment did not settle ({reason or 'refused'}); the job never started and nothing was charged."
    if row is None or not await jobs.fail(row["id"], None, code="payment_failed", message=message, bus=bus):
        return None
    await notifications.notify(
        row["agent_id"],
        "job_failed",
        f"{row['tool']} failed",
        message,
        {
            "jobId": row["id"],
            "tool": row["tool"],
            "errorCode": "payment_failed",
            "receiptId": receipt_id,
            "refunded": False,
        },
    )
    return row["id"]


async def announce(bus: EventBus, job_id: str | None, status: str) -> None:
    """After the commit: wake the workers for a started job, tell subscribers of a failed one."""
    if job_id is None:
        return
    if status == "started":
        await publish_unless_in_sql(bus, JOBS_NEW, job_id)
    else:
        await publish_unless_in_sql(bus, JOB_UPDATES, f"{job_id} failed")


__all__ = ["accept", "announce", "payment_failed", "payment_settled"]
