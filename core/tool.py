"""The one declaration of a tool: everything else (HTTP route, MCP tool, OpenAPI
entry, price quote, rate-limit category, docs, contract tests) is derived from it.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

import httpx
import msgspec

from .context import ContentCheck, PluginContext
from .errors import ServiceError
from .history.declare import Benchmarkable
from .money import to_micro
from .providers import Providers
from .sentences import first_sentence
from .settings_spec import Setting, setting_value
from .upstream_cache import UpstreamCache, begin_run

CATEGORIES = ("data", "verification", "communication", "commerce", "infrastructure", "agent_to_agent")
PaymentHeader = Literal["payment-signature", "X-Payment-Proof"]
Idempotency = Literal["required", "optional", "ignored"]
Mode = Literal["inline", "job"]
# The `status` of a job tool's 202 acceptance (web read says `processing`,
# research `pending`; acceptance answers may also say queued, accepted or active).
AcceptedStatus = Literal["pending", "processing", "queued", "accepted", "active"]
ACCEPTED_STATUSES = ("pending", "processing", "queued", "accepted", "active")
RATE_LIMIT_CATEGORIES = ("paid", "expensive", "free_read", "lookup")

_NAME = re.compile(r"^[a-z][a-z0-9_]{1,62}$")
_PATH = re.compile(r"^/v1/[a-z0-9/_-]+$")


@dataclasses.dataclass(frozen=True)
class Example:
    """One worked call: an input that validates, and what it is meant to show."""

    title: str
    input: Mapping[str, Any]


@dataclasses.dataclass
class ToolContext:
    """What a running tool may use: never the database, never payment state."""

    request_id: str
    agent_id: str | None
    http: httpx.AsyncClient
    settings: Mapping[str, str]
    provider_cost: int | None = None  # what the call cost upstream (micro-USDC), if known: kept by the receipt, never served
    reporter: Callable[[str], Awaitable[object]] | None = None  # job runs: where `report` sends progress (None inline)
    providers: Providers | None = None  # what `provider(kind)` reads
    upstream_cache: UpstreamCache | None = None  # registries' answers reused (None: never)
    content_rules: ContentCheck | None = None  # what `check_content` applies
    plugin: PluginContext | None = None  # the service's context: platform, settings, per-service state

    async def report(self, message: str) -> None:
        """Say which step a job is on ("reading 7/12"): the Job's `message` while it runs,
        pushed to subscribers. Does nothing for an inline call."""
        if self.reporter is not None:
            await self.reporter(message)

    def check_content(self, *texts: str | None) -> None:  # before sending any message (docs/limits.md)
        if self.content_rules is not None:  # refuses with `content_blocked` what the operator's rules block
            self.content_rules.check(*texts)

    def provider(self, kind: str) -> Any:
        """The client of the provider configured for `kind` (docs/providers.md). Each call
        adds the provider's cost estimate to `provider_cost`; none configured raises
        `provider_unavailable` (a tool declaring `provider_kind` is refused before payment)."""
        try:
            client, cost = self.providers.client(kind, self.http)  # type: ignore[union-attr]
        except (LookupError, AttributeError) as exc:
            raise ToolError("provider_unavailable", f"No {kind} provider is configured on this service.", status=503, details={"reason": "not_configured", "kind": kind}) from exc
        self.provider_cost = (self.provider_cost or 0) + cost
        return client

    def setting(self, key: Setting | str, default: str | None = None) -> str | None:
        """One of the family's settings by name (`ctx.setting("api_url")` or
        `ctx.setting(API_URL)`), trimmed; blank or absent gives the Setting's default,
        then `default`."""
        return setting_value(self.settings, key, default)


@dataclasses.dataclass(frozen=True)
class ToolContexts:
    """Makes the `ToolContext` of each run: the shared HTTP client and the tool family's settings."""

    http: httpx.AsyncClient
    family_settings: Callable[[str], Mapping[str, str]]
    providers: Providers | None = None
    upstream_cache: UpstreamCache | None = None
    content_rules: ContentCheck | None = None
    plugin: PluginContext | None = None  # handed to each run as `ToolContext.plugin`

    def for_run(self, tool: "Tool", request_id: str, agent_id: str | None) -> ToolContext:
        begin_run()  # the evidence of this run dates from the answers it uses
        return ToolContext(
            request_id=request_id, agent_id=agent_id, http=self.http, settings=self.family_settings(tool.family), providers=self.providers,
            upstream_cache=self.upstream_cache, content_rules=self.content_rules, plugin=self.plugin,
        )

    def require_configured(self, tool: "Tool") -> None:
        """Refuse a tool whose required settings are unset, or whose kind of provider has
        none configured: 503 `provider_unavailable` naming the variables to set (called
        before any quote or payment)."""
        if tool.provider_kind is not None and self.providers is not None:
            state = self.providers.status(tool.provider_kind)
            if not state.configured:
                raise ServiceError(
                    503,
                    "provider_unavailable",
                    f"{tool.name} is not configured on this service: {state.problem}. Nothing was charged.",
                    {"reason": "not_configured", "kind": tool.provider_kind, "settings": state.unset_settings},
                )
        missing = [s.env_var for s in tool.unconfigured(self.family_settings(tool.family))]
        if missing:
            raise ServiceError(
                503,
                "provider_unavailable",
                f"{tool.name} is not configured on this service: the operator must set {' and '.join(missing)}. Nothing was charged.",
                {"reason": "not_configured", "settings": missing},
            )


