"""The `people_research` job tool: its declaration, price, checks before payment and the run
that puts the pieces together — the enrichment provider's record, web searches, the pages
read with web read's address rules, disambiguation (`candidates.py`), synthesis with the
`llm` provider when one is configured (`synth.py`), extractive otherwise.

Nothing found, or nothing that fits the hints, fails the job (`enrichment_exhausted`),
refunded. Results are the caller's alone: the tool declares no facts, so nothing it finds
is recorded for the history features."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Mapping
from typing import cast

from msgspec import UNSET

from tollway import (
    Admission,
    Example,
    FieldError,
    FieldErrors,
    Refusal,
    Tool,
    ToolContext,
    ToolError,
    iso,
    now_ms,
    to_micro,
)
from tollway_enrich.tools import Enrichment
from tollway_web.research.model import Page
from tollway_web.research.reader import WebReader
from tollway_web.research.tool import provider_searcher, provider_writer
from tollway_web.search_tool import normalise_url

from . import candidates, extract, optouts, sensitive, synth
from .match import url_host
from .wire import (
    EMAIL,
    HINTS,
    Candidate,
    Cited,
    PeopleMeta,
    PeopleResearchInput,
    PeopleResearchResult,
    PersonProfile,
    Providers,
    Source,
)

log = logging.getLogger(__name__)
FAMILY = "people"
QUICK_PRICE, DEEP_PRICE = "0.10", "0.25"
PAGES = {"quick": 5, "deep": 12}  # pages read at most
HITS = {"quick": 8, "deep": 10}  # results asked of each search
READERS = 4  # pages read at once
MAX_CANDIDATES = 5
_TRUE = {"1", "true", "yes", "on"}


def price(value: PeopleResearchInput) -> int:
    return to_micro(DEEP_PRICE if value.depth == "deep" else QUICK_PRICE)


def check(value: PeopleResearchInput) -> None:
    if value.email is not UNSET and not EMAIL.match(str(value.email)):
        raise FieldError("email", "email must be an email address (name@domain.tld)")
    if all(getattr(value, hint) is UNSET for hint in HINTS):
        raise FieldErrors(
            FieldError(hint, "give at least one of company, location, email and url besides the name") for hint in HINTS
        )


def _hints(value: PeopleResearchInput) -> dict[str, str]:
    return {h: str(getattr(value, h)) for h in HINTS if getattr(value, h) is not UNSET}


async def admit(value: PeopleResearchInput) -> Admission:
    """Before any quote or payment: a person on the operator's opt-out list is refused 403
    `opted_out`; the purpose goes on the receipt's decisionContext."""
    hints = _hints(value)
    await optouts.refuse_listed(
        name=value.name,
        companies=[hints.get("company", "")],
        emails=[hints.get("email", "")],
        domains=[url_host(hints["url"])] if "url" in hints else [],
    )
    return Admission(decision_context={"purpose": value.purpose})


def found_opted_out() -> ToolError:
    # The contract's job failure codes have no opt-out: this is its "no data for the person"
    # (and says no more, so the failure does not tell who asked not to be researched).
    return ToolError(
        "enrichment_exhausted",
        "No result can be given for the person found. The payment is refunded.",
        status=404,
    )


def nothing_found(why: str) -> ToolError:
    return ToolError(
        "enrichment_exhausted",
        f"{why}; supply more identifiers (company, location, email, url). The payment is refunded.",
        status=404,
    )


def queries(value: PeopleResearchInput) -> list[str]:
    hints = _hints(value)
    quoted = f'"{value.name}"'
    company, location = hints.get("company", ""), hints.get("location", "")
    first = " ".join(p for p in (quoted, company, location) if p)
    if value.depth == "quick":
        return [first]
    more = [f"{quoted} {company}" if company else "", f"{quoted} {location}" if location else "", quoted]
    if "email" in hints and hints["email"].rsplit("@", 1)[1] not in candidates.FREE_MAIL:
        more.append(f"{quoted} {hints['email'].rsplit('@', 1)[1]}")
    if "url" in hints:
        more.append(f"{quoted} {url_host(hints['url'])}")
    more.append(f"{quoted} profile")
    return list(dict.fromkeys(q for q in (first, *more) if q))


