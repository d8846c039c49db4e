"""The operator pages other plugins provide (`register_operator_pages`), rendered generically:
`/console/view/{name}` and `/console/view/{name}/{item}` lay out the plugin's typed `Report`
with one template, autoescaped; a link is kept only when it is a path of the console's own
(`/console/...`), any other address is shown as plain text (docs/console.md, "Operator pages")."""

from __future__ import annotations

import re

from tollway import Link, Page, Report, RouteCall

from . import sessions
from .pages import _platform, _route, refused, render, signed_in

# A same-site console path (no scheme, no backslash, no spaces); `//` and `..` are refused besides.
SAFE_HREF = re.compile(r"/console/[A-Za-z0-9._~%/?=&:+,-]*")
MAX_LEVEL = 6  # deepest indent the stylesheet draws; deeper rows are drawn at it


def safe_href(href: str) -> str | None:
    """`href` when it is a console path; None otherwise (the cell is shown as text)."""
    return href if SAFE_HREF.fullmatch(href) and "//" not in href and ".." not in href else None


def cell(value: object) -> dict[str, str | None]:
    """A cell or figure value as the template shows it: its text, and its link when kept."""
    if isinstance(value, Link):
        return {"text": value.text, "href": safe_href(value.href)}
    if value is None:
        return {"text": "", "href": None}
    return {"text": str(value), "href": None}


def laid_out(report: Report) -> dict[str, object]:
    """The report as the template reads it, every link checked."""
    return {
        "title": report.title,
        "sections": [
            {
                "heading": s.heading,
                "note": s.note,
                "figures": [{"label": f.label, "value": cell(f.value)} for f in s.figures],
                "table": None
                if s.table is None
                else {
                    "columns": s.table.columns,
                    "empty": s.table.empty,
                    "rows": [
                        {"level": min(max(r.level, 0), MAX_LEVEL), "cells": [cell(c) for c in r.cells]}
                        for r in s.table.rows
                    ],
                },
            }
            for s in report.sections
        ],
    }


async def _view(call: RouteCall, session: str) -> Page:
    name = call.params["name"]
    page = next((p for p in _platform(call).operator_pages() if p.name == name), None)
    if page is None:
        return refused(404, "Not found", "There is no such page: its plugin may not be installed.")
    item = call.params.get("item")
    report = await page.load(_platform(call), dict(call.query), item)
    if report is None:
        return refused(404, "Not found", f"{page.title} has no such item.")
    if not isinstance(report, Report):  # a plugin's bug: the service answers 500 and logs it
        raise TypeError(f"operator page {page.name!r} answered {type(report).__name__}, not a tollway.Report")
    return render(
        "view.html",
        csrf=sessions.csrf_for(session),
        here=f"/console/view/{page.name}",
        signed_in=True,
        page_name=page.name,
        item=item,
        report=laid_out(report),
    )


ROUTES = (
    _route(
        "GET",
        "/console/view/{name}",
        "console_view",
        "An operator page a plugin provides",
        signed_in(_view),
        statuses=(303, 404),
        param_docs=(("name", "The page's name (register_operator_pages)."),),
    ),
    _route(
        "GET",
        "/console/view/{name}/{item}",
        "console_view_item",
        "One item of an operator page a plugin provides",
        signed_in(_view),
        statuses=(303, 404),
        param_docs=(("name", "The page's name (register_operator_pages)."), ("item", "The item's id.")),
    ),
)
