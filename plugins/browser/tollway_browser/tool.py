"""`browser_task` (POST /v1/tools/browser/task, a paid job, 0.08): one task in one fresh
Chromium on a worker — typed steps, or a goal run by the agent loop over the `llm` provider.

Before payment: the URLs are http(s), exactly one of `steps` and `goal`, and for a goal an
`llm` provider is configured (503 `provider_unavailable` otherwise; steps need none). A task
that failed before doing anything (its profile is not the caller's, its start page could not
be opened, the browser would not start) fails the job, refunded; once the start page opened,
the task completes and is charged whatever its steps did, its `status` and step log saying
how it ended. A re-run after a worker crash starts the task again from the start, replacing
the artifacts of the earlier attempt.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping

from tollway import (
    AdmissionChecks,
    Example,
    FieldError,
    FieldErrors,
    JobDeclaration,
    PluginContext,
    Refusal,
    StateKey,
    Tool,
    ToolContext,
)
from tollway import ToolError as Failure

from . import agent, artifacts, profiles, session, wire
from .settings import (
    CHROMIUM_PATH,
    CONCURRENCY,
    CPU_S,
    FAMILY,
    MAX_RESPONSE_MB,
    MEMORY_MB,
    allowed_hosts,
    number,
    text,
)
from .steps import step_problem, web_url

PRICE = "0.08"
# The kernel's limit on one attempt: the task's own 300 s at most, a wait for its profile
# (another task holding it) of as long, and the start and the saving around them.
TIME_LIMIT_S = 2 * 300 + 60
SLOTS: StateKey[asyncio.Semaphore] = StateKey("browser", "slots")  # this process's browser slots


def check(context: PluginContext, value: wire.BrowserTaskInput) -> None:
    web_url("start_url", value.start_url)
    if (value.steps is None) == (value.goal is None):
        raise FieldErrors([FieldError(name, "give exactly one of steps and goal") for name in ("steps", "goal")])
    problems = [problem for n, step in enumerate(value.steps or ()) if (problem := step_problem(n, step))]
    if problems:
        raise FieldErrors(problems)
    if value.goal is not None and context.started:
        try:
            context.platform.provider("llm")
        except LookupError:
            raise Refusal(
                "provider_unavailable",
                "browser_task with a goal needs a language model, and no llm provider is configured on this "
                "service (tasks with steps need none). Nothing was charged.",
                status=503,
                details={"reason": "not_configured", "kind": "llm"},
            ) from None


def limits(settings: Mapping[str, str]) -> session.Limits:
    return session.Limits(
        chromium=text(settings, CHROMIUM_PATH),
        allow=allowed_hosts(settings),
        memory_mb=number(settings, MEMORY_MB),
        cpu_s=number(settings, CPU_S),
        max_response_bytes=int(number(settings, MAX_RESPONSE_MB) * 1024 * 1024),
    )


async def run(value: wire.BrowserTaskInput, ctx: ToolContext) -> wire.BrowserTaskResult:
    if ctx.plugin is None or ctx.agent_id is None:
        raise Failure("internal_error", "browser_task runs only as a job.", status=500)
    owner = ctx.agent_id
    state = None
    if value.profile_id is not None:
        await ctx.report("waiting for the profile")
        state = await profiles.hold(ctx.plugin, value.profile_id, owner, ctx.request_id, profiles.WAIT_FOR_PROFILE_S)
    try:
        async with _slots(ctx.plugin, ctx.settings):
            llm = ctx.provider("llm") if value.goal is not None else None
            outcome = await session.run_task(
                value,
                limits(ctx.settings),
                ctx.report,
                storage_state=state,
                keep_state=value.profile_id is not None,
                agent=None if llm is None else functools.partial(agent.pursue, llm, value.goal),
            )
        if not outcome.started:
            blocked = [{"url": b.url, "reason": b.reason} for b in outcome.blocked[:20]]
            raise Failure(
                "target_unreachable",
                f"The start page could not be opened: {outcome.start_problem or outcome.status}. Nothing was charged.",
                status=400,
                details={"reason": outcome.status, "blocked": blocked},
            )
        if value.profile_id is not None and outcome.storage_state is not None:
            await ctx.report("saving the profile")
            await profiles.save(ctx.plugin, value.profile_id, ctx.request_id, outcome.storage_state)
        await ctx.report("keeping the artifacts")
        kept = await artifacts.keep(ctx.plugin, ctx.request_id, owner, outcome.shots)
    finally:
        if value.profile_id is not None:
            await profiles.release(value.profile_id, ctx.request_id)
    return wire.BrowserTaskResult(
        status=outcome.status,
        url=outcome.url,
        title=outcome.title,
        extracts=outcome.extracts,
        answer=outcome.answer,
        steps=outcome.steps,
        console_errors=outcome.console_errors,
        blocked=outcome.blocked,
        artifacts=kept,
        profile_id=value.profile_id,
    )


class _Slot:
    """One of the worker process's browser slots (TOLLWAY_BROWSER_CONCURRENCY)."""

    def __init__(self, semaphore: asyncio.Semaphore) -> None:
        self.semaphore = semaphore

    async def __aenter__(self) -> None:
        await self.semaphore.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.semaphore.release()


def _slots(context: PluginContext, settings: Mapping[str, str]) -> _Slot:
    count = int(number(settings, CONCURRENCY))
    return _Slot(context.state.setdefault(SLOTS, lambda: asyncio.Semaphore(max(1, count))))


def browser_task_tool(context: PluginContext) -> Tool[wire.BrowserTaskInput, wire.BrowserTaskResult]:
    return Tool(
        name="browser_task",
        path="/v1/tools/browser/task",
        title="Browser task",
        summary="Runs steps or a goal in a fresh headless browser; returns extracts, the step log and artifacts.",
        description=(
            "Open start_url in a fresh headless Chromium and run `steps` (goto, click, fill, select, press, "
            "wait_for, scroll, extract, screenshot, pdf; elements by role+name, label, text or selector) or a "
            "`goal` in words. Only public addresses are reached. profile_id keeps cookies between tasks. "
            "Screenshots and PDFs are artifacts. Runs as a job."
        ),
        category="data",
        subcategory="browser_task",
        input_type=wire.BrowserTaskInput,
        output_type=wire.BrowserTaskResult,
        run=run,
        price=PRICE,
        family=FAMILY,
        job=JobDeclaration(refund_failed_jobs=True),
        idempotency="optional",
        rate_limit="paid",
        time_limit_s=TIME_LIMIT_S,
        examples=(
            Example(
                title="Read a table",
                input={
                    "start_url": "https://example.com/",
                    "steps": [{"action": "extract", "what": "table", "save_as": "prices"}],
                },
            ),
        ),
        admission=AdmissionChecks(check=functools.partial(check, context), exactly_one_of=(("steps", "goal"),)),
    )
