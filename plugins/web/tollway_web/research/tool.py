"""The `research` job tool's declaration, built around whatever supplies its searcher and writer.

Not registered by the plugin yet: the searcher and the language model come from the
kernel's providers once they exist, so `research_tool(searcher_for, writer_for)` takes
the two look-ups as arguments and the plugin registers the result then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Literal, cast

import msgspec
from msgspec import Meta

from tollway import Example, Tool, ToolContext

from .. import settings
from ..search_providers import SearchClient
from .model import Hit, ResearchReport
from .pipeline import run_research
from .ports import Searcher, Writer
from .reader import WebReader

log = logging.getLogger(__name__)

MAX_TOPIC_CHARS = 500  # the topic is searched as it is, and a web search takes 500

Topic = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_TOPIC_CHARS,
        description="What to research, 1 to 500 characters.",
        examples=["urban heat islands and public health"],
    ),
]
DepthField = Annotated[
    Literal["quick", "deep"],
    Meta(
        description="`quick` reads 5 to 10 sources (2 to 3 minutes); `deep` 20 or more (5 to 10 minutes). "
        "Fewer readable sources than that: the job fails, refunded in full."
    ),
]


class ResearchInput(msgspec.Struct, forbid_unknown_fields=True):
    topic: Topic
    depth: DepthField = "quick"


def research_tool(
    searcher_for: Callable[[ToolContext], Searcher],
    writer_for: Callable[[ToolContext], Writer | None],
) -> Tool:
    """The `research` tool, its searcher and optional writer looked up per run."""

    async def run(value: ResearchInput, ctx: ToolContext) -> ResearchReport:
        reader = WebReader(ctx.http, allow_private=settings.allow_private_addresses(ctx))

        async def progress(message: str) -> None:
            log.info("research %s: %s", ctx.request_id, message)
            await ctx.report(message)  # the job's message while it runs, pushed to subscribers

        return await run_research(
            value.topic,
            value.depth,
            searcher_for(ctx),
            reader,
            writer_for(ctx),
            progress,
            search_time_s=settings.research_search_s(ctx, value.depth),
        )

    return Tool(
        name="research",
        path="/v1/tools/research",
        title="Deep research",
        summary="Researches a topic on the web and returns a Markdown report citing the pages it read.",
        description=(
            "Research a topic: searches the web from several angles, and further (next result pages, reworded "
            "queries) until it has read enough pages or its search time is up (quick: 5 to 10 sources, deep: 20 "
            "or more), ranks their passages for each sub-question and returns a Markdown report citing at least "
            "that many sources, whose every citation [n] names a source in `sources` that was read. With fewer "
            "readable sources than the depth promises the job fails (source_unsupported) and is refunded in full. "
            "Without a language model configured, or when it fails or cites too few sources, the report is "
            "extractive: the best passages quoted under each sub-question, every source read quoted "
            "(`meta.extractive` says which). Runs as a job."
        ),
        category="data",
        subcategory="research",
        input_type=ResearchInput,
        output_type=ResearchReport,
        run=run,
        price="0.15",
        family=settings.FAMILY,
        mode="job",
        accepted_status="pending",
        payment_header="X-Payment-Proof",
        idempotency="optional",
        rate_limit="expensive",
        time_limit_s=660,  # deep research may take ten minutes
        refund_failed_jobs=True,
        provider_kind="search",  # refused before payment while no search provider is configured
        examples=(Example(title="A quick cited report", input={"topic": "urban heat islands and public health"}),),
    )


class ProviderSearcher:
    """The configured search provider's client as the engine's Searcher."""

    def __init__(self, client: SearchClient, name: str) -> None:
        self.client = client
        self.name = name

    async def search(self, query: str, max_results: int, page: int = 1) -> list[Hit]:
        if page == 1:
            return list(await self.client.search(query, max_results))
        return list(await self.client.search(query, max_results, page=page))


def provider_searcher(ctx: ToolContext) -> Searcher:
    chosen = ctx.providers.chosen("search")
    client = cast(SearchClient, ctx.provider("search"))  # the kind's interface
    return ProviderSearcher(client, chosen.name if chosen is not None else "search")


def provider_writer(ctx: ToolContext) -> Writer | None:
    """The configured language model, or None (the report is then extractive)."""
    if ctx.providers is None or not ctx.providers.status("llm").configured:
        return None
    return cast(Writer, ctx.provider("llm"))  # the kind's interface (a ChatCompletionsWriter)


RESEARCH = research_tool(provider_searcher, provider_writer)