async def _record(ctx: ToolContext, value: PeopleResearchInput) -> tuple[candidates.Record | None, str | None]:
    """The enrichment provider's record of the person (None when none is configured, it
    knows nobody, or it fails: the web is searched all the same), and the provider's name."""
    if ctx.providers is None or not ctx.providers.status("enrichment").configured:
        return None, None
    chosen = ctx.providers.chosen("enrichment")
    name = chosen.name if chosen is not None else "enrichment"
    hints = _hints(value)
    params = {"name": value.name}
    for hint, param in (("company", "company"), ("location", "location"), ("email", "email"), ("url", "profile")):
        if hint in hints:
            params[param] = hints[hint]
    try:
        person = await cast(Enrichment, ctx.provider("enrichment")).person(params)
    except ToolError as exc:
        log.info("people research %s: the enrichment provider failed (%s)", ctx.request_id, exc.code)
        return None, name
    return (candidates.record_of(person, name) if person else None), name


def _allow_private(ctx: ToolContext) -> bool:
    """Web read's own setting (TOLLWAY_WEB_ALLOW_PRIVATE_ADDRESSES) governs the pages read here."""
    web = ctx.plugin.settings("web") if ctx.plugin is not None else {}
    return (web.get("allow_private_addresses") or "").strip().lower() in _TRUE


async def _read_all(reader: WebReader, urls: list[str]) -> tuple[list[Page], int]:
    gate = asyncio.Semaphore(READERS)

    async def one(url: str) -> Page | None:
        async with gate:
            try:
                return await reader.read(url)
            except ToolError as exc:
                log.info("people research: %s not read (%s)", url, exc.code)
                return None

    read = await asyncio.gather(*(one(u) for u in urls))
    pages = [p for p in read if p is not None]
    return pages, len(urls) - len(pages)


def _sensitive_page(page: Page) -> bool:
    """A page whose title or address (its words: /news/dana-reyes-arrested) touches a sensitive category."""
    return sensitive.touches(page.title) or sensitive.touches(re.sub(r"[/_.?=&+-]+", " ", page.url))


def _safe_record(record: candidates.Record | None) -> tuple[candidates.Record | None, int]:
    """The record less any value touching a sensitive category (and how many were dropped)."""
    if record is None:
        return None, 0
    fields = {f: getattr(record, f) for f in ("role", "employer", "location")}
    dropped = {f: None for f, v in fields.items() if sensitive.touches(v)}
    return dataclasses.replace(record, **dropped), len(dropped)


async def _refuse_found(profile: PersonProfile, record: candidates.Record | None) -> None:
    """The opt-out list checked again against what was found (a work email, an employer,
    the hosts of the links): a person on it fails the job, refunded."""
    try:
        await optouts.refuse_listed(
            name=profile.names[0].value if profile.names else None,
            companies=[profile.employer.value] if profile.employer else [],
            emails=[record.work_email or ""] if record is not None else [],
            domains=[url_host(c.value) for c in profile.links]
            + ([record.employer_domain] if record is not None and record.employer_domain else []),
        )
    except Refusal as exc:
        raise found_opted_out() from exc


def _cited(profiles: list[PersonProfile]) -> set[str]:
    """Every source the answer cites: `sources` lists these and no other (a page of a candidate
    left out, or read but naming nobody, is not shown)."""
    out: set[str] = set()
    for p in profiles:
        for value in (*p.names, *p.links, p.role, p.employer, p.location, p.summary):
            if value is not None:
                out.update(value.sources)
    return out


def _merged(profile: PersonProfile, written: Mapping[str, Cited]) -> PersonProfile:
    return PersonProfile(
        names=profile.names,
        role=written.get("role", profile.role),
        employer=written.get("employer", profile.employer),
        location=written.get("location", profile.location),
        links=profile.links,
        summary=written.get("summary", profile.summary),
    )


