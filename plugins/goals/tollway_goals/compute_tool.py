"""The paid `compute` tool (POST /v1/compute): a goal priced from its budget, accepted as a
job whose acceptance writes the goal and its root session; the agent loop then runs it on
the workers (sessions.py). Its check and acceptance read the service's settings and
platform, so the tool is built for one service's `PluginContext` (`compute_tool`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from msgspec import UNSET

from tollway import (
    AcceptedJob,
    AdmissionChecks,
    Example,
    FieldError,
    FieldErrors,
    JobDeclaration,
    PluginContext,
    Tool,
    ToolContext,
    ToolError,
    to_micro,
    usdc,
)

from . import goals
from .ids import goal_id_for
from .settings import FAMILY, MAX_BUDGET
from .wire import DEFAULT_BUDGET_USDC, ComputeInput, ComputeResult

DESCRIPTION = (
    "Hand a goal to the agent loop: it runs on the service's workers through a language model, works through cases "
    "(opened by events you post, each with its own session, budget slice and step limit), can ask named people "
    "questions or approvals, and delivers results to your result webhook. The price is the goal's budget "
    f"(params.budget_usdc, at least {DEFAULT_BUDGET_USDC} USDC; left out, the goal is given and charged {DEFAULT_BUDGET_USDC}); "
    "everything the loop spends comes out of it, and what is left when the goal ends (completed, cancelled with "
    "POST /v1/compute/{goal_id}/cancel, or expired after the operator's idle time) goes back to your credits. Read "
    "progress with GET /v1/compute/{goal_id} and the goal's cases."
)
# The 402 quote's description: what the amount asked for is, the default budget included.
TITLE = f"Compute goal (price: its budget, {DEFAULT_BUDGET_USDC} USDC unless params.budget_usdc says)"


def budget_of(value: ComputeInput) -> int:
    raw = UNSET if value.params is UNSET else value.params.budget_usdc
    return goals.DEFAULT_BUDGET if raw is UNSET else to_micro(raw)


def price(value: ComputeInput) -> int:
    return max(goals.DEFAULT_BUDGET, budget_of(value))


def check(context: PluginContext, value: ComputeInput) -> None:
    """Before payment: the budget within the operator's ceiling, a webhook URL the service may call."""
    problems: list[FieldError] = []
    params = value.params
    try:
        amount = budget_of(value)
    except Exception as exc:
        problems.append(FieldError("params.budget_usdc", f"is not a USDC amount ({exc})"))
        amount = goals.DEFAULT_BUDGET
    ceiling = to_micro(context.settings(FAMILY).get(MAX_BUDGET.name) or MAX_BUDGET.default or "1000")
    if amount < goals.DEFAULT_BUDGET or amount > ceiling:
        problems.append(FieldError("params.budget_usdc", f"must be from {DEFAULT_BUDGET_USDC} to {usdc(ceiling)} USDC"))
    if params is not UNSET:
        if params.result_webhook_url is not UNSET:
            problem = context.platform.webhook_target_problem(params.result_webhook_url)
            if problem:
                problems.append(FieldError("params.result_webhook_url", problem))
        if params.done_check is not UNSET and not params.one_off:
            problems.append(
                FieldError(
                    "params.done_check", "a cases done check needs a one-off goal (cases work only for one-off goals)"
                )
            )
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise FieldErrors(problems)


async def on_accept(context: PluginContext, job: AcceptedJob) -> None:
    value: ComputeInput = job.value
    one_off = True if value.params is UNSET else value.params.one_off
    await goals.create(job, cases=one_off and goals.cases_enabled(job.agent_id, None, context.settings(FAMILY)))


async def run(value: ComputeInput, ctx: ToolContext) -> ComputeResult:
    """The job: the goal as its acceptance wrote it (its sessions run on the workers)."""
    goal = await goals.goal_row(goal_id_for(ctx.request_id))
    if goal is None:
        raise ToolError("internal_error", "The goal was not recorded.", status=500)
    return ComputeResult(
        goal_id=goal["id"],
        status=goal["status"],
        budget_usdc=usdc(int(goal["budget"])),
        cases_enabled=bool(goal["cases_enabled"]),
    )


def accepted_fields(request_id: str) -> Mapping[str, str]:
    return {"goal_id": goal_id_for(request_id)}


def compute_tool(context: PluginContext) -> Tool:
    """The `compute` tool of the service `context` belongs to."""
    return Tool(
        name="compute",
        path="/v1/compute",
        title=TITLE,
        summary="Hands a goal to the agent loop on the workers, paid from its budget (5.00 USDC and up).",
        description=DESCRIPTION,
        category="infrastructure",
        subcategory="compute",
        input_type=ComputeInput,
        output_type=ComputeResult,
        run=run,
        price=price,
        family=FAMILY,
        idempotency="optional",
        rate_limit="expensive",
        # the 202 and the receipt name the goal; the goal's rows are written with the payment
        job=JobDeclaration(
            accepted_status="pending",
            refund_failed_jobs=True,
            accepted_fields=accepted_fields,
            on_accept=functools.partial(on_accept, context),
        ),
        # a goal no model can run is refused before payment (503 provider_unavailable)
        admission=AdmissionChecks(check=functools.partial(check, context), provider_kind="llm"),
        examples=(
            Example(
                title="A one-off goal that works through cases",
                input={
                    "goal": "Chase each overdue invoice the events name until it is paid or escalated.",
                    "params": {
                        "budget_usdc": "10.00",
                        "agent_limits": {"max_depth": 2, "max_awake": 5},
                        "done_check": {"kind": "cases", "finished_states": ["paid", "escalated"], "min_cases": 1},
                    },
                },
            ),
        ),
    )
