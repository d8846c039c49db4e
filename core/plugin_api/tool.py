"""The one declaration of a tool: everything else (HTTP route, MCP tool, OpenAPI
entry, price quote, rate-limit category, docs, contract tests) is derived from it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, Literal, TypeVar, Union
from urllib.parse import quote

import httpx
import msgspec

from tollway._core.basics.errors import ServiceError
from tollway._core.basics.json_values import JSONObject, JSONValue
from tollway._core.basics.money import to_micro
from tollway._core.basics.sentences import first_sentence
from tollway._core.plugin_api.context import ContentCheck, PluginContext
from tollway._core.plugin_api.providers import Providers
from tollway._core.plugin_api.settings_spec import Setting, setting_value
from tollway._core.plugin_api.tool_declarations import (
    GROUPS,
    AcceptedJob,
    AcceptedStatus,
    AdmissionChecks,
    Benchmarkable,
    Fact,
    HistoryDeclaration,
    In,
    JobDeclaration,
    Out,
)
from tollway._core.plugin_api.upstream_cache import UpstreamCache, begin_run

if TYPE_CHECKING:
    from tollway._core.calls.prepare import Admission
    from tollway._core.jobs.parked import Parked

CATEGORIES = ("data", "verification", "communication", "commerce", "infrastructure", "agent_to_agent")
PaymentHeader = Literal["payment-signature", "X-Payment-Proof"]
Idempotency = Literal["required", "optional", "ignored"]
Mode = Literal["inline", "job"]
RATE_LIMIT_CATEGORIES = ("paid", "expensive", "free_read", "lookup")

_NAME = re.compile(r"^[a-z][a-z0-9_]{1,62}$")
_PATH = re.compile(r"^/v1/[a-z0-9/_-]+(\{[a-z_][a-z0-9_]*\}[a-z0-9/_-]*)*$")
_PATH_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@dataclasses.dataclass(frozen=True)
class Example:
    """One worked call: an input that validates, and what it is meant to show."""

    title: str
    input: Mapping[str, JSONValue]


@dataclasses.dataclass
class ToolContext:
    """What a running tool may use: never the database, never payment state."""

    request_id: str
    agent_id: str | None
    http: httpx.AsyncClient
    settings: Mapping[str, str]
    provider_cost: int | None = (
        None  # what the call cost upstream (micro-USDC), if known: kept by the receipt, never served
    )
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

    def provider(self, kind: str) -> object:
        """The client of the provider configured for `kind` (docs/providers.md): whatever the
        chosen provider's `build` made, of the duck type its kind agrees on. Each call
        adds the provider's cost estimate to `provider_cost`; none configured raises
        `provider_unavailable` (a tool declaring `provider_kind` is refused before payment)."""
        try:
            client, cost = self.providers.client(kind, self.http)  # type: ignore[union-attr]
        except (LookupError, AttributeError) as exc:
            raise ToolError(
                "provider_unavailable",
                f"No {kind} provider is configured on this service.",
                status=503,
                details={"reason": "not_configured", "kind": kind},
            ) from exc
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
    # tool name -> the family's settings mapping its required settings were all found in
    _configured: dict[str, Mapping[str, str]] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def for_run(self, tool: Tool, request_id: str, agent_id: str | None) -> ToolContext:
        begin_run()  # the evidence of this run dates from the answers it uses
        return ToolContext(
            request_id=request_id,
            agent_id=agent_id,
            http=self.http,
            settings=self.family_settings(tool.family),
            providers=self.providers,
            upstream_cache=self.upstream_cache,
            content_rules=self.content_rules,
            plugin=self.plugin,
        )

    def require_configured(self, tool: Tool) -> None:
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
        settings = self.family_settings(tool.family)
        if self._configured.get(tool.name) is settings:  # found complete in this very mapping before
            return
        missing = [s.env_var for s in tool.unconfigured(settings)]
        if not missing:
            if type(settings) is MappingProxyType:  # the registry's: the same one until a setting is declared
                self._configured[tool.name] = settings
        else:
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

    def __init__(self, code: str, message: str, status: int = 502, details: JSONValue = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details = details


# micro-USDC, a USDC decimal string, or a pure function of the validated input.
Price = Union[int, str, Callable[[In], int]]
# What a run answers: the output (or, for a job, `tollway.Parked`: someone else finishes it).
# A cpu_bound tool's run is a plain function of the input alone, run in a process pool.
Run = Union[Callable[[In, "ToolContext"], Awaitable[Union[Out, "Parked"]]], Callable[[In], Out]]


@dataclasses.dataclass(frozen=True)
class Tool(Generic[In, Out]):
    """A paid tool, declared once by a plugin through `register_tools`. `price` is micro-USDC
    (int), a USDC decimal string ("0.005"), or a pure function of the validated input.

    Grouped declarations say the rest by purpose: `job=JobDeclaration(...)` (a job tool),
    `history=HistoryDeclaration(...)` (a lookup's facts), `admission=AdmissionChecks(...)`
    (checks before payment). Their flat keywords (`accepted_status=`, `facts=`, `admit=`, ...)
    are still accepted and hold the values; the groups read back from them (`tool.job.on_accept`
    is `tool.on_accept`)."""

    # -- what it is, for every front --------------------------------------------------
    name: str  # the answer's `data.tool` string, e.g. "vehicle_recalls"
    path: str  # HTTP path, e.g. "/v1/tools/lookup/vehicle-recalls"
    title: str
    # What the tool does, for every front: no transport words (headers, status codes,
    # routes); each front adds how to pay, wait and retry in its own terms.
    description: str
    category: str  # a receipt category
    input_type: type[In]
    output_type: type[Out]
    run: Run[In, Out]
    price: Price[In]
    family: str  # plugin family: settings prefix TOLLWAY_<FAMILY>_*
    subcategory: str | None = None
    examples: tuple[Example, ...] = ()
    # One sentence for compact listings (MCP tools/list); default: the description's first.
    summary: str | None = None
    # -- how it is called -------------------------------------------------------------
    mode: Mode = "inline"  # "job" when `job=` is given
    payment_header: PaymentHeader = "payment-signature"
    idempotency: Idempotency = "ignored"
    idempotency_durable: bool = False  # its keys are kept for good, not for TOLLWAY_IDEMPOTENCY_TTL_S
    rate_limit: str = "lookup"
    # The error of a request whose shape is wrong (unknown field, wrong type, missing
    # field): `invalid_request` by default, or `invalid_input` for tools that answer every
    # input error that way (solve, predict), which then also carries a `code` (docs/api.md).
    shape_error: Literal["invalid_request", "invalid_input"] = "invalid_request"
    # The longest one run may take, for a paid call, a job attempt or a goal's call alike.
    time_limit_s: float = 60.0
    # An inline call paid from credits: True takes the credits before the run (a hold, ended
    # with the outcome: two commits); False runs first and takes them in the one commit that
    # writes the receipt. None lets the kernel choose: a hold for a tool that pays a provider
    # (`provider_kind`) or runs in the process pool (`cpu_bound`), one commit otherwise
    # (`holds_credits`; docs/payments.md, "Credits").
    credit_hold: bool | None = None
    # -- grouped declarations (core/plugin_api/tool_declarations.py) ------------------------------
    job: dataclasses.InitVar[JobDeclaration[In] | None] = None
    history: dataclasses.InitVar[HistoryDeclaration[In, Out] | None] = None
    admission: dataclasses.InitVar[AdmissionChecks[In] | None] = None
    # -- the groups' fields, flat (what a group given above fills) ---------------------
    accepted_status: AcceptedStatus = "pending"
    refund_failed_jobs: bool = True
    cpu_bound: bool = False
    accepted_fields: Callable[[str], Mapping[str, JSONValue]] | None = None
    on_accept: Callable[[AcceptedJob[In]], Awaitable[None]] | None = None
    job_extras: Callable[[str], Awaitable[Mapping[str, JSONValue] | None]] | None = None
    facts: Callable[[In, Out], Iterable[Fact]] | None = None
    benchmark: Benchmarkable | None = None
    searches: bool = False
    check: Callable[[In], None] | None = None
    exactly_one_of: tuple[tuple[str, ...], ...] = ()
    admit: Callable[[In], Awaitable[Admission | None]] | None = None
    admit_payer: Callable[[In, str], Awaitable[None]] | None = None
    requires: tuple[Setting, ...] = ()
    provider_kind: str | None = None

    def __post_init__(
        self,
        job: JobDeclaration[In] | None,
        history: HistoryDeclaration[In, Out] | None,
        admission: AdmissionChecks[In] | None,
    ) -> None:
        for group_name, group in (("job", job), ("history", history), ("admission", admission)):
            if group is not None and not getattr(
                group, "_read_back", False
            ):  # dataclasses.replace passes read-back groups
                self._join(group_name, group)
                if group_name == "job":  # a job declaration makes a job tool
                    object.__setattr__(self, "mode", "job")
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must be lower_snake_case")
        if not _PATH.match(self.path):
            raise ValueError(
                f"tool path {self.path!r} must start with /v1/ and use lower-case segments and {{field}} parameters"
            )
        if self.category not in CATEGORIES:
            raise ValueError(f"tool {self.name}: category must be one of {CATEGORIES}")
        if self.rate_limit not in RATE_LIMIT_CATEGORIES:
            raise ValueError(f"tool {self.name}: rate_limit must be one of {RATE_LIMIT_CATEGORIES}")
        if isinstance(self.price, str):
            object.__setattr__(self, "price", to_micro(self.price))
        if isinstance(self.price, int) and self.price <= 0:
            raise ValueError(f"tool {self.name}: price must be positive")
        for group_name in GROUPS:
            for problem in getattr(self, group_name).problems(self.name, self.mode):
                raise ValueError(problem)
        if self.time_limit_s <= 0:
            raise ValueError(f"tool {self.name}: time_limit_s must be positive")
        if any(s.family != self.family for s in self.requires):
            raise ValueError(f"tool {self.name}: required settings must be of its family {self.family!r}")
        fields = {f.encode_name for f in msgspec.structs.fields(self.input_type)}
        if not set(self.path_fields) <= fields:
            raise ValueError(f"tool {self.name}: each {{name}} in its path must be an input field")
        for one_of in self.exactly_one_of:
            if len(one_of) < 2 or not set(one_of) <= fields:
                raise ValueError(f"tool {self.name}: exactly_one_of group {one_of} must name two or more input fields")

    def _join(
        self, group_name: str, group: JobDeclaration[In] | HistoryDeclaration[In, Out] | AdmissionChecks[In]
    ) -> None:
        """The flat fields from a given group; a flat keyword also given (not its default)
        that says otherwise is refused."""
        names = [f.name for f in dataclasses.fields(GROUPS[group_name])]
        clash = [n for n in names if getattr(self, n) != _FLAT_DEFAULTS[n] and getattr(self, n) != getattr(group, n)]
        if clash:
            raise ValueError(f"tool {self.name}: give {', '.join(clash)} inside {group_name}=, not beside it")
        for n in names:
            object.__setattr__(self, n, getattr(group, n))

    @property
    def holds_credits(self) -> bool:
        """Whether an inline call paid from credits takes them before its run (`credit_hold`)."""
        if self.credit_hold is not None:
            return self.credit_hold
        return self.provider_kind is not None or self.cpu_bound

    def unconfigured(self, settings: Mapping[str, str]) -> tuple[Setting, ...]:
        """The required settings that `settings` (the family's values) leaves unset."""
        return tuple(s for s in self.requires if setting_value(settings, s) is None)

    def quote(self, value: In) -> int:
        """The price of one call with this validated input, in micro-USDC."""
        price = self.price(value) if callable(self.price) else self.price
        if not isinstance(price, int) or isinstance(price, bool) or price <= 0:
            raise ValueError(f"tool {self.name}: price function must return a positive int of micro-USDC")
        return price

    @property
    def path_fields(self) -> tuple[str, ...]:
        """Input fields the HTTP path carries (`/v1/tools/website/{site_id}/update`): the
        HTTP front puts each into the body; MCP and the kernel see ordinary input fields."""
        return tuple(_PATH_FIELD.findall(self.path))

    def path_for(self, values: Mapping[str, JSONValue]) -> str:
        """The concrete HTTP path of a call with these input values (`quote` the values)."""
        return _PATH_FIELD.sub(lambda m: quote(str(values.get(m.group(1), "")), safe=""), self.path)

    @property
    def short_description(self) -> str:
        return self.summary or first_sentence(self.description)

    @property
    def fixed_price(self) -> int | None:
        return None if callable(self.price) else int(self.price)  # type: ignore[arg-type]

    def input_schema(self) -> JSONObject:
        return msgspec.json.schema(self.input_type)

    def output_schema(self) -> JSONObject:
        return msgspec.json.schema(self.output_type)


# The flat keywords' defaults: a flat keyword changed from its default beside its group is refused.
_FLAT_DEFAULTS = {f.name: f.default for cls in GROUPS.values() for f in dataclasses.fields(cls)}


_Group = TypeVar("_Group", JobDeclaration, HistoryDeclaration, AdmissionChecks)


def _read_back(tool: Tool[In, Out], cls: type[_Group]) -> _Group:
    """A group declaration made from the tool's flat fields."""
    group = cls(**{f.name: getattr(tool, f.name) for f in dataclasses.fields(cls)})
    object.__setattr__(group, "_read_back", True)  # the fields already say it
    return group


def _job(tool: Tool[In, Out]) -> JobDeclaration[In]:
    return _read_back(tool, JobDeclaration)


def _history(tool: Tool[In, Out]) -> HistoryDeclaration[In, Out]:
    return _read_back(tool, HistoryDeclaration)


def _admission(tool: Tool[In, Out]) -> AdmissionChecks[In]:
    return _read_back(tool, AdmissionChecks)


# `tool.job`, `tool.history`, `tool.admission` (set after the class: their names are its InitVars)
for _group_name, _read in (("job", _job), ("history", _history), ("admission", _admission)):
    setattr(Tool, _group_name, property(_read, doc=f"The tool's `{_group_name}=` declaration, read from its fields."))
