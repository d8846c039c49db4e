"""Operator pages: a plugin's read-only report for the service's operator (`register_operator_pages`),
declared as `OperatorPage` and answered as a typed, render-neutral `Report` the console lays out."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping

import msgspec

from tollway._core.plugin_api.context import Platform

NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")  # the page's word in /console/view/{name}


class Link(msgspec.Struct, frozen=True):
    """A cell or figure that links to another page of the console (a path starting
    `/console/`; the console shows any other address as plain text)."""

    text: str
    href: str

    @classmethod
    def agent(cls, agent_id: str) -> Link:
        """An agent's id, linking its page in the console (balance and ledger)."""
        return cls(agent_id, f"/console/agents/{agent_id}")

    @classmethod
    def job(cls, job_id: str) -> Link:
        """A job's id (its request id), linking its page in the console."""
        return cls(job_id, f"/console/jobs/{job_id}")

    @classmethod
    def item(cls, page: str, item: str) -> Link:
        """An item's id, linking its view on the operator page `page`."""
        return cls(item, f"/console/view/{page}/{item}")


# What a cell or a figure holds: text (money as its 6-decimal string), a number, a link, or nothing.
Cell = str | int | float | Link | None


class Figure(msgspec.Struct, frozen=True):
    label: str
    value: Cell


class Row(msgspec.Struct, frozen=True):
    """One table row; `level` indents it under the row above (a tree: 0 at the top)."""

    cells: tuple[Cell, ...]
    level: int = 0


class Table(msgspec.Struct, frozen=True):
    columns: tuple[str, ...]
    rows: tuple[Row, ...] = ()
    empty: str = "Nothing to show."  # said instead of the table when it has no rows


class Section(msgspec.Struct, frozen=True):
    heading: str
    figures: tuple[Figure, ...] = ()
    table: Table | None = None
    note: str | None = None


class Report(msgspec.Struct, frozen=True):
    title: str
    sections: tuple[Section, ...] = ()


# load(platform, query, item): the report of the page (item None) or of one of its items
# (`/console/view/{name}/{item}`); None when there is no such item (the console answers 404).
ReportLoader = Callable[[Platform, Mapping[str, str], str | None], Awaitable[Report | None]]


@dataclasses.dataclass(frozen=True)
class OperatorPage:
    """A page of the operator console a plugin provides: `/console/view/{name}`, titled
    `title` in the console's navigation, whose content `load` reads (read-only: SQL over the
    plugin's own tables, kernel figures through the `Platform`). Never put a secret in it."""

    name: str
    title: str
    load: ReportLoader
    description: str = ""

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise ValueError(f"operator page name {self.name!r}: lowercase letters, digits and '-', 1 to 40")
        if not self.title.strip():
            raise ValueError(f"operator page {self.name!r} needs a title")
