"""`website_build` (POST /v1/tools/website/build, a paid job, 10.00) and `website_update`
(POST /v1/tools/website/{site_id}/update, a paid job, 2.00).

Before payment: a page without `content` needs the `llm` provider (503 `provider_unavailable`
otherwise), publication on GitHub Pages needs the code-host connections, and an update's site
must be the payer's (404 otherwise). On the worker a build that fails a check or a push GitHub
refused fails the job, refunded; a re-run after a worker crash builds again into the same site."""

from __future__ import annotations

import functools

import msgspec

from tollway import (
    AdmissionChecks,
    Example,
    FieldError,
    FieldErrors,
    JobDeclaration,
    PluginContext,
    Refusal,
    Tool,
    ToolContext,
    storage,
)
from tollway import ToolError as Failure

from . import copywriting, domains, pipeline, publish, store, wire
from .settings import FAMILY

BUILD_PRICE = "10.00"
UPDATE_PRICE = "2.00"
TIME_LIMIT_S = 900.0  # written copy for up to 20 pages, then the checks (TOLLWAY_WEBSITE_CHECK_TIMEOUT_S)


def _need_llm(context: PluginContext, fields: list[str]) -> None:
    if not fields or not context.started:
        return
    try:
        context.platform.provider("llm")
    except LookupError:
        raise Refusal(
            "provider_unavailable",
            "Copy is written by a language model, and no llm provider is configured on this service: give each "
            f"page's content and leave rewrite out ({', '.join(fields)}). Nothing was charged.",
            status=503,
            details={"reason": "not_configured", "kind": "llm", "fields": fields},
        ) from None


def _check_domain(domain: str | None) -> list[FieldError]:
    if domain is None:
        return []
    try:
        domains.normalize(domain)
    except ValueError as exc:
        return [FieldError("domain", str(exc) or "not a domain name")]
    return []


def check_build(context: PluginContext, value: wire.WebsiteBrief) -> None:
    publish.check_available(value.publish)
    if problems := _check_domain(value.domain):
        raise FieldErrors(problems)
    if value.rewrite:
        _need_llm(context, ["rewrite"])
    else:
        _need_llm(context, [f"pages[{n}].content" for n, p in enumerate(value.pages) if p.content is None])


def check_update(context: PluginContext, value: wire.WebsiteUpdate) -> None:
    publish.check_available(value.publish)
    seen: set[str] = set()
    problems = _check_domain(value.domain)
    for n, change in enumerate(value.pages):
        if change.page in seen:
            problems.append(FieldError(f"pages[{n}].page", f"{change.page!r} is changed twice"))
        seen.add(change.page)
        if change.remove and (change.title or change.purpose or change.content):
            problems.append(FieldError(f"pages[{n}].remove", "a removed page takes no other change"))
    if problems:
        raise FieldErrors(problems)


async def own_site(value: wire.WebsiteUpdate, agent_id: str) -> None:
    """Before payment, once the payer is known: a site that is not the payer's is 404."""
    await store.owned(value.site_id, agent_id)


# -- the build ----------------------------------------------------------------------------
async def run_build(value: wire.WebsiteBrief, ctx: ToolContext) -> wire.WebsiteResult:
    if ctx.plugin is None or ctx.agent_id is None:
        raise Failure("internal_error", "website_build runs only as a job.", status=500)
    slugs = copywriting.page_slugs([p.title for p in value.pages])
    plan = pipeline.Plan(value, slugs, [None] * len(slugs))
    return await pipeline.produce(plan, pipeline.site_id_for(ctx.request_id), ctx)


# -- the update ---------------------------------------------------------------------------
def _changed(value: wire.WebsiteUpdate, stored: dict) -> pipeline.Plan:  # type: ignore[type-arg]
    brief = msgspec.convert(stored["brief"], wire.WebsiteBrief)
    slugs: list[str] = list(stored["slugs"])
    copies = [pipeline.copy_from(c) for c in stored["copies"]]
    site_wide = any(
        getattr(value, f) is not None for f in ("name", "description", "contact_email", "domain")
    )  # the copy the model wrote drew on them: written pages are written again
    pages = list(brief.pages)
    kept: list[copywriting.PageCopy | None] = [
        None if (site_wide and p.content is None) else c for p, c in zip(pages, copies, strict=True)
    ]
    for n, change in enumerate(value.pages):
        if change.page in slugs:
            at = slugs.index(change.page)
            if change.remove:
                if change.page == "index":
                    raise Failure(
                        "invalid_input", "The home page (index) cannot be removed.", status=400,
                        details=[{"field": f"pages[{n}].remove", "message": "the home page stays"}],
                    )  # fmt: skip
                del slugs[at], pages[at], kept[at]
                continue
            old = pages[at]
            pages[at] = wire.PageBrief(
                title=change.title or old.title,
                purpose=change.purpose or old.purpose,
                content=change.content if change.content is not None else old.content,
            )
            kept[at] = None
        elif change.remove:
            raise Failure("invalid_input", f"The site has no page {change.page!r} to remove.", status=400)
        else:
            if not change.title or not change.purpose:
                raise Failure(
                    "invalid_input", f"A new page ({change.page!r}) needs a title and a purpose.", status=400,
                    details=[{"field": f"pages[{n}].title", "message": "required for a new page"}],
                )  # fmt: skip
            slugs.append(change.page)
            pages.append(wire.PageBrief(title=change.title, purpose=change.purpose, content=change.content))
            kept.append(None)
    if len(pages) > wire.MAX_PAGES:
        raise Failure("invalid_input", f"A site has at most {wire.MAX_PAGES} pages.", status=400)
    updated = msgspec.structs.replace(
        brief,
        name=value.name or brief.name,
        description=value.description or brief.description,
        pages=pages,
        style=value.style if value.style is not None else brief.style,
        contact_email=value.contact_email if value.contact_email is not None else brief.contact_email,
        domain=value.domain if value.domain is not None else brief.domain,
        publish=value.publish if value.publish is not None else brief.publish,
    )
    return pipeline.Plan(updated, slugs, kept)


