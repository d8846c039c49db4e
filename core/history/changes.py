"""The Changes tool: the dated changes of one entity's recorded value, read from the
fact store (docs/history.md). Built over the live tool registry, which says which
attributes keep history and which of them are searches."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from tollway._core.basics.errors import Refusal, ServiceError
from tollway._core.basics.ids import now_ms
from tollway._core.basics.validation import FieldError, FieldErrors, convert, field_error
from tollway._core.history.keys import key_forms, search_key
from tollway._core.history.series import (
    ChangeRow,
    Series,
    first_row,
    has_public_series,
    keeps_private,
    series_changes,
    visible_series,
)
from tollway._core.history.store import stored_key, utc_day
from tollway._core.plugin_api.tool import Example, Tool, ToolContext

MAX_INPUT_CHARS = 10_000  # a search input, as compact JSON
MAX_LIMIT = 200
AUDIT_FIELDS = ("memo", "decisionContext")  # never part of a search's key

Attribute = Annotated[str, Meta(description="A data tool with history, e.g. vehicle_identification.")]
EntityKey = Annotated[str, Meta(min_length=1, description="Entity key, e.g. a VIN in capitals.")]
SearchInput = Annotated[dict[str, Any], Meta(description="Or a search's input, at most 10,000 characters.")]
Source = Annotated[str, Meta(description="Needed when the entity has several sources.")]
Since = _dt.date  # the first day
Until = Annotated[_dt.date, Meta(description="Last day (default today).")]
Limit = Annotated[int, Meta(ge=1, le=MAX_LIMIT, description="Most changes, oldest first.")]


class ChangesInput(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    attribute: Attribute
    key: EntityKey | None = None
    input: SearchInput | None = None
    source: Source | None = None
    since: Since
    until: Until | None = None
    limit: Limit = 50


class ChangesAnswer(msgspec.Struct):
    """The changes of one entity in a window of days, oldest first."""

    attribute: str
    key: str  # the key read (as asked, or in capitals), or for a search the hash of its normalised input
    recorded_since: str | None  # the day of the entity's first record; null when none from the source asked for
    partial: bool  # since is before recorded_since, or nothing is recorded from the source asked for
    changes: list[ChangeRow]
    truncated: bool  # the window holds more than `limit` changes


def today() -> _dt.date:
    return _dt.date.fromisoformat(utc_day(now_ms()))


# -- before payment -----------------------------------------------------------------------
def _request_problems(value: ChangesInput) -> list[FieldError]:
    """Shape problems msgspec cannot see: one of key and input, the input's size, the days' order."""
    problems: list[FieldError] = []
    if (value.key is None) == (value.input is None):
        words = "Give exactly one of key and input"
        problems += [FieldError("key", words), FieldError("input", words)]
    if value.input is not None:
        size = len(msgspec.json.encode(value.input).decode())
        if size > MAX_INPUT_CHARS:
            problems.append(
                FieldError("input", f"input must be at most {MAX_INPUT_CHARS:,} characters as JSON (it has {size:,})")
            )
    if value.until is not None and value.until < value.since:
        problems.append(FieldError("until", "until must not be before since"))
    elif value.until is None and value.since > today():
        problems.append(FieldError("since", "since is after today, the default until"))
    return problems


def _input_refusal(tool: Tool, exc: ServiceError) -> Refusal:
    """A refusal of the search input, its fields named under `input.`."""
    details = []
    for d in exc.details if isinstance(exc.details, list) else []:
        field = str(d.get("field", "$")) if isinstance(d, Mapping) else "$"
        path = "input" if field in ("$", "") else f"input{field}" if field.startswith("[") else f"input.{field}"
        message = str(d.get("message", exc.message)) if isinstance(d, Mapping) else exc.message
        if field not in ("$", "") and message.startswith(field + " "):
            message = path + message[len(field) :]
        details.append({"field": path, "message": message})
    return Refusal(
        "invalid_input",
        f"input is not a valid input of {tool.name}: {exc.message}",
        details=details or [{"field": "input", "message": exc.message}],
    )


def search_value(tool: Tool, raw: Mapping[str, Any]) -> Any:
    """`raw` validated as `tool` validates its own input (audit fields left out, as
    they are from a search's key), or a refusal naming the failing fields."""
    obj = {k: v for k, v in raw.items() if k not in AUDIT_FIELDS}
    try:
        value = convert(obj, tool.input_type, error=tool.shape_error)
    except ServiceError as exc:
        raise _input_refusal(tool, exc) from None
    if tool.check is not None:
        try:
            tool.check(value)
        except (FieldError, FieldErrors) as exc:
            raise _input_refusal(tool, field_error(exc)) from None
        except ServiceError as exc:
            # A 400 says the input is wrong; anything else (a source out of date) is
            # about the service's state, which a search's key does not depend on.
            if exc.status == 400:
                raise _input_refusal(tool, exc) from None
    return value


class ChangesTool:
    """The checks and the run of Changes, over the live registry `tools`."""

    def __init__(self, tools: Mapping[str, Tool], sources: Mapping[str, Any] | None = None) -> None:
        self.tools = tools
        # Watch sources keep history too (each poll records the source's values).
        self.sources = sources if sources is not None else {}

    def keeping_history(self) -> list[str]:
        return sorted({name for name, t in self.tools.items() if t.facts is not None} | set(self.sources))

    def check(self, value: ChangesInput) -> None:
        problems = _request_problems(value)
        if problems:
            raise FieldErrors(problems)
        tool = self.tools.get(value.attribute)
        if tool is None and value.attribute in self.sources and value.input is None:
            return  # a watch source's entity, by key
        if tool is None or tool.facts is None:
            names = self.keeping_history()
            message = (
                f"{value.attribute} is not a data tool that keeps history; those that do: {', '.join(names) or 'none'}"
            )
            raise Refusal(
                "invalid_input",
                message + ".",
                details=[{"field": "attribute", "message": message}],
                extra={"attributes": names},
            )
        if value.input is not None:
            if not tool.searches:
                message = f"{tool.name} is not a search: give the entity's key"
                raise Refusal("invalid_input", message + ".", details=[{"field": "input", "message": message}])
            search_value(tool, value.input)

    def entity_key(self, value: ChangesInput) -> str:
        if value.key is not None:
            return value.key
        return search_key(search_value(self.tools[value.attribute], value.input or {}))

    def key_forms(self, value: ChangesInput) -> tuple[str, ...]:
        """The keys read, in order: a key as written then as Benchmark normalises it; a search's hash."""
        key = self.entity_key(value)
        return key_forms(key) if value.key is not None else (key,)

    def _no_data(self, value: ChangesInput, key: str) -> Refusal:
        field = "key" if value.key is not None else "input"
        message = f"nothing is recorded for {value.attribute} {key}: its history starts when a caller looks it up"
        return Refusal(
            "no_data", message[0].upper() + message[1:] + ".", details=[{"field": field, "message": message}]
        )

    async def admit(self, value: ChangesInput) -> None:
        """Still before payment: an entity with no history is refused free (`no_data`, as
        Benchmark refuses an attribute with nothing recorded). Who calls is not known yet,
        so where the attribute holds agents' private series the call goes on, and the run
        refuses (refunded) when the caller may read none."""
        forms = self.key_forms(value)
        for key in forms:
            if await has_public_series(value.attribute, stored_key(key)):
                return
        if not await keeps_private(value.attribute):
            raise self._no_data(value, forms[0])

    async def _series(self, value: ChangesInput, agent_id: str | None) -> tuple[str, list[Series]]:
        """The key read (its first form with history the caller may see) and its series."""
        forms = self.key_forms(value)
        for key in forms:
            series = await visible_series(value.attribute, stored_key(key), agent_id)
            if series:
                return key, series
        raise self._no_data(value, forms[0])

    # -- after payment --------------------------------------------------------------------
    async def run(self, value: ChangesInput, ctx: ToolContext) -> ChangesAnswer:
        key, series = await self._series(value, ctx.agent_id)
        sources = sorted({s.source for s in series})
        if value.source is None and len(sources) > 1:
            message = f"{value.attribute} {key} has history from several sources; give one of them as source"
            raise Refusal(
                "invalid_input",
                message + ".",
                details=[{"field": "source", "message": message}],
                extra={"sources": sources},
            )
        if value.source is not None:
            series = [s for s in series if s.source == value.source]
        since, until = value.since.isoformat(), (value.until or today()).isoformat()
        found: list[tuple[int, ChangeRow]] = []
        truncated = False
        days = []
        for s in series:
            first = await first_row(s)
            if first is None:
                continue
            days.append(first[1])
            rows, more = await series_changes(s, first[0], since, until, value.limit)
            found += rows
            truncated = truncated or more
        found.sort(key=lambda item: (item[1].changed_on, item[0]))
        truncated = truncated or len(found) > value.limit
        recorded_since = min(days) if days else None
        return ChangesAnswer(
            attribute=value.attribute,
            key=key,
            recorded_since=recorded_since,
            partial=recorded_since is None or since < recorded_since,
            changes=[change for _, change in found[: value.limit]],
            truncated=truncated,
        )


DESCRIPTION = (
    "The dated changes of one entity's recorded value, from the lookups this service has answered: for an "
    "attribute (a data tool that keeps history), the entity's `key` (e.g. a VIN in capitals, an FDIC "
    "certificate) or the `input` a search was called with. Each change names the changed `field` (a dotted or "
    "indexed path; `$` when several fields changed at once; `$entity` when the entity stopped or started being "
    "listed), its values before and after, the day the later value was first seen and the source's own date "
    "for it. Oldest first. `recorded_since` is the day of the first record; `partial` is true when the window "
    "starts before it. A key is read as written, then in capitals; an entity with no history is refused "
    "(`no_data`) and not charged. Public facts are visible to everyone, private ones only to the agent whose "
    "call recorded them."
)


def changes_tool(tools: Mapping[str, Tool], sources: Mapping[str, Any] | None = None) -> Tool:
    """The Changes tool, reading `tools` and the watch `sources` (the live registries) for
    the attributes it serves."""
    impl = ChangesTool(tools, sources)

    async def run(value: ChangesInput, ctx: ToolContext) -> ChangesAnswer:
        return await impl.run(value, ctx)

    return Tool(
        name="changes",
        path="/v1/tools/changes",
        title="Changes",
        summary="Dated changes of a recorded entity, oldest first.",
        description=DESCRIPTION,
        category="data",
        subcategory="changes",
        input_type=ChangesInput,
        output_type=ChangesAnswer,
        run=run,
        price="0.005",
        family="history",
        payment_header="payment-signature",
        rate_limit="lookup",
        examples=(
            Example(
                title="Changes of a VIN's decoding",
                input={"attribute": "vehicle_identification", "key": "1HGCM82633A004352", "since": "2026-01-01"},
            ),
            Example(
                title="Changes of a bank search's answer",
                input={
                    "attribute": "company_bank_profile",
                    "input": {"name": "Bank of Hancock County"},
                    "since": "2026-01-01",
                    "limit": 20,
                },
            ),
        ),
        check=impl.check,
        admit=impl.admit,
        exactly_one_of=(("key", "input"),),
    )
