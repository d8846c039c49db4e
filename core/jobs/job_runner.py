"""Running accepted jobs: one attempt of one claimed job,
with a lease kept alive by heartbeats, a time limit, a process pool for
CPU-heavy tools, and exactly one outcome per job whatever the attempts.

The charge and the receipt were made when the job was accepted; an outcome
re-signs that same receipt (`execution_status`), refunds it when the tool's
declaration says failed jobs are refunded, writes the owner's notification and
publishes the update for push subscribers. What each attempt cost upstream (the tool's
`provider_cost`) is added beside that receipt when the attempt ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any

import msgspec

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.events import JOB_UPDATES, EventBus, publish_unless_in_sql
from tollway._core.calls.tool_runner import TimeLimitExceeded, ToolRunner
from tollway._core.credits.refunds import Refunds
from tollway._core.jobs import completion, jobs, notifications
from tollway._core.plugin_api.tool import Tool, ToolContexts, ToolError
from tollway._core.receipts.receipts import ReceiptBook
from tollway._core.storage import sql

log = logging.getLogger("tollway.jobs")

ADD_PROVIDER_COST = sql.Statement(
    "UPDATE tw_receipts SET provider_cost = COALESCE(provider_cost, 0) + {} WHERE receipt_id = {}"
)


class _Meter:
    """Gets a run's provider cost whether it succeeds or fails (`ToolRunner.run(meter=...)`)."""

    provider_cost: int | None = None


