"""The grouped parts of a tool's declaration, each by purpose: how a job tool runs and is
accepted (`JobDeclaration`), what a lookup records for the history features
(`HistoryDeclaration`, `Fact`, `Benchmarkable`) and the checks made before payment
(`AdmissionChecks`). `Tool` takes them as `job=`, `history=`, `admission=`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import msgspec

from tollway._core.basics.json_values import JSONValue
from tollway._core.plugin_api.settings_spec import Setting

if TYPE_CHECKING:
    from tollway._core.calls.prepare import Admission

# A tool's input and output types (`Tool.input_type`, `Tool.output_type`): the declaration's
# callbacks take what the tool takes and answers.
In = TypeVar("In", bound=msgspec.Struct)
Out = TypeVar("Out", bound=msgspec.Struct)

# The `status` of a job tool's 202 acceptance (web read says `processing`,
# research `pending`; acceptance answers may also say queued, accepted or active).
AcceptedStatus = Literal["pending", "processing", "queued", "accepted", "active"]
ACCEPTED_STATUSES = ("pending", "processing", "queued", "accepted", "active")
MAX_PEER_FIELDS = 5  # the peer columns of the fact store (and the most filters a request may give)
_FIELD = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclasses.dataclass(frozen=True)
class AcceptedJob(Generic[In]):
    """A job tool's call as it is accepted and paid (what `JobDeclaration.on_accept` receives)."""

    request_id: str
    agent_id: str
    value: In  # the validated input
    price: int  # micro-USDC charged
    receipt_id: str


@dataclasses.dataclass(frozen=True)
class JobDeclaration(Generic[In]):
    """How a job tool is accepted and run: `Tool(job=JobDeclaration(...))` makes it a job tool."""

    # The `status` of the 202 acceptance answer, on every front and in the schemas.
    accepted_status: AcceptedStatus = "pending"
    refund_failed_jobs: bool = True  # a failed job gives its payment back
    # CPU-heavy tools: `run` is a plain (picklable, module-level) function of the
    # input alone, executed in a process pool so the event loop never blocks.
    cpu_bound: bool = False
    # Extension slots, filled by the plugin: fields the 202 carries besides `request_id`, a
    # pure function of it (compute: its goal, also written on the receipt); the tool's own rows
    # for an accepted call, written in the transaction of its payment, receipt and job
    # (compute: the goal); and fields its Job resource adds (email: its tracking).
    accepted_fields: Callable[[str], Mapping[str, JSONValue]] | None = None
    on_accept: Callable[[AcceptedJob[In]], Awaitable[None]] | None = None
    job_extras: Callable[[str], Awaitable[Mapping[str, JSONValue] | None]] | None = None

    def problems(self, tool: str, mode: str) -> list[str]:
        out = (
            []
            if self.accepted_status in ACCEPTED_STATUSES
            else [f"tool {tool}: accepted_status must be one of {ACCEPTED_STATUSES}"]
        )
        if self.cpu_bound and mode != "job":
            out.append(f"tool {tool}: cpu_bound tools run as jobs (mode='job')")
        if (self.accepted_fields or self.on_accept or self.job_extras) is not None and mode != "job":
            out.append(f"tool {tool}: accepted_fields, on_accept and job_extras are for job tools")
        return out


@dataclasses.dataclass(frozen=True)
class Benchmarkable:
    """`fields`: numeric fields at the top level of the tool's fact values (e.g. `total`);
    `peers`: names of the `Fact.peers` entries a request may filter on (e.g. `make`,
    `model_year`), matched case-insensitively; `population`: `looked_up` when the facts
    come from callers' lookups, `complete` when the tool's facts cover its whole source."""

    fields: tuple[str, ...]
    peers: tuple[str, ...] = ()
    population: Literal["looked_up", "complete"] = "looked_up"

    def __post_init__(self) -> None:
        if not self.fields:
            raise ValueError("Benchmarkable needs at least one numeric field")
        if len(self.peers) > MAX_PEER_FIELDS:
            raise ValueError(f"Benchmarkable declares at most {MAX_PEER_FIELDS} peer fields")
        for name in (*self.fields, *self.peers):
            if not _FIELD.match(name):
                raise ValueError(f"Benchmarkable field {name!r} must be lower_snake_case")
        if self.population not in ("looked_up", "complete"):
            raise ValueError("population must be looked_up or complete")


_NO_PEERS: Any = object()  # `Fact`'s peers not given: a new empty dict each time


