"""One build of a site, on a worker: the copy (as given, or written and checked), the static
files, the checks in Chromium, then — only when every check passed — the push to GitHub
Pages when asked, the publication here, and the screenshots kept as artifacts. A build that
fails a check publishes nothing and fails its job (refunded)."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import msgspec

from tollway import ToolContext
from tollway import ToolError as Failure
from tollway_browser import artifacts
from tollway_browser.session import Shot

from . import checks, copywriting, domains, publish, render, store, wire
from .copywriting import Block, PageCopy
from .settings import CHECK_TIMEOUT_S, CHROMIUM_PATH, PUBLIC_URL, number, text


@dataclasses.dataclass(frozen=True)
class Plan:
    """What to build: the brief, a file name per page, and the copy kept from the last build
    for the pages that did not change (None: write or lay out afresh)."""

    brief: wire.WebsiteBrief
    slugs: list[str]
    kept: list[PageCopy | None]


def site_id_for(request_id: str) -> str:
    """The id of the site a build job makes: the same on a re-run of the job."""
    return "site_" + hashlib.sha256(request_id.encode()).hexdigest()[:24]


def service_url(settings: Mapping[str, str], slug: str) -> str:
    return f"{text(settings, PUBLIC_URL).rstrip('/')}/sites/{slug}/"


def pages_url(repository: str) -> str:
    """Where GitHub Pages serves a repository's site (no custom domain)."""
    owner, name = repository.split("/", 1)
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"


def stored(plan: Plan, copies: Sequence[PageCopy]) -> dict[str, Any]:
    return {
        "brief": msgspec.to_builtins(plan.brief),
        "slugs": plan.slugs,
        "copies": [dataclasses.asdict(c) for c in copies],
    }


def copy_from(raw: Mapping[str, Any]) -> PageCopy:
    blocks = tuple(Block(b["kind"], b.get("text", ""), tuple(b.get("items") or ())) for b in raw["blocks"])
    return PageCopy(raw["page"], raw["title"], raw["headline"], raw["description"], blocks)


async def _copies(plan: Plan, ctx: ToolContext) -> tuple[list[PageCopy], list[str], bool]:
    copies: list[PageCopy] = []
    removed: list[str] = []
    wrote = False
    for n, (slug, page, kept) in enumerate(zip(plan.slugs, plan.brief.pages, plan.kept, strict=True), start=1):
        if page.content is not None and not plan.brief.rewrite:
            copies.append(copywriting.as_is(slug, page))
        elif kept is not None:  # written for the last build, and nothing it drew on changed
            copies.append(kept)
        else:
            await ctx.report(f"writing page {n}/{len(plan.slugs)}: {page.title}")
            llm = ctx.provider("llm")
            copy, taken_out = await copywriting.written(llm, plan.brief, slug, page)  # type: ignore[arg-type]
            copies.append(copy)
            removed += taken_out
            wrote = True
    return copies, removed, wrote


def _failed(outcome: checks.Outcome) -> Failure:
    failed = [c for c in outcome.checks if not c.passed]
    listed = "; ".join(f"{c.name}{f' ({c.page})' if c.page else ''}: {c.detail or 'failed'}" for c in failed[:8])
    # Not a fault of the brief (the build escapes and lays out whatever it is given): the
    # job's `internal_error`, safe to retry, its message naming each failed check.
    return Failure(
        "internal_error",
        f"The site did not pass its checks, so nothing was published and the build was refunded: {listed}",
        status=500,
        details={"checks": [msgspec.to_builtins(c) for c in failed[:50]]},
    )


async def produce(plan: Plan, site_id: str, ctx: ToolContext) -> wire.WebsiteResult:
    assert ctx.plugin is not None and ctx.agent_id is not None
    brief = plan.brief
    settings = ctx.settings
    copies, removed, wrote = await _copies(plan, ctx)
    slug = await store.free_slug(brief.name, site_id)
    here = service_url(settings, slug)
    base = f"https://{brief.domain.rstrip('.').lower()}/" if brief.domain else (
        pages_url(brief.publish.repository) if brief.publish else here
    )  # fmt: skip
    await ctx.report("building the files")
    files = render.build(brief, copies, base, datetime.datetime.now(datetime.UTC).date())
    await ctx.report("checking the pages in Chromium")
    outcome = await checks.check_site(
        files, text(settings, CHROMIUM_PATH), number(settings, CHECK_TIMEOUT_S), ctx.report
    )
    if removed:
        outcome.add("copy", True, None, f"{len(removed)} unsupported sentence(s) taken out")
    if not outcome.passed:
        raise _failed(outcome)
    publications = [wire.Publication(kind="service", url=here)]
    if brief.publish is not None:
        await ctx.report(f"pushing to {brief.publish.repository}")
        publications.append(await publish.to_github(ctx, brief.publish, files, brief.domain, brief.name))
    await ctx.report("publishing")
    version = await _save(plan, site_id, slug, copies, files, publications, ctx)
    await ctx.report("keeping the screenshots")
    shots = [Shot("screenshot", "image/png", png) for _, _, png in outcome.shots]
    kept = await artifacts.keep(ctx.plugin, ctx.request_id, ctx.agent_id, shots)
    screenshots = [
        wire.Screenshot(page=page, width=width, artifact_id=a.id, url=a.url, expires_at=a.expires_at)
        for (page, width, _), a in zip(outcome.shots, kept, strict=True)
    ]
    owner = brief.publish.repository.split("/", 1)[0] if brief.publish else None
    records = (
        domains.dns_records(brief.domain, target_host=urlsplit(here).hostname or "", github_pages_owner=owner)
        if brief.domain
        else []
    )
    return wire.WebsiteResult(
        site_id=site_id,
        slug=slug,
        version=version,
        url=here,
        pages=[wire.SitePage(page=c.page, title=c.title, url=f"{here}{render.canonical(c.page)}") for c in copies],
        files=sorted(f.path for f in files),
        publications=publications,
        checks=outcome.checks,
        violations=outcome.violations,
        screenshots=screenshots,
        copy_written=wrote,
        claims_removed=removed,
        dns_records=msgspec.convert(records, list[wire.DnsRecord]),
        domain=brief.domain,
    )


async def _save(
    plan: Plan,
    site_id: str,
    slug: str,
    copies: Sequence[PageCopy],
    files: Sequence[render.File],
    publications: Sequence[wire.Publication],
    ctx: ToolContext,
) -> int:
    github = next((p for p in publications if p.kind == "github_pages"), None)
    try:
        return await store.save(
            site_id=site_id,
            agent_id=ctx.agent_id or "",
            slug=slug,
            name=plan.brief.name,
            brief=stored(plan, copies),
            request_id=ctx.request_id,
            files=files,
            publication=None if github is None else msgspec.to_builtins(github),
            domain=plan.brief.domain.rstrip(".").lower() if plan.brief.domain else None,
        )
    except Exception:
        taken = await store.by_slug(slug)
        if taken is None or taken["id"] == site_id:
            raise
        # Two builds of one name chose the same free slug at once; this one lost the race.
        raise Failure(
            "internal_error",
            f"Another site took the address /sites/{slug}/ at the same moment. Nothing was published and the build "
            "was refunded; build again and it gets the next free address.",
            status=500,
        ) from None
