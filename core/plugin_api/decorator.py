"""`@tollway.tool`: a `Tool` built from a typed async function.

    @tollway.tool(path="/v1/tools/weather/forecast", price="0.002")
    async def weather_forecast(ctx, city: str, days: Annotated[int, Meta(ge=1, le=16)] = 3) -> Forecast:
        \"\"\"Daily forecast for a city.\"\"\"

The parameters (less the context) become the input type, a msgspec Struct with their
defaults and `Annotated[..., Meta(...)]` constraints; the docstring is the description,
the function's name the tool's name, and its package `tollway_<family>` the family.
The answer is `{result: <what the function returns>}`, or the returned Struct itself
when its type has a `result` field (to add `evidence`).
"""

from __future__ import annotations

import copy
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import msgspec

from tollway._core.basics.json_values import JSONValue
from tollway._core.plugin_api import tool_declarations as declarations
from tollway._core.plugin_api.settings_spec import Setting
from tollway._core.plugin_api.tool import Example, Idempotency, Mode, PaymentHeader, Price, Tool, ToolContext
from tollway._core.plugin_api.tool_declarations import AcceptedJob, AcceptedStatus, Benchmarkable, Fact

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from tollway._core.calls.prepare import Admission

_FORBIDDEN = ("input_type", "output_type", "run", "cpu_bound")
# The input Struct the decorator makes from the function's parameters: what its callbacks get.
Input = msgspec.Struct
# An example's input, or several.
Examples = Mapping[str, JSONValue] | Example | Iterable[Mapping[str, JSONValue] | Example]


class ToolOptions(TypedDict, total=False):
    """The other `Tool` fields `@tollway.tool` passes on (the function gives the input and
    output types and `run`; a cpu_bound tool is declared as a `Tool`)."""

    subcategory: str | None
    summary: str | None
    mode: Mode
    payment_header: PaymentHeader
    idempotency: Idempotency
    idempotency_durable: bool
    rate_limit: str
    shape_error: Literal["invalid_request", "invalid_input"]
    time_limit_s: float
    credit_hold: bool | None
    job: declarations.JobDeclaration[Input] | None
    history: declarations.HistoryDeclaration[Input, msgspec.Struct] | None
    admission: declarations.AdmissionChecks[Input] | None
    accepted_status: AcceptedStatus
    refund_failed_jobs: bool
    accepted_fields: Callable[[str], Mapping[str, JSONValue]] | None
    on_accept: Callable[[AcceptedJob[Input]], Awaitable[None]] | None
    job_extras: Callable[[str], Awaitable[Mapping[str, JSONValue] | None]] | None
    facts: Callable[[Input, msgspec.Struct], Iterable[Fact]] | None
    benchmark: Benchmarkable | None
    searches: bool
    check: Callable[[Input], None] | None
    exactly_one_of: tuple[tuple[str, ...], ...]
    admit: Callable[[Input], Awaitable[Admission | None]] | None
    admit_payer: Callable[[Input, str], Awaitable[None]] | None
    requires: tuple[Setting, ...]
    provider_kind: str | None


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _family_of(fn: Callable[..., Any]) -> str:
    package = (fn.__module__ or "").split(".")[0]
    if package.startswith("tollway_") and len(package) > len("tollway_"):
        return package[len("tollway_") :]
    raise TypeError(
        f"@tollway.tool on {fn.__qualname__}: pass family=... (its module {fn.__module__!r} is not "
        "in a `tollway_<family>` package)"
    )


def _is_context(param: inspect.Parameter, hint: Any) -> bool:
    return hint is ToolContext or (param.name == "ctx" and hint is inspect.Parameter.empty)


def _meta_example(hint: Any) -> tuple[bool, Any]:
    """The first `Meta(examples=[...])` value of an `Annotated` hint, if any."""
    if typing.get_origin(hint) is typing.Annotated:
        for extra in hint.__metadata__:
            if isinstance(extra, msgspec.Meta) and extra.examples:
                return True, extra.examples[0]
    return False, None


def _default_spec(default: Any) -> Any:
    """msgspec refuses mutable defaults that are not empty: give those a factory."""
    if isinstance(default, (list, dict, set, bytearray)) and default:
        return msgspec.field(default_factory=lambda: copy.deepcopy(default))
    return default


