"""Calls of the service's own tools made for an agent and paid from money already charged
(a compute goal's budget): validated and priced as any call, run, and receipted as `covered`
(`payment_method: goal_budget`, the goal's `goal_id`) so the spend is counted once, in the
goal's own receipt. Nothing here moves credits: the caller holds and charges its budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.ids import sorted_id
from tollway._core.calls.prepare import PreparedCall, prepare
from tollway._core.calls.tool_runner import ToolRunner
from tollway._core.plugin_api.tool import Tool, ToolContexts
from tollway._core.receipts.receipts import ReceiptBook

COVERED = "covered"  # a receipt's status: paid from a charge made before (the goal's)
GOAL_BUDGET = "goal_budget"


class DelegatedCalls:
    def __init__(
        self,
        *,
        tools: Mapping[str, Tool],
        contexts: ToolContexts,
        receipts: ReceiptBook,
        watch_sources: Any = None,
        runner: ToolRunner | None = None,
    ) -> None:
        self.tools = tools
        self.contexts = contexts
        self.receipts = receipts
        # Runs the tool as a paid call or a job would (the pool, the time limit) and records its facts.
        self.runner = runner if runner is not None else ToolRunner(contexts=contexts, watch_sources=watch_sources)

    def callable_tools(self, *, leave_out: tuple[str, ...] = ()) -> list[Tool]:
        """The tools a loop may call now: configured ones, other than `leave_out`, none
        whose calls need an Idempotency-Key (physical mail: nothing a model repeats may
        act twice) and none that write their own rows when a paid call is accepted
        (`on_accept`: a goal, a marketplace order), which only a paid call makes."""
        out = []
        for tool in sorted(self.tools.values(), key=lambda t: t.name):
            if tool.name in leave_out or tool.idempotency == "required" or tool.on_accept is not None:
                continue
            try:
                self.contexts.require_configured(tool)
            except ServiceError:
                continue
            out.append(tool)
        return out

    async def prepare(self, name: str, arguments: Mapping[str, Any]) -> PreparedCall:
        """Validated and priced (400 naming every failing field, 404 for no such tool)."""
        tool = self.tools.get(name)
        if tool is None:
            raise ServiceError(404, "not_found", f"No tool {name!r}.")
        self.contexts.require_configured(tool)
        call = prepare(tool, msgspec.json.encode(dict(arguments)))
        if tool.admit is not None:
            call.admit(await tool.admit(call.value))
        return call

    async def run(self, call: PreparedCall, *, agent_id: str, request_id: str) -> Any:
        """The tool's output (its failure raises, as in a paid call): a `cpu_bound` tool runs in
        the process pool, every tool within its time limit, as in a paid call or a job."""
        return (
            await self.runner.run(call.tool, call.value, request_id=request_id, agent_id=agent_id, meter=call)
        ).output

    async def receipt(
        self, call: PreparedCall, output: Any, *, agent_id: str, request_id: str, goal_id: str
    ) -> dict[str, Any]:
        """The call's signed receipt (and a lookup's facts), in the caller's transaction."""
        signed = await self.receipts.issue(
            call.receipt(
                agent_id=agent_id,
                request_id=request_id,
                status=COVERED,
                execution_status="completed",
                payment_method=GOAL_BUDGET,
                goal_id=goal_id,
            )
        )
        await self.runner.record(call.tool, call.value, output, agent_id)
        return signed

    @staticmethod
    def new_request_id() -> str:
        return sorted_id("req")