async def run(value: PeopleResearchInput, ctx: ToolContext) -> PeopleResearchResult:
    hints = _hints(value)
    await ctx.report("asking the enrichment provider")
    record, enrichment_name = await _record(ctx, value)
    record, withheld = _safe_record(record)
    searcher = provider_searcher(ctx)
    asked = queries(value)
    found: list[str] = [hints["url"]] if "url" in hints else []
    failure: ToolError | None = None
    for n, query in enumerate(asked, 1):
        await ctx.report(f"searching {n}/{len(asked)}")
        try:
            hits = await searcher.search(query, HITS[value.depth])
        except ToolError as exc:
            failure = exc
            continue
        found += [h.url for h in hits]
    if failure is not None and len(found) == ("url" in hints) and record is None:
        raise failure  # every search failed and nothing else is known: the provider's failure, refunded
    urls = list({normalise_url(u): u for u in reversed(found)}.values())[::-1][: PAGES[value.depth]]
    await ctx.report(f"reading {len(urls)} pages")
    pages, failed = await _read_all(WebReader(ctx.http, allow_private=_allow_private(ctx)), urls)
    usable = [p for p in pages if not _sensitive_page(p)]  # a page whose title or address says one is not cited
    withheld += len(pages) - len(usable)
    mentions = [m for p in usable if (m := extract.mention(value.name, p.url, p.title, p.markdown)) is not None]
    withheld += sum(m.withheld for m in mentions)
    groups = candidates.group(mentions, record)
    if not groups:
        raise nothing_found("Nothing public was found about this person")
    scored = sorted(((candidates.score(g, hints), g) for g in groups), key=lambda s: -s[0][0])
    fitting = [(s, g) for s, g in scored if s[0] >= candidates.FIT]
    if not fitting:
        raise nothing_found("The people found do not fit the hints given")
    ambiguous = len(fitting) > 1 and fitting[1][0][0] >= fitting[0][0][0] - candidates.CLOSE
    writer = provider_writer(ctx)
    synthesis, note = (
        "extractive",
        ("Extractive: every value is taken from the sources' own sentences (no language model is configured)."),
    )
    profile: PersonProfile | None = None
    listed: list[Candidate] = []
    if ambiguous:
        for (match, matched), g in fitting[:MAX_CANDIDATES]:
            one = candidates.profile_of(g, value.name, match)
            try:
                await _refuse_found(one, g.record)
            except ToolError:
                continue  # a candidate on the opt-out list is left out
            listed.append(Candidate(match_score=match, matched=matched, profile=one))
        if not listed:
            raise found_opted_out()  # every candidate is on the list
        note = (
            "Extractive: the hints fit several people; each candidate's values are taken from its sources' sentences."
        )
    else:
        (match, matched), g = fitting[0]
        profile = candidates.profile_of(g, value.name, match)
        await _refuse_found(profile, g.record)
        if writer is not None:
            await ctx.report("writing the profile")
            written = await synth.write(writer, value.name, g, match)
            if written is None:
                note = "Extractive: the language model failed, so every value is taken from the sources' own sentences."
            else:
                profile = _merged(profile, written[0])
                withheld += written[1]
                synthesis, note = (
                    "llm",
                    (
                        "Written by the language model from the numbered sources; every value cites the sources it "
                        "was checked against, and values citing none were dropped."
                    ),
                )
    cited = _cited([profile] if profile is not None else [c.profile for c in listed])
    sources = [Source(url=p.url, title=p.title, kind="page", retrieved_at=p.retrieved_at) for p in usable
               if p.url in cited]  # fmt: skip
    if record is not None and record.source in cited:
        sources.append(Source(url=record.source, title=None, kind="enrichment", retrieved_at=iso(now_ms())))
    best = fitting[0][0]
    return PeopleResearchResult(
        name=value.name,
        depth=value.depth,
        ambiguous=ambiguous,
        match_score=None if ambiguous else best[0],
        matched=[] if ambiguous else best[1],
        profile=profile,
        candidates=listed,
        synthesis=synthesis,  # type: ignore[arg-type]
        note=note,
        sources=sources,
        meta=PeopleMeta(
            queries=asked,
            pages_read=len(pages),
            pages_failed=failed,
            providers=Providers(
                search=getattr(searcher, "name", "search"),
                enrichment=enrichment_name,
                llm=getattr(writer, "name", "llm") if synthesis == "llm" else None,
            ),
            extractive=synthesis == "extractive",
            withheld=withheld,
        ),
    )


PEOPLE_RESEARCH = Tool(
    name="people_research",
    path="/v1/tools/research/people",
    title="People research",
    summary="A cited public work profile of one person, or the candidates when the hints fit several.",
    description=(
        "Researches one person from their name and at least one hint (company, location, email, url) and a purpose: "
        "asks the people-data provider, searches the web, reads the pages found, scores each person they describe "
        "against the hints and returns a profile (names, current role and employer, location, public links, a "
        "short summary) whose every value lists the URLs it comes from and a confidence — or, when the hints fit "
        "several people, the candidates with their match scores. Never answers health, religion, political "
        "opinion, sexual orientation, ethnicity, criminal records or a home address. People on the operator's "
        "opt-out list are refused before payment. Nothing found: the job fails, refunded. Runs as a job."
    ),
    category="data",
    subcategory="research",
    input_type=PeopleResearchInput,
    output_type=PeopleResearchResult,
    run=run,
    price=price,
    family=FAMILY,
    mode="job",
    accepted_status="pending",
    payment_header="X-Payment-Proof",
    idempotency="optional",
    rate_limit="expensive",
    time_limit_s=300,
    refund_failed_jobs=True,
    check=check,
    admit=admit,
    provider_kind="search",  # refused before payment while no search provider is configured
    examples=(
        Example(
            title="A person at a company",
            input={
                "name": "Dana Reyes",
                "company": "Example Corp",
                "location": "Austin, Texas",
                "purpose": "preparing a first sales call",
            },
        ),
    ),
)
