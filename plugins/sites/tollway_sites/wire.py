"""What goes over the wire: a website brief, an update's changes, and a build's result (the
site, where it is published, the checks, the screenshots) — docs/website.md."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

MAX_PAGES = 20
Title = Annotated[str, Meta(min_length=1, max_length=80)]
Purpose = Annotated[str, Meta(min_length=1, max_length=500)]
Content = Annotated[str, Meta(max_length=20_000, description="Plain text; `## ` heading, `- ` item.")]
Email = Annotated[str, Meta(max_length=254, pattern=r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")]
Domain = Annotated[str, Meta(max_length=253, pattern=r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,63}\.?$")]  # then domains.normalize
PageSlug = Annotated[str, Meta(min_length=1, max_length=60, pattern=r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")]
PALETTES = ("harbour", "forest", "slate", "sunset", "plum")
Palette = Annotated[
    str,
    Meta(
        pattern=rf"^({'|'.join(PALETTES)}|#[0-9a-fA-F]{{6}})$",
        description="A named palette or a brand colour #RRGGBB.",
    ),
]
Font = Literal["system", "serif", "humanist", "mono"]


class PageBrief(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    title: Title
    purpose: Purpose  # what the page is for: the copy is written to it (and it is the page's meta description)
    content: Content | None = None  # laid out as is; without it the llm provider writes the page


class Style(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    palette: Palette | None = None  # a named palette, or a brand colour (darkened to readable contrast)
    font: Font | None = None  # system font stacks only: a site makes no external request


class Publish(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Push the site to a repository's Pages branch through a code-host connection."""

    connection_id: Annotated[str, Meta(min_length=1, max_length=40)]
    repository: Annotated[str, Meta(min_length=3, max_length=140, pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
    branch: Annotated[str, Meta(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._/-]+$")] = "gh-pages"


class WebsiteBrief(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=100)]
    description: Annotated[str, Meta(min_length=1, max_length=1000)]
    pages: Annotated[list[PageBrief], Meta(min_length=1, max_length=MAX_PAGES)]
    style: Style | None = None
    contact_email: Email | None = None
    domain: Domain | None = None
    publish: Publish | None = None
    rewrite: bool = False  # the llm provider writes every page, given content as its material


class PageChange(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A page by name (`index` is home): given fields replace its own; a new name adds a page."""

    page: PageSlug
    title: Title | None = None
    purpose: Purpose | None = None
    content: Content | None = None
    remove: bool = False


class WebsiteUpdate(msgspec.Struct, forbid_unknown_fields=True):
    site_id: Annotated[str, Meta(min_length=1, max_length=40)]  # over HTTP, the path's
    name: Annotated[str, Meta(min_length=1, max_length=100)] | None = None
    description: Annotated[str, Meta(min_length=1, max_length=1000)] | None = None
    pages: Annotated[list[PageChange], Meta(max_length=MAX_PAGES)] = msgspec.field(default_factory=list)
    style: Style | None = None
    contact_email: Email | None = None
    domain: Domain | None = None
    publish: Publish | None = None


class Check(msgspec.Struct):
    name: str  # renders, console, links, alt_text, headings, meta_description, accessibility, external_requests, copy
    passed: bool
    page: str | None = None  # the page's file, or None for a whole-site check
    detail: str | None = None


class Screenshot(msgspec.Struct):
    page: str
    width: int  # 375 or 1280
    artifact_id: str
    url: str  # a signed link (GET /v1/artifacts/{id}) until `expires_at`
    expires_at: str


class Violation(msgspec.Struct):
    page: str
    rule: str  # axe-core's rule id
    impact: str  # minor, moderate, serious, critical
    help: str
    nodes: int


class DnsRecord(msgspec.Struct, omit_defaults=True):
    type: str
    name: str
    value: str
    ttl: int = 3600
    note: str | None = None


class SitePage(msgspec.Struct):
    page: str  # the file name without .html
    title: str
    url: str


class Publication(msgspec.Struct, omit_defaults=True):
    kind: Literal["service", "github_pages"]
    url: str
    repository: str | None = None
    branch: str | None = None
    commit: str | None = None


class WebsiteResult(msgspec.Struct):
    site_id: str
    slug: str
    version: int
    url: str  # where this service serves it: <public URL>/sites/<slug>/
    pages: list[SitePage]
    files: list[str]
    publications: list[Publication]
    checks: list[Check]
    violations: list[Violation]  # axe-core's findings of any impact (serious and critical fail the build)
    screenshots: list[Screenshot]
    copy_written: bool  # True: the llm provider wrote pages from the brief
    claims_removed: list[str]  # sentences the model wrote that the brief does not support, taken out
    dns_records: list[DnsRecord]
    domain: str | None = None