async def run_update(value: wire.WebsiteUpdate, ctx: ToolContext) -> wire.WebsiteResult:
    if ctx.plugin is None or ctx.agent_id is None:
        raise Failure("internal_error", "website_update runs only as a job.", status=500)
    try:
        row = await store.owned(value.site_id, ctx.agent_id)
    except Refusal as refused:
        raise Failure("invalid_input", f"{refused.message} Nothing was charged.", status=404) from None
    plan = _changed(value, storage.loads(row["brief"]))
    if ctx.plugin.started and any(
        c is None and p.content is None for p, c in zip(plan.brief.pages, plan.kept, strict=True)
    ):
        try:
            ctx.provider("llm")
        except Failure:
            raise Failure(
                "provider_unavailable",
                "A changed page has no content and no llm provider is configured to write it. Nothing was charged.",
                status=503,
                details={"reason": "not_configured", "kind": "llm"},
            ) from None
    return await pipeline.produce(plan, value.site_id, ctx)


BRIEF_EXAMPLE = {
    "name": "Harbour Ferries",
    "description": "A small ferry line between the North quay and the Island.",
    "pages": [
        {"title": "Home", "purpose": "Welcome visitors and say what we do.", "content": "Ferries every day."},
        {"title": "Fares", "purpose": "List the fares.", "content": "- Adult: 4.50 USD\n- Child: 2.00 USD"},
    ],
    "contact_email": "office@harbour.example",
}


def build_tool(context: PluginContext) -> Tool[wire.WebsiteBrief, wire.WebsiteResult]:
    return Tool(
        name="website_build",
        path="/v1/tools/website/build",
        title="Website build",
        summary="Builds a static website from a brief, checks it in a browser and publishes it.",
        description=(
            "Build a static website from a brief (name, description, pages with a title, purpose and optional "
            "content; style; contact email; domain). Pages without content are written from the brief by a "
            "language model, keeping only what the brief supports. Every page is checked in headless Chromium "
            "(console errors, links, alt text, headings, meta description, axe-core accessibility) and "
            "screenshotted at 375 and 1280 px; a site that passes is served at /sites/{slug}/ and, with "
            "`publish`, pushed to a GitHub Pages branch. A build that fails a check publishes nothing and is "
            "refunded. Runs as a job."
        ),
        category="infrastructure",
        subcategory="website_build",
        input_type=wire.WebsiteBrief,
        output_type=wire.WebsiteResult,
        run=run_build,
        price=BUILD_PRICE,
        family=FAMILY,
        job=JobDeclaration(refund_failed_jobs=True),
        idempotency="optional",
        rate_limit="expensive",
        time_limit_s=TIME_LIMIT_S,
        examples=(Example(title="A two-page site", input=BRIEF_EXAMPLE),),
        admission=AdmissionChecks(check=functools.partial(check_build, context)),
    )


def update_tool(context: PluginContext) -> Tool[wire.WebsiteUpdate, wire.WebsiteResult]:
    return Tool(
        name="website_update",
        path="/v1/tools/website/{site_id}/update",
        title="Website update",
        summary="Rebuilds one of your websites with changes, checks it again and republishes it.",
        description=(
            "Change a site website_build made: pages by name (`index`, `fares`, ...) get a new title, purpose or "
            "content, are added or removed; the name, style, contact email, domain and publication may change. "
            "Pages that did not change keep their copy. The whole site is checked again and republished only "
            "if it passes; otherwise nothing changes and the update is refunded. Runs as a job."
        ),
        category="infrastructure",
        subcategory="website_update",
        input_type=wire.WebsiteUpdate,
        output_type=wire.WebsiteResult,
        run=run_update,
        price=UPDATE_PRICE,
        family=FAMILY,
        job=JobDeclaration(refund_failed_jobs=True),
        idempotency="optional",
        rate_limit="expensive",
        time_limit_s=TIME_LIMIT_S,
        examples=(
            Example(
                title="Change the fares page",
                input={
                    "site_id": "site_0123456789abcdef01234567",
                    "pages": [{"page": "fares", "content": "- Adult: 5.00 USD"}],
                },
            ),
        ),
        admission=AdmissionChecks(check=functools.partial(check_update, context), admit_payer=own_site),
    )
