"""The agent loop of one session run: ask the model (through the `llm` provider) what to do
next, run the tools it calls, store every step, until it has nothing more to answer. Each
model step holds its price on the goal's budget (and counts toward the case's step limit)
before it is asked, and is charged when its answer is stored; a hold left by a run that died
is given back first, so a resumed session redoes that step and pays for it once."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any

import msgspec

from tollway import storage, to_micro

from . import asks, budget, case_tools, delivery, ending, repo_tools, sends, service_tools, sessions, transcript
from .case_tools import CallRefused, Where
from .goals import add_step, goal_row
from .ids import new_id, next_seq, now_ms
from .masking import mask, mask_text
from .settings import FAMILY, LLM_STEP_COST, MAX_STEPS_PER_RUN
from .tables import Case, Session, Step

log = logging.getLogger("tollway.goals")
SYSTEM = (
    "You are an agent working on a goal for the agent that created it. Work through the messages you receive "
    "using the tools. Keep each case's record current (state, owner, next_action) and write decisions with their "
    "reasons. When there is nothing more to do until something new arrives, answer with a short note and no tool call. "
    "Call finish when your part of the goal is complete."
)


@dataclasses.dataclass
class RunContext:
    claim: sessions.Claim
    platform: Any
    lease_s: float

    @property
    def settings(self) -> Mapping[str, str]:
        return self.platform.settings(FAMILY)


class LostLease(Exception):
    """Another worker holds the session now: this run stops without writing."""


async def run_session(ctx: RunContext) -> str:
    """Run the claimed session until it waits, ends or yields; the status it ended with."""
    c = ctx.claim
    await _give_back_holds(ctx)
    steps_left = int(ctx.settings.get(MAX_STEPS_PER_RUN.name) or MAX_STEPS_PER_RUN.default or "50")
    try:
        while True:
            if not await sessions.still_ours(c, ctx.lease_s):
                raise LostLease(c.session_id)
            goal = await goal_row(c.goal_id)
            assert goal is not None
            if goal["status"] != "running":  # the goal ended while this session ran
                raise GoalEnded(c.session_id)
            where = Where(goal=goal, session_id=c.session_id, case_id=c.case_id, depth=c.depth)
            steps = await transcript.steps_of(c.session_id)
            pending = transcript.unanswered_calls(steps)
            if pending:
                if await _run_calls(ctx, where, pending):
                    await sessions.end_run(c, "completed")
                    return "completed"
                continue
            taken = await sessions.inbox(c.session_id)
            if not transcript.needs_model(steps):
                return "waiting" if await sessions.end_run(c, "waiting", taken=taken) else "pending"
            if steps_left <= 0:
                await sessions.end_run(c, "pending")
                return "pending"
            steps_left -= 1
            await _model_step(ctx, where, steps)
    except LostLease:
        log.info("session %s: lease lost, run stopped", c.session_id)
        return "lost"
    except Stopped:
        return "waiting"
    except GoalEnded:
        await sessions.end_run(c, "cancelled")
        await ctx.platform.webhooks_due()  # the goal's end, should this run have settled it
        return "cancelled"
    except Exception as exc:
        log.warning("session %s failed: %s", c.session_id, mask_text(str(exc)))
        await _record_failure(c, exc)
        return "failed"


async def _give_back_holds(ctx: RunContext) -> None:
    """Holds a dead run left (a step it never stored): given back; the step is redone."""
    c = ctx.claim
    async with storage.transaction():
        for hold in await Step.select(Step.id, Step.body).where(Step.session_id == c.session_id, Step.kind == "hold"):
            await _settle(ctx, hold["id"], int(storage.loads(hold["body"])["amount"]), 0)


async def _settle(ctx: RunContext, hold_id: str, amount: int, cost: int, *, llm: object = None) -> bool:
    """Settle one hold of this session (charge `cost`, give the rest back) in the caller's
    transaction; an ended goal whose last step in flight this was is settled too."""
    c = ctx.claim
    if not await budget.settle_hold(c.goal_id, c.case_id, hold_id, amount, cost, llm=llm):
        return False
    await ending.settle(c.goal_id, ctx.platform)
    return True


async def _hold(ctx: RunContext, where: Where, amount: int, body: dict[str, Any], *, counts_step: bool) -> str:
    """Hold `amount` for a step, stored as a hold step; its id. A budget or step limit
    reached stops the run (the case needs a person); an ended goal stops it too."""
    c = ctx.claim
    hold_id = new_id("stp")
    async with storage.transaction():
        await _fence(c)
        refused = await budget.hold_step(c.goal_id, c.case_id, amount, counts_step=counts_step)
        if refused is None:
            await budget.take_hold(c.session_id, hold_id, next_seq(), {"amount": amount, **body}, now_ms())
    if refused is None:
        return hold_id
    if refused.reason == "ended":
        raise GoalEnded(c.session_id)
    await _needs_a_person(ctx, where, refused.reason)
    raise Stopped(c.session_id)


async def _give_back(ctx: RunContext, hold_id: str, amount: int) -> None:
    async with storage.transaction():
        await _settle(ctx, hold_id, amount, 0)


async def _model_step(ctx: RunContext, where: Where, steps: list[dict[str, Any]]) -> None:
    """One paid model turn (a budget or step limit reached raises Stopped: needs a person)."""
    c = ctx.claim
    price = to_micro(ctx.settings.get(LLM_STEP_COST.name) or LLM_STEP_COST.default or "0")
    hold_id = await _hold(ctx, where, price, {"for": "llm"}, counts_step=True)
    try:
        client, _cost = ctx.platform.provider("llm")
    except LookupError:
        await _give_back(ctx, hold_id, price)
        raise RuntimeError("no llm provider is configured (TOLLWAY_LLM_BASE_URL and TOLLWAY_LLM_MODEL)")
    messages = [{"role": "system", "content": _system(where)}, *transcript.messages(steps)]
    try:
        answer = await client.chat(messages, tool_definitions(where, ctx))
    except Exception:
        await _give_back(ctx, hold_id, price)
        raise
    async with storage.transaction():
        await _fence(c)
        if not await _settle(ctx, hold_id, price, price, llm=mask(answer)):
            raise LostLease(c.session_id)
        await Session.update({Session.steps: Session.steps + 1}).where(Session.id == c.session_id)


def _system(where: Where) -> str:
    goal = where.goal
    lines = [SYSTEM, f"The goal: {goal['goal']}"]
    if where.case_id is not None:
        lines.append(
            "You run one case of this goal: its task arrives as a message; events about it arrive the same way."
        )
    else:
        lines.append("You run the goal's root: events without a case and messages nobody else follows come to you.")
    return "\n".join(lines)


async def _run_calls(ctx: RunContext, where: Where, calls: list[dict[str, Any]]) -> bool:
    """Run the model's calls in order, each with its stored result; True when one ended the session."""
    ends = False
    for call in calls:
        name = call["function"]["name"]
        try:
            args = json.loads(call["function"].get("arguments") or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            await _store_result(ctx, call, {"error": f"arguments are not a JSON object: {exc}"})
            continue
        if name in service_tool_names(ctx):
            await _service_call(ctx, where, call, name, args)
            continue
        if name not in {d["function"]["name"] for d in tool_definitions(where)}:
            await _store_result(ctx, call, {"error": f"no tool {name!r} here"})
            continue
        if name == "read_repository_file":  # reaches the code host: never inside a transaction
            try:
                outcome = await repo_tools.read_repository_file(where, args, ctx.platform)
                await _store_result(ctx, call, outcome.result)
            except CallRefused as exc:
                await _store_result(ctx, call, {"error": str(exc)})
            continue
        outgoing = None
        async with storage.transaction():
            await _fence(ctx.claim)
            await budget.lock_goal(where.goal["id"])  # the goal before the case, as events lock them
            try:
                if name == "ask_person":
                    outcome, outgoing = await asks.ask_person(where, args, ctx.platform)
                elif name == "deliver_result":
                    outcome = await delivery.deliver_result(where, args, ctx.platform)
                elif name == "finish":
                    outcome = await case_tools.finish(where, args, ctx.platform)
                else:
                    outcome = await case_tools.EXECUTORS[name](where, args)
                result: dict[str, Any] = outcome.result
                ends = ends or outcome.ends_session
            except CallRefused as exc:
                result = {"error": str(exc)}
            await _insert_result(ctx.claim, call, result)
        if name == "deliver_result":
            await ctx.platform.webhooks_due()
        if outgoing is not None:
            await asks.send(ctx.platform, outgoing)
    return ends


def tool_definitions(where: Where, ctx: RunContext | None = None) -> list[dict[str, Any]]:
    """What the model may call in this session: the case tools (for a case also its asks and
    deliveries), repository reads, and the service's own tools, paid from the goal's budget."""
    tools = case_tools.definitions(where)
    if where.case_id is not None:
        tools += [asks.ASK_PERSON, delivery.DELIVER_RESULT]
    tools.append(repo_tools.READ_REPOSITORY_FILE)
    return tools + (service_tools.definitions(ctx.platform) if ctx is not None else [])


def service_tool_names(ctx: RunContext) -> set[str]:
    return {t.name for t in service_tools.callable_tools(ctx.platform)}


class Stopped(Exception):
    """The budget cannot pay a step: the case needs a person and this run ends."""


class GoalEnded(Exception):
    """The goal ended (completed, cancelled, expired): this run stops before its next step."""


async def _service_call(ctx: RunContext, where: Where, call: dict[str, Any], name: str, args: dict[str, Any]) -> None:
    """One of the service's tools: validated and priced, its price held on the budget, run,
    then receipted (goal_id, covered by the goal's budget) and charged with its stored result
    in one transaction, which also records the texts, calls and emails it sent (`sends`). A
    failed or refused call is not charged; a run that dies mid-call leaves a hold the next run
    gives back before the call is made again."""
    c = ctx.claim
    delegated = ctx.platform.delegated
    try:
        prepared = await delegated.prepare(name, args)
    except Exception as exc:  # the tool's refusal before payment: the model reads it
        await _store_result(ctx, call, _refusal(exc))
        return
    request_id = delegated.new_request_id()
    hold_id = await _hold(ctx, where, prepared.price, {"for": name, "call_id": call["id"]}, counts_step=False)
    try:
        output = msgspec.to_builtins(
            await delegated.run(prepared, agent_id=where.goal["agent_id"], request_id=request_id)
        )
    except Exception as exc:  # the tool failed: nothing is charged
        async with storage.transaction():
            await _fence(c)
            if not await _settle(ctx, hold_id, prepared.price, 0):
                raise LostLease(c.session_id)
            await _insert_result(c, call, _refusal(exc))
        return
    async with storage.transaction():
        await _fence(c)
        if not await _settle(ctx, hold_id, prepared.price, prepared.price):
            raise LostLease(c.session_id)
        receipt = await delegated.receipt(
            prepared, output, agent_id=where.goal["agent_id"], request_id=request_id, goal_id=c.goal_id
        )
        await sends.record(where, name, request_id, args, output)
        await _insert_result(
            c,
            call,
            {
                "ok": True,
                "receipt_id": receipt["receipt_id"],
                "price_usdc": receipt["amount_usdc"],
                "result": service_tools.fit(output),
            },
            cost=prepared.price,
        )


def _refusal(exc: BaseException) -> dict[str, Any]:
    return {
        "error": getattr(exc, "code", "internal_error"),
        "message": mask_text(str(getattr(exc, "message", None) or exc))[:2000],
        "details": mask(getattr(exc, "details", None)),
    }


async def _store_result(ctx: RunContext, call: dict[str, Any], result: dict[str, Any]) -> None:
    async with storage.transaction():
        await _fence(ctx.claim)
        await _insert_result(ctx.claim, call, result)


async def _insert_result(c: sessions.Claim, call: dict[str, Any], result: dict[str, Any], *, cost: int = 0) -> None:
    body = {"tool_call_id": call["id"], "name": call["function"]["name"], "content": json.dumps(mask(result))}
    await add_step(c.session_id, "tool", body, cost=cost)


async def _fence(c: sessions.Claim) -> None:
    if not await sessions.still_ours(c):
        raise LostLease(c.session_id)


async def _needs_a_person(ctx: RunContext, where: Where, reason: str) -> None:
    """The budget or step limit is reached: the case needs a person, spending stops, the
    goal's creator is told; the session waits for an event that gives it room."""
    c = ctx.claim
    now = now_ms()
    async with storage.transaction():
        if c.case_id is not None:
            await Case.update({Case.state: "needs_a_person", Case.updated_ms: now}).where(Case.id == c.case_id)
        await Session.update(
            {Session.status: "waiting", Session.lease_owner: None, Session.lease_until_ms: 0, Session.updated_ms: now}
        ).where(
            Session.id == c.session_id,
            Session.attempt == c.attempt,
        )
        key = None
        if c.case_id is not None:
            found = await Case.select(Case.case_key).where(Case.id == c.case_id).first()
            key = found["case_key"] if found else None
        what = "step limit" if reason == "steps" else "budget"
        await ctx.platform.notify(
            where.goal["agent_id"],
            "case_needs_a_person",
            f"A case of goal {c.goal_id} needs a person" if key else f"Goal {c.goal_id} needs a person",
            f"It reached its {what}; it spends nothing more until an event gives it more room.",
            {"goal_id": c.goal_id, "case_key": key, "reason": reason},
        )


async def _record_failure(c: sessions.Claim, exc: BaseException) -> None:
    try:
        async with storage.transaction():
            await add_step(c.session_id, "error", {"error": mask_text(str(exc))[:2000], "type": type(exc).__name__})
        await sessions.end_run(c, "failed")
    except Exception:  # the run's own bookkeeping failed: the lease runs out and another worker retries
        log.exception("session %s: could not record its failure", c.session_id)
