"""The `benchmark` tool: where a number stands among the current public numbers of
comparable entities that data tools have recorded (docs/history.md, "Benchmark").

Refused before payment: a wrong shape, both key and value, an attribute, field or
peer filter the data tool does not declare (`invalid_input`, listing what can be
benchmarked), nothing recorded for the attribute (`no_data`). Refused after payment,
and so refunded: several sources and none named (`invalid_input` with `sources`),
fewer than 20 peers (`too_few_peers`), a key outside the peer set (`not_in_population`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from tollway._core.basics.errors import Refusal
from tollway._core.basics.ids import iso
from tollway._core.basics.validation import FieldError, FieldErrors
from tollway._core.history import ranks
from tollway._core.history.declare import MAX_PEER_FIELDS
from tollway._core.history.store import utc_day
from tollway._core.plugin_api.tool import Example, Tool, ToolContext

MIN_PEERS = 20

PeerValue = Annotated[str, Meta(min_length=1, max_length=120)] | float


class BenchmarkInput(msgspec.Struct, forbid_unknown_fields=True):
    attribute: Annotated[str, Meta(min_length=1, max_length=64, description="Data tool, e.g. vehicle_complaints.")]
    field: Annotated[str, Meta(min_length=1, max_length=64, description="Its numeric field, e.g. total.")]
    peers: Annotated[
        # at most MAX_PEER_FIELDS, said in the schema and counted by `check`, beside the other rules
        dict[str, PeerValue],
        Meta(
            extra_json_schema={"maxProperties": MAX_PEER_FIELDS},
            description="Up to 5 of its peer filters, e.g. model_year; any case.",
        ),
    ] = {}
    key: (
        Annotated[str, Meta(min_length=1, max_length=256, description="Entity to place, e.g. HONDA|ACCORD|2019.")]
        | None
    ) = None
    value: Annotated[float, Meta(description="Number to place; not with key.")] | None = None
    source: (
        Annotated[str, Meta(min_length=1, max_length=120, description="Needed when facts come from several sources.")]
        | None
    ) = None


class BenchmarkResult(msgspec.Struct):
    attribute: str
    field: str
    peers: dict[str, str | int | float]
    source: str | None  # as requested
    count: int  # peers compared (at least 20)
    min: float
    p25: float
    median: float
    p75: float
    max: float
    as_of: str  # ISO 8601: the newest recorded update among the peers
    coverage: str  # what the peer set is, in words
    population: Literal["looked_up", "complete"]
    value: float | None  # the value placed: the one given, or the key's own number
    percentile: float | None  # 0 to 100: share of peers below it plus half the share equal


def benchmarkable(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    """What a request may name: each benchmarkable data tool with its fields and peer filters."""
    return [
        {"attribute": t.name, "fields": list(t.benchmark.fields), "peers": list(t.benchmark.peers)}
        for t in sorted(tools.values(), key=lambda t: t.name)
        if t.benchmark is not None
    ]


def coverage(attribute: str, count: int, peers: Mapping[str, Any], population: str, first_ms: int) -> str:
    where = (" with " + " and ".join(f"{name} {value}" for name, value in peers.items())) if peers else ""
    since = utc_day(first_ms)
    if population == "complete":
        return f"{count} {attribute} entities{where}, out of every entity the source lists, recorded since {since}"
    return f"{count} {attribute} entities{where} looked up by callers since {since}"


class _Benchmark:
    """The tool's checks and run over the live registry of data tools."""

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        self.tools = tools

    def _refuse_input(self, message: str, details: list[dict[str, str]]) -> Refusal:
        return Refusal("invalid_input", message, details=details, extra={"benchmarkable": benchmarkable(self.tools)})

    def check(self, value: BenchmarkInput) -> None:
        """Before payment: the shape rules, then what the named data tool declares."""
        shape = []
        if len(value.peers) > MAX_PEER_FIELDS:
            shape.append(
                FieldError("peers", f"give at most {MAX_PEER_FIELDS} peer filters (it has {len(value.peers)})")
            )
        if value.key is not None and value.value is not None:
            both = "give at most one of key and value"
            shape += [FieldError("key", both), FieldError("value", both)]
        if shape:  # every shape problem in one 400
            raise FieldErrors(shape)
        tool = self.tools.get(value.attribute)
        if tool is None or tool.benchmark is None:
            message = f"{value.attribute!r} is not a data tool whose facts can be benchmarked"
            raise self._refuse_input(
                message[0].upper() + message[1:] + ".", [{"field": "attribute", "message": message}]
            )
        declared = tool.benchmark
        problems = []
        if value.field not in declared.fields:
            problems.append(
                {
                    "field": "field",
                    "message": f"{value.attribute} declares no numeric field {value.field!r} (it has {', '.join(declared.fields)})",
                }
            )
        for name in value.peers:
            if name not in declared.peers:
                has = ", ".join(declared.peers) or "none"
                problems.append(
                    {
                        "field": f"peers.{name}",
                        "message": f"{value.attribute} declares no peer filter {name!r} (it has {has})",
                    }
                )
        if problems:
            raise self._refuse_input("; ".join(p["message"] for p in problems) + ".", problems)

    async def admit(self, value: BenchmarkInput) -> None:
        """Still before payment: something must be recorded for the attribute."""
        first, _ = await ranks.source_range(value.attribute)
        if first is None:
            raise Refusal(
                "no_data",
                f"Nothing is recorded for {value.attribute} yet: its facts are kept as callers look entities up.",
                details=[{"field": "attribute", "message": f"no recorded facts for {value.attribute}"}],
            )

    async def _source(self, value: BenchmarkInput) -> str:
        """The source read: the one named, or the attribute's only one."""
        if value.source is not None:
            if await ranks.has_source(value.attribute, value.source):
                return value.source
            message = f"no facts of {value.attribute} are recorded from source {value.source!r}"
        else:
            first, last = await ranks.source_range(value.attribute)
            if first == last:  # one source, or none left since the call was admitted (then no peers)
                return first or ""
            message = f"{value.attribute} has facts from several sources: name one in source"
        raise Refusal(
            "invalid_input",
            message[0].upper() + message[1:] + ".",
            details=[{"field": "source", "message": message}],
            extra={"sources": await ranks.sources(value.attribute)},
        )

    def _peer_set(self, value: BenchmarkInput, source: str) -> ranks.PeerSet:
        declared = self.tools[value.attribute].benchmark
        assert declared is not None
        filters = sorted(
            (ranks.PEER_COLUMNS[declared.peers.index(name)], ranks.peer_text(v)) for name, v in value.peers.items()
        )
        return ranks.PeerSet(value.attribute, value.field, source, tuple(filters))

    async def run(self, value: BenchmarkInput, ctx: ToolContext) -> BenchmarkResult:
        """After payment: any refusal here is recorded failed and refunded."""
        declared = self.tools[value.attribute].benchmark
        assert declared is not None
        peers = self._peer_set(value, await self._source(value))
        placed = value.value
        if value.key is not None:
            placed = await ranks.key_number(peers, value.key)
        found = await ranks.summarise(peers, placed)
        if found.count < MIN_PEERS:
            which = "match these peer filters" if value.peers else f"have a recorded {value.field}"
            raise Refusal(
                "too_few_peers",
                f"Only {found.count} {value.attribute} entities {which}; a benchmark needs at least {MIN_PEERS}.",
                extra={"count": found.count, "minimum": MIN_PEERS, "population": declared.population},
            )
        if value.key is not None and placed is None:
            elsewhere = await ranks.key_recorded(peers, value.key)
            why = (
                "is outside the peer set these filters select"
                if elsewhere
                else f"has no recorded number in {value.field}"
            )
            raise Refusal(
                "not_in_population",
                f"Entity {value.key!r} {why}.",
                details=[{"field": "key", "message": f"{value.key} {why}"}],
            )
        assert found.quartiles is not None and found.low is not None and found.high is not None
        assert found.first_ms is not None and found.last_ms is not None
        p25, median, p75 = found.quartiles
        asked = {name: int(v) if isinstance(v, float) and v.is_integer() else v for name, v in value.peers.items()}
        return BenchmarkResult(
            attribute=value.attribute,
            field=value.field,
            peers=asked,
            source=value.source,
            count=found.count,
            min=found.low,
            p25=p25,
            median=median,
            p75=p75,
            max=found.high,
            as_of=iso(found.last_ms),
            coverage=coverage(value.attribute, found.count, asked, declared.population, found.first_ms),
            population=declared.population,
            value=placed,
            percentile=None if placed is None else ranks.percentile_of(found.below, found.equal, found.count),
        )