class JobRunner:
    """Runs claimed jobs and writes their one outcome (the worker claims them: runtime/worker.py)."""

    def __init__(
        self,
        *,
        db: Any,
        tools: Mapping[str, Tool],
        receipts: ReceiptBook,
        refunds: Refunds,
        events: EventBus,
        contexts: ToolContexts,
        runner: ToolRunner | None = None,
    ) -> None:
        self.db = db
        self.tools = tools
        self.receipts = receipts
        self.refunds = refunds
        self.events = events
        self.contexts = contexts
        self.runner = runner if runner is not None else ToolRunner(contexts=contexts)  # core/calls/tool_runner.py

    async def run_claimed(self, claimed: jobs.Claimed, *, lease_s: float, pool: Executor | None = None) -> str:
        """Run one attempt; returns the status written ('completed', 'failed'), 'parked' or 'fenced'."""
        tool = self.tools.get(claimed.tool)
        if tool is None:
            return await self.job_failed(claimed, None, "invalid_input", f"Unknown tool {claimed.tool!r}.")
        meter = _Meter()
        started = time.monotonic_ns()
        heart: asyncio.Task[bool] | None = None
        ran = None
        try:
            value = msgspec.json.decode(claimed.input, type=tool.input_type)
            run = asyncio.ensure_future(
                self.runner.run(
                    tool,
                    value,
                    request_id=claimed.id,
                    agent_id=claimed.agent_id,
                    may_park=True,
                    pool=pool,
                    reporter=lambda message: jobs.report(claimed.id, claimed.attempt, message, bus=self.events),
                    meter=meter,
                )
            )
            heart = asyncio.create_task(self._heartbeat(claimed, lease_s, run))
            ran = await run
        except asyncio.CancelledError:
            if heart is not None and heart.done() and not heart.cancelled() and heart.result():
                return "fenced"  # the job is no longer this attempt's (cancelled, or re-run elsewhere): its run stopped
            raise
        except TimeLimitExceeded:
            return await self.job_failed(
                claimed, tool, "internal_error", f"The job exceeded its time limit of {tool.time_limit_s:g} s."
            )
        except (ToolError, ServiceError) as exc:  # a tool's failure, or a coded refusal (tollway.Refusal)
            return await self.job_failed(claimed, tool, exc.code, exc.message)
        except Exception:
            log.exception("job %s attempt %s failed", claimed.id, claimed.attempt)
            return await self.job_failed(claimed, tool, "internal_error", "The job failed.")
        finally:
            if heart is not None:
                heart.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heart
            if ran is None or ran.parked:  # a completion writes the cost in its own transaction
                await self._record_cost(claimed, meter.provider_cost)
        if ran.parked:  # someone else finishes it, or it runs again later (core/jobs/parked.py)
            parked = claimed.attempt is not None and await jobs.park(
                claimed.id,
                claimed.attempt,
                ran.output.message,
                bus=self.events,
                retry_after_s=ran.output.retry_after_s,
            )
            return "parked" if parked else "fenced"
        ran_ms = (time.monotonic_ns() - started) // 1_000_000
        return await self.job_completed(
            claimed, msgspec.to_builtins(ran.output), duration_ms=ran_ms, provider_cost=meter.provider_cost
        )

    async def _record_cost(self, claimed: jobs.Claimed, cost: int | None) -> None:
        """What this attempt cost upstream, added to the private column beside the job's
        receipt (spent whatever the outcome: a refunded job's cost stays the operator's)."""
        if not cost or not claimed.receipt_id:
            return
        try:
            await ADD_PROVIDER_COST.execute(cost, claimed.receipt_id)
        except Exception:  # the cost is bookkeeping: never the job's outcome
            log.exception("recording the provider cost of job %s failed", claimed.id)

    async def announce_claim(self, claimed: jobs.Claimed) -> None:
        await publish_unless_in_sql(self.events, JOB_UPDATES, f"{claimed.id} processing")

    async def _heartbeat(self, claimed: jobs.Claimed, lease_s: float, run: asyncio.Future[Any]) -> bool:
        """Keep the lease; once the job is no longer this attempt's (the operator cancelled it,
        its lease ran out and another worker took it, it was finished from outside) stop its
        run, whose outcome could not be written anyway, and return True."""
        while True:
            await asyncio.sleep(max(lease_s / 3, 0.05))
            try:
                if not await jobs.heartbeat(claimed.id, claimed.attempt, lease_s):
                    log.warning(
                        "job %s attempt %s is no longer this worker's: its run stops", claimed.id, claimed.attempt
                    )
                    run.cancel()
                    return True
            except Exception:  # the database blipped: the next beat tries again
                log.exception("heartbeat of job %s failed", claimed.id)

    async def job_completed(
        self, claimed: jobs.Claimed, result: Any, *, duration_ms: int | None = None, provider_cost: int | None = None
    ) -> str:
        """Complete the job; `duration_ms` (the attempt's run time) goes beside its receipt, and
        `provider_cost` (what the attempt cost upstream) with it, written even if the job is fenced.
        A run's completion on PostgreSQL is first tried in one statement (core/jobs/completion.py)."""
        notification = notifications.new_row(
            claimed.agent_id,
            "job_completed",
            f"{claimed.tool} completed",
            None,
            {"jobId": claimed.id, "tool": claimed.tool, "receiptId": claimed.receipt_id},
        )
        if completion.applies(claimed) and await completion.complete_and_resign(
            self.receipts,
            claimed,
            result,
            notification,
            duration_ms=duration_ms,
            provider_cost=provider_cost,
            bus=self.events,
        ):
            await publish_unless_in_sql(self.events, JOB_UPDATES, f"{claimed.id} completed")
            return "completed"
        async with self.db.transaction():
            if provider_cost and claimed.receipt_id:
                await ADD_PROVIDER_COST.execute(provider_cost, claimed.receipt_id)
            if not await jobs.complete(claimed.id, claimed.attempt, result, bus=self.events):
                return "fenced"
            if claimed.receipt_id:
                await self.receipts.revise(
                    claimed.receipt_id, {"execution_status": "completed"}, duration_ms=duration_ms
                )
            await notifications.INSERT.execute(*notification)
        await publish_unless_in_sql(self.events, JOB_UPDATES, f"{claimed.id} completed")
        return "completed"

    async def job_failed(self, claimed: jobs.Claimed, tool: Any, code: str, message: str) -> str:
        refund = tool is None or tool.refund_failed_jobs
        async with self.db.transaction():
            if not await jobs.fail(
                claimed.id, claimed.attempt if tool is not None else None, code=code, message=message, bus=self.events
            ):
                return "fenced"
            refunded = False
            if claimed.receipt_id:
                if refund and await self.refunds.refundable(claimed.receipt_id):
                    await self.refunds.refund_to_credits(
                        claimed.receipt_id, reason=code, changes={"execution_status": "failed"}
                    )
                    refunded = True
                else:
                    await self.receipts.revise(claimed.receipt_id, {"execution_status": "failed"})
            await notifications.notify(
                claimed.agent_id,
                "job_failed",
                f"{claimed.tool} failed",
                message,
                {
                    "jobId": claimed.id,
                    "tool": claimed.tool,
                    "errorCode": code,
                    "receiptId": claimed.receipt_id,
                    "refunded": refunded,
                },
            )
        await publish_unless_in_sql(self.events, JOB_UPDATES, f"{claimed.id} failed")
        return "failed"
