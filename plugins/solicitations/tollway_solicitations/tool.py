"""The `government_solicitations` tool: its input/output types, its checks and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from tollway import Evidence, Example, Fact, FieldError, FieldErrors, Tool, ToolContext, search_key

from . import sam
from .notice import Solicitation

ATTRIBUTE = "government_solicitations"
SOURCE_KIND = "public"
DEFAULT_WINDOW_DAYS = 30
SEARCH_FIELDS = ("keywords", "naics", "notice_type")

NoticeId = Annotated[
    str, Meta(pattern=r"^[0-9A-Fa-f]{32}$", description="SAM.gov noticeId, 32 hexadecimal characters.")
]
Keywords = Annotated[str, Meta(min_length=2, max_length=200, description="Title words.")]
PostedFrom = Annotated[_dt.date, Meta(description="Default: 30 days before posted_to (a year with notice_id).")]
PostedTo = Annotated[_dt.date, Meta(description="Default: today.")]
Naics = Annotated[str, Meta(pattern=r"^[0-9]{2,6}$", description="NAICS code, 2 to 6 digits.")]
NoticeType = Literal[
    "Justification",
    "Presolicitation",
    "Award Notice",
    "Sources Sought",
    "Special Notice",
    "Solicitation",
    "Sale of Surplus Property",
    "Combined Synopsis/Solicitation",
    "Intent to Bundle Requirements (DoD-Funded)",
]
Limit = Annotated[int, Meta(ge=1, le=25, description="Most notices to return.")]


class SolicitationsInput(msgspec.Struct, forbid_unknown_fields=True):
    notice_id: NoticeId | None = None
    keywords: Keywords | None = None
    posted_from: PostedFrom | None = None
    posted_to: PostedTo | None = None
    naics: Naics | None = None
    notice_type: NoticeType | None = None
    limit: Limit = 10


class SolicitationsResult(msgspec.Struct):
    total: int  # every notice SAM.gov counted for the search (0 or 1 for a notice id); may exceed len(solicitations)
    solicitations: list[Solicitation]


class SolicitationsAnswer(msgspec.Struct):
    result: SolicitationsResult
    evidence: Evidence  # as_of: the latest posted_on among the notices returned; null when none


def latest_allowed() -> _dt.date:
    """Today's date somewhere on Earth: the latest posting date that is not in the future."""
    return (_dt.datetime.now(_dt.UTC) + _dt.timedelta(hours=14)).date()


def a_year_after(day: _dt.date) -> _dt.date:
    try:
        return day.replace(year=day.year + 1)
    except ValueError:  # 29 February
        return _dt.date(day.year + 1, 3, 1)


def window(value: SolicitationsInput) -> tuple[_dt.date, _dt.date]:
    """The posted-date window asked of SAM.gov, defaults filled in: `posted_to` today (or
    `posted_from`, when a caller east of UTC is already a day ahead)."""
    posted_to = value.posted_to or max(sam.today(), value.posted_from or sam.today())
    if value.notice_id is not None:
        default_from, _ = sam.notice_window(posted_to)
        return value.posted_from or default_from, posted_to
    return value.posted_from or posted_to - _dt.timedelta(days=DEFAULT_WINDOW_DAYS), posted_to


def _keywords(text: str) -> str:
    return " ".join(text.split())


def check(value: SolicitationsInput) -> None:
    """A notice id or a search, never both; sensible keywords; a posted window that is
    not in the future, in order, and shorter than a year. Every failing field is named."""
    errors: list[FieldError] = []
    if value.notice_id is not None:
        for name in SEARCH_FIELDS:
            if getattr(value, name) is not None:
                errors.append(
                    FieldError(name, "Give either notice_id or a search (keywords, naics, notice_type), not both")
                )
    if value.keywords is not None:
        words = _keywords(value.keywords)
        if len(words) < 2 or not any(c.isalnum() for c in words):
            errors.append(
                FieldError("keywords", "Expected at least 2 characters besides spaces, with a letter or digit")
            )
    latest = latest_allowed()
    for name in ("posted_from", "posted_to"):
        day = getattr(value, name)
        if day is not None and day > latest:
            errors.append(FieldError(name, f"{name} is in the future"))
    if not any(e.field.startswith("posted_") for e in errors):
        posted_from, posted_to = window(value)
        if posted_to < posted_from:
            errors.append(FieldError("posted_to", "posted_to must be on or after posted_from"))
        elif posted_to >= a_year_after(posted_from):
            field = "posted_to" if value.posted_to is not None else "posted_from"
            errors.append(
                FieldError(
                    field, "posted_from and posted_to must be less than a year apart (posted_to defaults to today)"
                )
            )
    if errors:
        raise FieldErrors(errors)