def benchmark_tool(tools: Mapping[str, Tool]) -> Tool:
    """The `benchmark` tool over `tools`, the live registry (read at each call)."""
    bench = _Benchmark(tools)
    return Tool(
        name="benchmark",
        path="/v1/tools/benchmark",
        title="Benchmark",
        summary="Count, min, quartiles, max and a number's percentile among comparable entities callers looked up.",
        description=(
            "Where a number stands among comparable entities: the count, minimum, quartiles and maximum of one "
            "numeric field of a data tool's current public facts (e.g. `total` of vehicle_complaints), over the "
            "entities whose peer fields match the filters (e.g. make and model_year), and the percentile of a given "
            "value or of one entity's own number (share of peers below plus half the share equal). Quartiles are "
            "linearly interpolated. Peers are the entities recorded so far (those callers looked up, unless the data "
            "tool records its whole source), so the set grows with use; fewer than 20 peers is refused and refunded."
        ),
        category="data",
        subcategory="benchmark",
        input_type=BenchmarkInput,
        output_type=BenchmarkResult,
        run=bench.run,
        price="0.005",
        family="history",
        payment_header="payment-signature",
        rate_limit="lookup",
        examples=(
            Example(
                "The 2019 Honda Accord's complaint total among every 2019 vehicle looked up",
                {
                    "attribute": "vehicle_complaints",
                    "field": "total",
                    "peers": {"model_year": 2019},
                    "key": "HONDA|ACCORD|2019",
                },
            ),
            Example(
                "Where 40 disasters stand among states", {"attribute": "place_disasters", "field": "total", "value": 40}
            ),
        ),
        check=bench.check,
        admit=bench.admit,
    )
