"""The `web_read` tool: its input/output types, its URL check and its run.

Declared once here; the kernel derives the route, MCP tool, schema and price.
A job: the HTTP answer is 202 and the worker runs `run` later.
"""

from __future__ import annotations

import asyncio
from typing import Annotated
from urllib.parse import urlsplit

import httpx
import msgspec
from msgspec import Meta

from tollway import Example, FieldError, Tool, ToolContext

from . import extract, fetch, settings

MAX_URL_CHARS = 2048

Url = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_URL_CHARS,
        description="Absolute http or https URL of the page to read, at most 2048 characters.",
        examples=["https://example.com/"],
    ),
]


class WebReadInput(msgspec.Struct, forbid_unknown_fields=True):
    url: Url


class WebReadMetadata(msgspec.Struct):
    title: str | None  # null when the page names none
    description: str | None  # the page's meta/Open Graph description; null when none
    status_code: int = msgspec.field(name="statusCode")  # the final answer's HTTP status


class WebReadResult(msgspec.Struct):
    """The Web read result (docs/web.md)."""

    url: str  # the final URL, after redirects
    markdown: str  # main content, at most 51,200 UTF-8 bytes
    screenshot_url: str | None  # null unless a screenshot service is configured
    metadata: WebReadMetadata
    truncated: bool  # the markdown (or the page, past 5 MB) was cut


def check(value: WebReadInput) -> None:
    """An absolute http(s) URL with a host: what msgspec constraints cannot say."""
    url = value.url
    if any(ch <= " " or ch == "\x7f" for ch in url):
        raise FieldError("url", "Expected a URL without spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise FieldError("url", "Expected an absolute URL starting with http:// or https://")
    try:
        port = parts.port
    except ValueError:
        raise FieldError("url", "Expected a port from 1 to 65535") from None
    if port == 0:
        raise FieldError("url", "Expected a port from 1 to 65535")
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host
    except (httpx.InvalidURL, UnicodeError) as exc:
        raise FieldError("url", f"Expected a valid URL ({exc})") from None
    if not parts.hostname or not host:
        raise FieldError("url", "Expected a URL with a host name")


async def run(value: WebReadInput, ctx: ToolContext) -> WebReadResult:
    page = await fetch.fetch_page(
        ctx.http,
        value.url,
        allow_private=settings.allow_private_addresses(ctx),
        accept=extract.accepts,
    )
    try:
        # CPU work (lxml + trafilatura, up to seconds on a 5 MB page): off the event loop.
        found = await asyncio.to_thread(extract.extract_page, page.body, page.content_type, page.charset, page.url)
    except ValueError as exc:
        raise fetch.unsupported(
            "The page is binary, not HTML or text.",
            "binary_body",
            content_type=page.content_type,
            upstream_status=page.status,
        ) from exc
    if not found.markdown:
        if page.status >= 400:
            raise fetch.unsupported(
                f"The page answered HTTP {page.status} with nothing to read.", "http_error", upstream_status=page.status
            )
        raise fetch.unsupported(
            "The page has no readable text (a page drawn by JavaScript cannot be read: web read runs no browser; browser_task does).",
            "no_text",
            upstream_status=page.status,
        )
    return WebReadResult(
        url=page.url,
        markdown=found.markdown,
        screenshot_url=settings.screenshot_url(ctx, page.url),
        metadata=WebReadMetadata(title=found.title, description=found.description, status_code=page.status),
        truncated=found.truncated or page.capped,
    )


WEB_READ = Tool(
    name="web_read",
    path="/v1/tools/web-read",
    title="Web read",
    summary="Reads one web page and returns its main content as Markdown, with its title, description and HTTP status.",
    description=(
        "Read one web page: fetches the URL (following up to 5 redirects) and returns its main content as "
        "Markdown, with navigation, footers and other boilerplate left out, plus the page's title, description "
        "and HTTP status. Markdown is at most 50 KB (`truncated` says when it was cut). HTML and plain-text "
        "pages only: PDFs, images and other files fail with source_unsupported, an unknown host with "
        "target_unreachable. Pages drawn by JavaScript are not rendered. Runs as a job."
    ),
    category="data",
    subcategory="web_read",
    input_type=WebReadInput,
    output_type=WebReadResult,
    run=run,
    price="0.02",
    family=settings.FAMILY,
    mode="job",
    accepted_status="processing",  # a read is under way at once (research says pending)
    payment_header="X-Payment-Proof",
    idempotency="optional",
    rate_limit="paid",
    time_limit_s=60,
    refund_failed_jobs=True,
    examples=(Example(title="Read a page as Markdown", input={"url": "https://example.com/"}),),
    check=check,
)