async def run(value: SolicitationsInput, ctx: ToolContext) -> SolicitationsAnswer:
    posted_from, posted_to = window(value)
    if value.notice_id is not None:
        found = await sam.fetch_notice(
            ctx.http, ctx.settings, value.notice_id.lower(), posted_from=posted_from, posted_to=posted_to
        )
        total, notices = (1, [found]) if found is not None else (0, [])
    else:
        page = await sam.search(
            ctx.http, ctx.settings, posted_from=posted_from, posted_to=posted_to, limit=value.limit,
            title=_keywords(value.keywords) if value.keywords else None, naics=value.naics, notice_type=value.notice_type,
        )  # fmt: skip
        total, notices = page.total, page.notices[: value.limit]
    dates = [n.posted_on for n in notices if n.posted_on]
    return SolicitationsAnswer(
        result=SolicitationsResult(total=total, solicitations=notices),
        evidence=Evidence.now(sam.SOURCE, source_kind=SOURCE_KIND, as_of=max(dates) if dates else None),
    )


def facts(value: SolicitationsInput, answer: SolicitationsAnswer) -> list[Fact]:
    """One fact per notice returned, keyed by its noticeId, the whole notice as value
    (the same value the watch source observes). A search is also recorded under the
    hash of its input: SAM.gov's total and the notice ids found, in order."""
    source = answer.evidence.source
    out = [
        Fact(attribute=ATTRIBUTE, key=n.notice_id, value=msgspec.to_builtins(n), source=source, as_of=n.posted_on)
        for n in answer.result.solicitations
    ]
    if value.notice_id is None:
        found = {"total": answer.result.total, "notice_ids": [n.notice_id for n in answer.result.solicitations]}
        out.append(
            Fact(attribute=ATTRIBUTE, key=search_key(value), value=found, source=source, as_of=answer.evidence.as_of)
        )
    return out


GOVERNMENT_SOLICITATIONS = Tool(
    name="government_solicitations",
    path="/v1/tools/lookup/government-solicitations",
    title="US government solicitations",
    summary="US federal contract opportunities on SAM.gov: a notice by id, or a search by title words, NAICS code, type and posting dates.",
    description=(
        "US federal contract opportunities (solicitations, presolicitations, sources sought, special and award "
        "notices) as SAM.gov publishes them: title, solicitation number, agency, posting date, type, set-aside, "
        "response deadline, NAICS and product codes, whether the notice is active, award details, points of "
        "contact, office and place of performance, attachment links and the SAM.gov page. Give `notice_id` for "
        "one notice (looked for among notices posted in the last year unless posted_from/posted_to say "
        "otherwise), or search by `keywords` in the title, `naics`, `notice_type` and a posting window "
        "(default the last 30 days, less than a year long). Results are in SAM.gov's order; `total` counts "
        "every match. The notices can be watched for changes by their notice id."
    ),
    category="data",
    subcategory="government_solicitations",
    input_type=SolicitationsInput,
    output_type=SolicitationsAnswer,
    run=run,
    price="0.005",
    family="solicitations",
    payment_header="payment-signature",
    rate_limit="lookup",
    examples=(
        Example(title="A notice by its SAM.gov id", input={"notice_id": "ff9642d70c15414a85940230450bda32"}),
        Example(
            title="Solicitations by title words and NAICS code",
            input={
                "keywords": "signal light",
                "naics": "335139",
                "posted_from": "2026-01-01",
                "posted_to": "2026-02-02",
                "limit": 5,
            },
        ),
    ),
    check=check,
    facts=facts,
    searches=True,
    requires=(sam.API_KEY,),
)