class ToolError(Exception):
    """A tool's own failure. The call is recorded failed and not charged.

    `code` is one of the failure codes of docs/api.md (provider_unavailable,
    rate_limited, invalid_input, internal_error, ...); `status` the HTTP-like
    status the fronts answer with.
    """

    def __init__(self, code: str, message: str, status: int = 502, details: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details = details


@dataclasses.dataclass(frozen=True)
class Fact:
    """One recordable fact a lookup's answer states about an entity, for the
    history features (Changes, Benchmark, Watches): e.g. attribute
    `vehicle_recalls`, key `HONDA|ACCORD|2021`, value `{"total": 4, ...}`."""

    attribute: str  # the data tool's name
    key: str  # the entity in the source's own terms (a VIN in capitals, a certificate, an entry number)
    value: Any  # JSON-able; numeric fields a benchmark may read live at the top level of a dict
    source: str  # evidence.source
    as_of: str | None = None  # the source's own date for the value
    public: bool = True  # facts about public sources are visible to every caller
    # Benchmark peer fields of the entity (e.g. {"make": "HONDA", "model_year": 2021}),
    # stored as indexed columns; names the tool's `benchmark.peers` declares.
    peers: Mapping[str, str | int] = dataclasses.field(default_factory=dict)
    # False leaves the fact out of Benchmark's peers (e.g. a county among states).
    benchmarked: bool = True


Price = int | str | Callable[[Any], int]


@dataclasses.dataclass(frozen=True)
class AcceptedJob:
    """A job tool's call as it is accepted and paid (what `Tool.on_accept` receives)."""

    request_id: str
    agent_id: str
    value: Any  # the validated input
    price: int  # micro-USDC charged
    receipt_id: str


@dataclasses.dataclass(frozen=True)
class Tool:
    """A paid tool, declared once by a plugin through `register_tools`. `price` is micro-USDC
    (int), a USDC decimal string ("0.005"), or a pure function of the validated input."""

    name: str  # the answer's `data.tool` string, e.g. "vehicle_recalls"
    path: str  # HTTP path, e.g. "/v1/tools/lookup/vehicle-recalls"
    title: str
    # What the tool does, for every front: no transport words (headers, status codes,
    # routes); each front adds how to pay, wait and retry in its own terms.
    description: str
    category: str  # a receipt category
    input_type: type[msgspec.Struct]
    output_type: type[msgspec.Struct]
    run: Callable[[Any, ToolContext], Awaitable[Any]]
    price: Price
    family: str  # plugin family: settings prefix TOLLWAY_<FAMILY>_*
    subcategory: str | None = None
    mode: Mode = "inline"
    payment_header: PaymentHeader = "payment-signature"
    idempotency: Idempotency = "ignored"
    idempotency_durable: bool = False  # its keys are kept for good, not for TOLLWAY_IDEMPOTENCY_TTL_S
    rate_limit: str = "lookup"
    examples: tuple[Example, ...] = ()
    # Checks msgspec constraints cannot express (e.g. "up to next year"); raises FieldError.
    check: Callable[[Any], None] | None = None
    # The error of a request whose shape is wrong (unknown field, wrong type, missing
    # field): `invalid_request` by default, or `invalid_input` for tools that answer every
    # input error that way (solve, predict), which then also carries a `code` (docs/api.md).
    shape_error: Literal["invalid_request", "invalid_input"] = "invalid_request"
    # Job mode: the `status` of the 202 acceptance answer, on every front and in the schemas.
    accepted_status: AcceptedStatus = "pending"
    # Job mode: the longest one attempt may run, and whether a failed job is refunded.
    time_limit_s: float = 60.0
    refund_failed_jobs: bool = True
    # CPU-heavy tools: `run` is a plain (picklable, module-level) function of the
    # input alone, executed in a process pool so the event loop never blocks.
    cpu_bound: bool = False
    # Lookups: how an answer maps to recordable facts, `facts(input, output) -> [Fact]`.
    # A tool with facts keeps history: Changes reads it (docs/history.md).
    facts: Callable[[Any, Any], Iterable[Fact]] | None = None
    # Which numeric fields of the facts Benchmark may rank, and their peer filters.
    benchmark: Benchmarkable | None = None
    # Searches: the tool's facts include one keyed `tollway.search_key(input)` (the hash
    # of the normalised input, never the input itself), so Changes accepts `input`.
    searches: bool = False
    # Async checks that read stored state and must refuse before payment (raise
    # `ServiceError`/`Refusal`), e.g. Benchmark's `no_data`; may answer a `tollway.Admission`.
    admit: Callable[[Any], Awaitable[Any]] | None = None
    # One sentence for compact listings (MCP tools/list); default: the description's first.
    summary: str | None = None
    # Groups of input fields of which a call gives exactly one (`check` enforces it; the
    # schemas say it as `oneOf`), e.g. (("name", "inchikey", "smiles"),).
    exactly_one_of: tuple[tuple[str, ...], ...] = ()
    # Settings of the tool's family it cannot run without (an upstream's API key): while
    # one is unset the tool stays listed, but a call is refused with 503
    # `provider_unavailable` naming the variable, before any quote or payment.
    requires: tuple[Setting, ...] = ()
    # The kind of provider the tool reaches its service through (`ctx.provider(kind)`,
    # docs/providers.md): while none is configured, refused like `requires`.
    provider_kind: str | None = None
    # Job mode: fields the 202 carries besides `request_id`, a pure function of it (compute:
    # `goal_id`, also written on the receipt), and the tool's own rows for an accepted call,
    # written in the transaction of its payment, receipt and job (compute: the goal).
    accepted_fields: Callable[[str], Mapping[str, str]] | None = None
    on_accept: Callable[["AcceptedJob"], Awaitable[None]] | None = None
    # Job mode: fields its Job resource adds (email: `email_tracking`).
    job_extras: Callable[[str], Awaitable[Mapping[str, Any] | None]] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must be lower_snake_case")
        if not _PATH.match(self.path):
            raise ValueError(f"tool path {self.path!r} must start with /v1/ and use lower-case segments")
        if self.category not in CATEGORIES:
            raise ValueError(f"tool {self.name}: category must be one of {CATEGORIES}")
        if self.rate_limit not in RATE_LIMIT_CATEGORIES:
            raise ValueError(f"tool {self.name}: rate_limit must be one of {RATE_LIMIT_CATEGORIES}")
        if isinstance(self.price, str):
            object.__setattr__(self, "price", to_micro(self.price))
        if isinstance(self.price, int) and self.price <= 0:
            raise ValueError(f"tool {self.name}: price must be positive")
        if self.cpu_bound and self.mode != "job":
            raise ValueError(f"tool {self.name}: cpu_bound tools run as jobs (mode='job')")
        if self.accepted_status not in ACCEPTED_STATUSES:
            raise ValueError(f"tool {self.name}: accepted_status must be one of {ACCEPTED_STATUSES}")
        if (self.accepted_fields or self.on_accept or self.job_extras) is not None and self.mode != "job":
            raise ValueError(f"tool {self.name}: accepted_fields, on_accept and job_extras are for job tools")
        if self.time_limit_s <= 0:
            raise ValueError(f"tool {self.name}: time_limit_s must be positive")
        if (self.benchmark is not None or self.searches) and self.facts is None:
            raise ValueError(f"tool {self.name}: benchmark and searches need facts")
        if any(s.family != self.family for s in self.requires):
            raise ValueError(f"tool {self.name}: required settings must be of its family {self.family!r}")
        fields = {f.encode_name for f in msgspec.structs.fields(self.input_type)}
        for group in self.exactly_one_of:
            if len(group) < 2 or not set(group) <= fields:
                raise ValueError(f"tool {self.name}: exactly_one_of group {group} must name two or more input fields")

    def unconfigured(self, settings: Mapping[str, str]) -> tuple[Setting, ...]:
        """The required settings that `settings` (the family's values) leaves unset."""
        return tuple(s for s in self.requires if setting_value(settings, s) is None)

    def quote(self, value: Any) -> int:
        """The price of one call with this validated input, in micro-USDC."""
        price = self.price(value) if callable(self.price) else self.price
        if not isinstance(price, int) or isinstance(price, bool) or price <= 0:
            raise ValueError(f"tool {self.name}: price function must return a positive int of micro-USDC")
        return price

    @property
    def short_description(self) -> str:
        return self.summary or first_sentence(self.description)

    @property
    def fixed_price(self) -> int | None:
        return None if callable(self.price) else int(self.price)  # type: ignore[arg-type]

    def input_schema(self) -> dict[str, Any]:
        return msgspec.json.schema(self.input_type)

    def output_schema(self) -> dict[str, Any]:
        return msgspec.json.schema(self.output_type)
