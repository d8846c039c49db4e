"""The goal routes besides the paid compute call: the goal, its cases and one case (read
proof or access token, whatever the proof mode: goal records are private), events and
cancel (write proof or access token), and the result webhook's signing secret. Only the
goal's creator gets anything; anyone else gets 404."""

from __future__ import annotations

from tollway import Route, RouteCall, RouteReply, storage

from . import cases, ending, goals
from .wire import CaseAnswer, CaseList, EventAnswer, EventRequest, GoalAnswer, Page, WebhookSecret, WebhookSecretAnswer

BASE = "/v1/compute/{goal_id}"
TAGS = ("compute goals",)


async def goal_get(call: RouteCall) -> GoalAnswer:
    goal = await goals.owned(call.params["goal_id"], call.agent_id)
    return GoalAnswer(success=True, data=await goals.goal_state(goal))


async def cases_list(call: RouteCall) -> CaseList:
    goal = await goals.owned(call.params["goal_id"], call.agent_id)
    states, limit, offset = cases.parse_listing(call.query)
    found, total, counts = await cases.list_cases(goal["id"], states, limit, offset)
    return CaseList(success=True, data=found, page=Page(total=total, limit=limit, offset=offset), counts=counts)


async def case_get(call: RouteCall) -> CaseAnswer:
    goal = await goals.owned(call.params["goal_id"], call.agent_id)
    return CaseAnswer(success=True, data=await cases.case_record(goal["id"], call.params["key"], call.platform))


async def post_event(call: RouteCall) -> RouteReply:
    event: EventRequest = call.body
    async with storage.transaction():
        goal = await goals.owned(call.params["goal_id"], call.agent_id, lock=True)
        answer: EventAnswer = await cases.post_event(goal, event)
    await call.platform.publish(SESSIONS_CHANNEL, goal["id"])
    return RouteReply(202, answer)


async def cancel(call: RouteCall) -> GoalAnswer:
    async with storage.transaction():
        goal = await goals.owned(call.params["goal_id"], call.agent_id, lock=True)
        await ending.cancel(goal, call.platform)
        state = await goals.goal_state(await goals.owned(goal["id"], call.agent_id))
    await call.platform.webhooks_due()
    return GoalAnswer(success=True, data=state)


async def result_webhook(call: RouteCall) -> WebhookSecretAnswer:
    goal = await goals.owned(call.params["goal_id"], call.agent_id)
    return WebhookSecretAnswer(
        success=True,
        data=WebhookSecret(
            goal_id=goal["id"], result_webhook_url=goal["result_webhook_url"], secret=goal["webhook_secret"]
        ),
    )


SESSIONS_CHANNEL = "tollway_goal_sessions"

ROUTES = (
    Route(
        method="GET",
        path=BASE,
        name="goal_get",
        title="Read a goal",
        description="A goal you created: status, budget spent, held and returned, progress (steps, last action) and its done check.",
        handle=goal_get,
        auth="read",
        private=True,
        answer_type=GoalAnswer,
        tags=TAGS,
        mcp=True,
    ),
    Route(
        method="GET",
        path=f"{BASE}/cases",
        name="goal_cases",
        title="List a goal's cases",
        description="The goal's cases, oldest opened first; `state` filters by comma-separated tokens, `limit` 1 to 200 (default 50), "
        "`offset`; `counts` covers every case whatever the filter.",
        handle=cases_list,
        auth="read",
        private=True,
        answer_type=CaseList,
        tags=TAGS,
        mcp=True,
        query=(
            ("state", "Comma-separated lowercase states."),
            ("limit", "1 to 200, default 50."),
            ("offset", "Cases to skip."),
        ),
    ),
    Route(
        method="GET",
        path=f"{BASE}/cases/{{key}}",
        name="goal_case",
        title="Read one case",
        description="One case with its decisions, questions to people (asks) and result deliveries.",
        handle=case_get,
        auth="read",
        private=True,
        answer_type=CaseAnswer,
        tags=TAGS,
        mcp=True,
    ),
    Route(
        method="POST",
        path=f"{BASE}/events",
        name="goal_event",
        title="Send an event to a goal",
        description="Opens the case `case_key` names (outcome created), wakes it (already_open) or reopens a finished one (reopened); "
        "without case_key the event goes to the goal's root (sent_to_root). The same event_id twice is one event; "
        "an ended goal answers 409 goal_ended.",
        handle=post_event,
        auth="write",
        body_type=EventRequest,
        answer_type=EventAnswer,
        status=202,
        tags=TAGS,
        mcp=True,
        statuses=(400, 401, 404, 409, 429),
    ),
    Route(
        method="POST",
        path=f"{BASE}/cancel",
        name="goal_cancel",
        title="Cancel a goal",
        description="Ends a running goal you created: its sessions stop before their next step and, once no step is in flight, the "
        "unspent budget goes back to your credits (returned_usdc) and the result webhook gets goal.ended. Idempotent; "
        "409 goal_ended for a goal that completed or expired.",
        handle=cancel,
        auth="write",
        answer_type=GoalAnswer,
        tags=TAGS,
        mcp=True,
        statuses=(401, 404, 409, 429),
    ),
    Route(
        method="GET",
        path=f"{BASE}/result-webhook",
        name="goal_result_webhook",
        title="Read the result webhook's secret",
        description='The secret that signs the goal\'s result webhooks (X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">).',
        handle=result_webhook,
        auth="read",
        private=True,
        answer_type=WebhookSecretAnswer,
        tags=TAGS,
    ),
)