@dataclasses.dataclass(frozen=True, init=False)
class Fact:
    """One recordable fact a lookup's answer states about an entity, for the
    history features (Changes, Benchmark, Watches): e.g. attribute
    `vehicle_recalls`, key `HONDA|ACCORD|2021`, value `{"total": 4, ...}`."""

    attribute: str  # the data tool's name
    key: str  # the entity in the source's own terms (a VIN in capitals, a certificate, an entry number)
    value: JSONValue  # numeric fields a benchmark may read live at the top level of a dict
    source: str  # evidence.source
    as_of: str | None = None  # the source's own date for the value
    public: bool = True  # facts about public sources are visible to every caller
    # Benchmark peer fields of the entity (e.g. {"make": "HONDA", "model_year": 2021}),
    # stored as indexed columns; names the tool's `benchmark.peers` declares.
    peers: Mapping[str, str | int] = dataclasses.field(default_factory=dict)
    # False leaves the fact out of Benchmark's peers (e.g. a county among states).
    benchmarked: bool = True

    def __init__(
        self,
        attribute: str,
        key: str,
        value: JSONValue,
        source: str,
        as_of: str | None = None,
        public: bool = True,
        peers: Mapping[str, str | int] = _NO_PEERS,
        benchmarked: bool = True,
    ) -> None:
        # the generated frozen `__init__`, in one step: it sets each field through
        # `object.__setattr__`, a call each (a lookup makes a fact on every call)
        self.__dict__.update(
            attribute=attribute,
            key=key,
            value=value,
            source=source,
            as_of=as_of,
            public=public,
            peers={} if peers is _NO_PEERS else peers,
            benchmarked=benchmarked,
        )


@dataclasses.dataclass(frozen=True)
class HistoryDeclaration(Generic[In, Out]):
    """What a lookup keeps for the history features (docs/history.md)."""

    # How an answer maps to recordable facts, `facts(input, output) -> [Fact]`.
    # A tool with facts keeps history: Changes reads it.
    facts: Callable[[In, Out], Iterable[Fact]] | None = None
    # Which numeric fields of the facts Benchmark may rank, and their peer filters.
    benchmark: Benchmarkable | None = None
    # Searches: the tool's facts include one keyed `tollway.search_key(input)` (the hash
    # of the normalised input, never the input itself), so Changes accepts `input`.
    searches: bool = False

    def problems(self, tool: str, mode: str) -> list[str]:
        return (
            [f"tool {tool}: benchmark and searches need facts"]
            if (self.benchmark is not None or self.searches) and self.facts is None
            else []
        )


@dataclasses.dataclass(frozen=True)
class AdmissionChecks(Generic[In]):
    """The checks a call passes before any payment (their refusals charge nothing)."""

    # Checks msgspec constraints cannot express (e.g. "up to next year"); raises FieldError.
    check: Callable[[In], None] | None = None
    # Groups of input fields of which a call gives exactly one (`check` enforces it; the
    # schemas say it as `oneOf`), e.g. (("name", "inchikey", "smiles"),).
    exactly_one_of: tuple[tuple[str, ...], ...] = ()
    # Async checks that read stored state and must refuse before payment (raise
    # `ServiceError`/`Refusal`), e.g. Benchmark's `no_data`; may answer a `tollway.Admission`.
    admit: Callable[[In], Awaitable[Admission | None]] | None = None
    # Async checks of the paying agent's stored state (`admit_payer(input, agent_id)`), made
    # once the payer is known (credits: the caller; x402: the signed payment's wallet) and
    # before anything is charged or settled; raise `ServiceError`/`Refusal` to refuse, e.g. a
    # number of its own the agent would need but the operator's cap leaves no room for.
    admit_payer: Callable[[In, str], Awaitable[None]] | None = None
    # Settings of the tool's family it cannot run without (an upstream's API key): while
    # one is unset the tool stays listed, but a call is refused with 503
    # `provider_unavailable` naming the variable, before any quote or payment.
    requires: tuple[Setting, ...] = ()
    # The kind of provider the tool reaches its service through (`ctx.provider(kind)`,
    # docs/providers.md): while none is configured, refused like `requires`.
    provider_kind: str | None = None

    def problems(self, tool: str, mode: str) -> list[str]:
        return []


GROUPS: dict[str, type] = {"job": JobDeclaration, "history": HistoryDeclaration, "admission": AdmissionChecks}


__all__ = [
    "ACCEPTED_STATUSES",
    "AcceptedJob",
    "AcceptedStatus",
    "AdmissionChecks",
    "Benchmarkable",
    "Fact",
    "GROUPS",
    "HistoryDeclaration",
    "In",
    "JobDeclaration",
    "MAX_PEER_FIELDS",
    "Out",
]
