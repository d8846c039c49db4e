"""Query-string parameters of plugin routes: the parsers `tollway.query_int` (a whole
number within a range) and `tollway.query_flag` (a boolean), each refused with 400
`invalid_request` naming the parameter (absent or empty gives the default), and the
typed declarations a `Route` lists in `query` (`QueryInt`, `QueryFlag`, `QueryChoice`,
`QueryText`; `QueryDoc` for one its handler parses): one declaration parses the value and
renders its OpenAPI schema."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from tollway._core.basics.errors import Refusal
from tollway._core.basics.json_values import JSONObject, JSONValue

_WHOLE = re.compile(r"[0-9]{1,12}")
_FLAGS = {"true": True, "1": True, "false": False, "0": False}


def query_int(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """`name` as a whole number from `low` to `high` (`?limit=20`)."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if not _WHOLE.fullmatch(raw) or not low <= int(raw) <= high:
        raise Refusal(
            "invalid_request",
            f"{name} must be a whole number from {low} to {high}.",
            details=[{"field": name, "message": f"{low} to {high}"}],
        )
    return int(raw)


def query_flag(query: Mapping[str, str], name: str, default: bool = False) -> bool:
    """`name` as a boolean: true, false, 1 or 0 (any case)."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() not in _FLAGS:
        raise Refusal(
            "invalid_request",
            f"{name} must be true or false.",
            details=[{"field": name, "message": "expected a boolean"}],
        )
    return _FLAGS[raw.lower()]


@dataclasses.dataclass(frozen=True)
class QueryText:
    """A query parameter taken as it comes (a string, of at most `max_length` characters when set)."""

    name: str
    description: str
    max_length: int | None = None

    def read(self, query: Mapping[str, str]) -> str | None:
        raw = query.get(self.name)
        if raw is not None and self.max_length is not None and len(raw) > self.max_length:
            raise Refusal(
                "invalid_request",
                f"{self.name} must be at most {self.max_length} characters.",
                details=[{"field": self.name, "message": f"at most {self.max_length} characters"}],
            )
        return raw or None

    def schema(self) -> JSONObject:
        return {"type": "string", **({"maxLength": self.max_length} if self.max_length is not None else {})}


@dataclasses.dataclass(frozen=True)
class QueryInt:
    """A whole number from `low` to `high`, `default` when absent (`query_int`)."""

    name: str
    description: str
    default: int
    low: int
    high: int

    def read(self, query: Mapping[str, str]) -> int:
        return query_int(query, self.name, self.default, self.low, self.high)

    def schema(self) -> JSONObject:
        return {"type": "integer", "minimum": self.low, "maximum": self.high, "default": self.default}


@dataclasses.dataclass(frozen=True)
class QueryFlag:
    """A boolean (true, false, 1 or 0 in any case), `default` when absent (`query_flag`)."""

    name: str
    description: str
    default: bool = False

    def read(self, query: Mapping[str, str]) -> bool:
        return query_flag(query, self.name, self.default)

    def schema(self) -> JSONObject:
        return {"type": "boolean", "default": self.default}


@dataclasses.dataclass(frozen=True)
class QueryChoice:
    """One of `choices` (exactly as spelled), `default` when absent."""

    name: str
    description: str
    choices: tuple[str, ...]
    default: str | None = None

    def read(self, query: Mapping[str, str]) -> str | None:
        raw = query.get(self.name)
        if raw is None or raw == "":
            return self.default
        if raw not in self.choices:
            allowed = ", ".join(self.choices)
            raise Refusal(
                "invalid_request",
                f"{self.name} must be one of {allowed}.",
                details=[{"field": self.name, "message": f"one of {allowed}"}],
            )
        return raw

    def schema(self) -> JSONObject:
        return {
            "type": "string",
            "enum": list(self.choices),
            **({"default": self.default} if self.default is not None else {}),
        }


@dataclasses.dataclass(frozen=True)
class QueryDoc:
    """A query parameter the handler parses itself (from `RouteCall.query`, with its own
    refusals): only documented here, by its JSON schema."""

    name: str
    description: str
    json_schema: Mapping[str, JSONValue] = dataclasses.field(default_factory=dict, hash=False)

    def read(self, query: Mapping[str, str]) -> str | None:
        return query.get(self.name)

    def schema(self) -> dict[str, JSONValue]:
        return dict(self.json_schema)


QueryParam = QueryText | QueryInt | QueryFlag | QueryChoice | QueryDoc
QueryValue = str | int | bool | None  # what a declared query parameter reads as (`RouteCall.args`)


def declared(entry: QueryParam | tuple[str, str]) -> QueryParam:
    """A `Route.query` entry as a declaration: a bare (name, description) is text."""
    return QueryText(*entry) if isinstance(entry, tuple) else entry


__all__ = [
    "QueryChoice",
    "QueryDoc",
    "QueryFlag",
    "QueryInt",
    "QueryParam",
    "QueryValue",
    "QueryText",
    "declared",
    "query_flag",
    "query_int",
]
