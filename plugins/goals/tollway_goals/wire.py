"""The goals plugin's request and answer shapes (compute goal, events, cases), as the
service reference names them; money is a 6-decimal USDC string outside."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

# A lowercase state token; USDC as a decimal string (or whole dollars); a case key: letters,
# digits and . _ : - (no slash: it is a path segment).
Token = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
Amount = Annotated[str, Meta(pattern=r"^[0-9]{1,7}(\.[0-9]{1,6})?$")] | Annotated[int, Meta(ge=0, le=10_000_000)]
CaseKey = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
DEFAULT_BUDGET_USDC = "5.00"
# A goal's budget: its price and what the loop may spend. The least (and the default when
# left out) is shown in the schema; the compute tool's check refuses a smaller one, naming
# it beside every other bad field.
Budget = Annotated[
    Annotated[str, Meta(pattern=r"^[0-9]{1,7}(\.[0-9]{1,6})?$")]
    | Annotated[int, Meta(le=10_000_000, extra_json_schema={"minimum": 5})],
    Meta(
        description=f"USDC: the goal's price and all it may spend; at least {DEFAULT_BUDGET_USDC}, and {DEFAULT_BUDGET_USDC} when "
        "left out. The unspent part is returned when the goal ends.",
        extra_json_schema={"default": DEFAULT_BUDGET_USDC},
    ),
]


class AgentLimits(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    max_depth: Annotated[int, Meta(ge=1, le=10)] = 3
    max_awake: Annotated[int, Meta(ge=1, le=100)] = 20


class DoneCheck(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    # The cases done check: done when at least `min_cases` cases exist and every case is in
    # one of `finished_states` (a state in `owner_required_for` counts only with an owner).

    kind: Literal["cases"]
    finished_states: Annotated[list[Token], Meta(min_length=1, max_length=50)]
    owner_required_for: Annotated[list[Token], Meta(max_length=50)] = []
    min_cases: Annotated[int, Meta(ge=1, le=100_000)] = 1


class GoalParams(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    agent_limits: AgentLimits | UnsetType = UNSET
    result_webhook_url: Annotated[str, Meta(min_length=8, max_length=2048)] | UnsetType = UNSET
    done_check: DoneCheck | UnsetType = UNSET
    budget_usdc: Budget | UnsetType = UNSET
    one_off: bool = True


class ComputeInput(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A compute goal: what the agent loop should achieve, and its limits."""

    goal: Annotated[str, Meta(min_length=1, max_length=10_000)]
    params: GoalParams | UnsetType = UNSET


class ComputeResult(msgspec.Struct):
    """The compute job's result: the goal as it was started."""

    goal_id: str
    status: str
    budget_usdc: str
    cases_enabled: bool


class EventRequest(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    event_id: Annotated[str, Meta(min_length=1, max_length=200)]
    task: Annotated[str, Meta(min_length=1, max_length=10_000)]
    case_key: CaseKey | UnsetType = UNSET
    budget_usdc: Amount | UnsetType = UNSET
    step_limit: Annotated[int, Meta(ge=1, le=10_000)] | UnsetType = UNSET


class EventAnswer(msgspec.Struct):
    target: Literal["case", "root"]
    case_key: str | None
    outcome: Literal["created", "already_open", "reopened", "sent_to_root"]


class Case(msgspec.Struct):
    key: str
    state: str
    owner: str | None
    next_action: str | None
    due_date: str | None
    evidence: list[str]
    status: str
    task: str
    session_id: str | None
    parent_id: str | None
    depth: int
    budget_usdc: str | None
    held_usdc: str
    step_limit: int | None
    opened_at: str
    updated_at: str
    ended_at: str | None
    age_seconds: int


class Decision(msgspec.Struct):
    id: str
    decision: str
    reason: str | None
    at: str


class Ask(msgspec.Struct):
    id: str
    kind: str
    status: str
    person_name: str
    person_address: str
    question: str
    chases: int
    deadline_at: str
    escalated_at: str | None
    answer: dict[str, Any] | None
    created_at: str


class DeliveryAttempt(msgspec.Struct):
    """One POST of a result webhook: when, the receiver's HTTP status (null: no answer), why it failed."""

    attempt: int
    at: str
    status_code: int | None
    error: str | None
    duration_ms: int | None


class Delivery(msgspec.Struct):
    id: str
    status: str
    attempts: list[DeliveryAttempt]
    last_error: str | None
    next_attempt_at: str | None
    created_at: str


class CaseRecord(Case):
    decisions: list[Decision]
    asks: list[Ask]
    deliveries: list[Delivery]


class Page(msgspec.Struct):
    total: int
    limit: int
    offset: int


class CaseList(msgspec.Struct):
    success: bool
    data: list[Case]
    page: Page
    counts: dict[str, int]


class CaseAnswer(msgspec.Struct):
    success: bool
    data: CaseRecord


class WebhookSecret(msgspec.Struct):
    goal_id: str
    result_webhook_url: str | None
    secret: str
    signature_header: str = "X-Service-Signature"
    scheme: str = 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">'


class WebhookSecretAnswer(msgspec.Struct):
    success: bool
    data: WebhookSecret


class DoneCheckState(msgspec.Struct):
    """The cases done check as given (defaults filled in) and where it stands."""

    kind: str
    finished_states: list[str]
    owner_required_for: list[str]
    min_cases: int
    met: bool
    cases: int
    finished: int


class LastAction(msgspec.Struct):
    """The goal's newest model turn or tool call: when, in which case (null: the root)."""

    at: str
    case_key: str | None
    kind: Literal["model", "tool"]
    name: str | None  # the tool called (kind tool), or the tools the model asked for, comma-separated
    summary: str


class GoalProgress(msgspec.Struct):
    model_steps: int
    tool_calls: int
    sessions: dict[str, int]  # session status -> how many
    last_action: LastAction | None
    last_activity_at: str


class GoalState(msgspec.Struct):
    """Our read of a goal (its lifecycle is the service's own design)."""

    goal_id: str
    status: Literal["running", "completed", "cancelled", "expired"]
    goal: str
    budget_usdc: str
    spent_usdc: str
    held_usdc: str
    returned_usdc: str | None  # set once the goal ended and no step was in flight any more
    cases_enabled: bool
    done_check: DoneCheckState | None
    progress: GoalProgress
    created_at: str
    updated_at: str
    ended_at: str | None


class GoalAnswer(msgspec.Struct):
    success: bool
    data: GoalState