def _examples(given: Any, fields: list[tuple[str, Any, Any]], input_type: type, name: str) -> tuple[Example, ...]:
    if given is None:  # one from the defaults and the Meta examples, when every field has one
        made: dict[str, Any] = {}
        for field, hint, default in fields:
            if default is not inspect.Parameter.empty:
                made[field] = msgspec.to_builtins(default)
                continue
            found, value = _meta_example(hint)
            if not found:
                return ()
            made[field] = value
        given = [Example("Example", made)]
    elif isinstance(given, (Mapping, Example)):
        given = [given]
    out = []
    for i, item in enumerate(given, 1):
        example = item if isinstance(item, Example) else Example("Example" if i == 1 else f"Example {i}", dict(item))
        try:  # as the kernel reads a request body
            msgspec.json.decode(msgspec.json.encode(dict(example.input)), type=input_type)
        except msgspec.ValidationError as exc:
            raise ValueError(f"@tollway.tool {name}: example {example.title!r} does not validate: {exc}") from None
        out.append(example)
    return tuple(out)


def _as(value: Any, typ: Any) -> Any:
    """`value` as a `typ`: kept when it already is one, converted (and so checked) otherwise."""
    try:
        if isinstance(value, typ):
            return value
    except TypeError:  # a generic alias (`list[Item]`) or a union: convert
        pass
    return msgspec.convert(value, typ)


def tool(
    *,
    path: str,
    price: Price[Input],
    name: str | None = None,
    family: str | None = None,
    title: str | None = None,
    description: str | None = None,
    category: str = "data",
    examples: Examples | None = None,
    **options: Unpack[ToolOptions],
) -> Callable[[Callable[..., Awaitable[object]]], Tool[Input, msgspec.Struct]]:
    """Decorate `async def name(ctx, field: type = default, ...) -> ResultType` into a `Tool`.

    `options` are the other `Tool` fields (`check`, `rate_limit`, `mode`, ...). The
    decorated name is the `Tool`; the function stays reachable as `tool.run.__wrapped__`.
    """
    refused = [k for k in _FORBIDDEN if k in options] + (
        ["job=JobDeclaration(cpu_bound=True)"] if getattr(options.get("job"), "cpu_bound", False) else []
    )
    if refused:
        raise TypeError(
            f"@tollway.tool takes no {', '.join(refused)}: the function's signature gives them; declare a Tool for those"
        )

    def build(fn: Callable[..., Awaitable[object]]) -> Tool[Input, msgspec.Struct]:
        tool_name = name or fn.__name__
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"@tollway.tool {tool_name}: the function must be `async def`")
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise TypeError(f"@tollway.tool {tool_name}: cannot resolve its annotations ({exc})") from None
        context_param: str | None = None
        fields: list[tuple[str, Any, Any]] = []
        for param in inspect.signature(fn).parameters.values():
            hint = hints.get(param.name, inspect.Parameter.empty)
            if context_param is None and _is_context(param, hint):
                context_param = param.name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise TypeError(f"@tollway.tool {tool_name}: parameter {param.name!r} must be a plain named parameter")
            if hint is inspect.Parameter.empty:
                raise TypeError(f"@tollway.tool {tool_name}: parameter {param.name!r} needs a type annotation")
            fields.append((param.name, hint, param.default))
        if "return" not in hints or hints["return"] is type(None):
            raise TypeError(f"@tollway.tool {tool_name}: annotate what it returns (`-> YourResult`)")
        text = description or inspect.getdoc(fn)
        if not text:
            raise TypeError(f"@tollway.tool {tool_name}: give it a docstring (the description agents read)")

        camel = _camel(tool_name)
        input_type = msgspec.defstruct(
            f"{camel}Input",
            [(f, h) if d is inspect.Parameter.empty else (f, h, _default_spec(d)) for f, h, d in fields],
            kw_only=True,
            forbid_unknown_fields=True,
            module=fn.__module__,
        )
        returned = hints["return"]
        whole = (
            isinstance(returned, type)
            and issubclass(returned, msgspec.Struct)
            and "result" in returned.__struct_fields__
        )
        output_type = (
            returned if whole else msgspec.defstruct(f"{camel}Answer", [("result", returned)], module=fn.__module__)
        )
        names = [f for f, _, _ in fields]

        @functools.wraps(fn)
        async def run(value: Input, ctx: ToolContext) -> msgspec.Struct:
            kwargs = {f: getattr(value, f) for f in names}
            if context_param is not None:
                kwargs[context_param] = ctx
            out = await fn(**kwargs)
            return _as(out, returned) if whole else output_type(result=_as(out, returned))

        return Tool(
            name=tool_name,
            path=path,
            title=title or tool_name.replace("_", " ").capitalize(),
            description=text,
            category=category,
            input_type=input_type,
            output_type=output_type,
            run=run,
            price=price,
            family=family or _family_of(fn),
            examples=_examples(examples, fields, input_type, tool_name),
            **options,
        )

    return build
