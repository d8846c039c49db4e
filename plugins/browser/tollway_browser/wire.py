"""What goes over the wire: a browser task's input (its typed steps), its result, browser
profiles and artifacts (docs/browser.md)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

MAX_URL = 2048
Url = Annotated[str, Meta(min_length=1, max_length=MAX_URL, description="An http(s) URL.")]
StepUrl = Annotated[str, Meta(min_length=1, max_length=MAX_URL)]
Short = Annotated[str, Meta(max_length=500)]


Action = Literal["goto", "click", "fill", "select", "press", "wait_for", "scroll", "extract", "screenshot", "pdf"]
ACTIONS: tuple[str, ...] = Action.__args__  # type: ignore[attr-defined]


class BrowserStep(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One step. An element is named by `role` (+ `name`), `label`, `text` or CSS `selector`."""

    action: Action
    url: StepUrl | None = None  # goto
    role: Short | None = None
    name: Short | None = None
    label: Short | None = None
    text: Short | None = None
    selector: Short | None = None
    value: Annotated[str, Meta(max_length=10_000)] | None = None  # fill; select (an option's value or label)
    key: Annotated[str, Meta(max_length=40)] | None = None  # press: Enter, Tab, ...
    what: Literal["text", "html", "attribute", "table", "links"] = "text"  # extract
    attribute: Short | None = None  # extract what=attribute
    save_as: Annotated[str, Meta(max_length=100)] | None = None  # extract: names the value
    url_contains: Short | None = None  # wait_for the URL (else the element, else a quiet network)
    timeout_s: Annotated[float, Meta(gt=0, le=60)] = 10  # wait_for
    dy: Annotated[int, Meta(ge=-100_000, le=100_000)] = 800  # scroll, when no element is named
    full_page: bool = False  # screenshot


MAX_STEPS = 50


class BrowserTaskInput(msgspec.Struct, forbid_unknown_fields=True):
    start_url: Url
    steps: Annotated[list[BrowserStep], Meta(min_length=1, max_length=MAX_STEPS)] | None = None
    goal: Annotated[str, Meta(min_length=1, max_length=2000, description="Run by an agent loop.")] | None = None
    profile_id: Annotated[str, Meta(max_length=40)] | None = None
    time_limit_s: Annotated[int, Meta(ge=5, le=300)] = 60
    max_pages: Annotated[int, Meta(ge=1, le=20)] = 5


class BrowserLink(msgspec.Struct):
    text: str
    href: str


class BrowserExtracted(msgspec.Struct, omit_defaults=True):
    step: int  # the step's number, from 1
    what: str
    save_as: str | None = None
    value: str | None = None  # text, html, attribute
    rows: list[list[str]] | None = None  # table
    links: list[BrowserLink] | None = None  # links


class BrowserStepLog(msgspec.Struct, omit_defaults=True):
    step: int
    action: str
    status: str  # ok, failed, blocked
    ms: int
    detail: str | None = None


class BrowserBlocked(msgspec.Struct):
    url: str
    reason: str  # private_address, dns, scheme, navigation, response_capped, connect_failed
    detail: str


class BrowserArtifact(msgspec.Struct):
    id: str
    kind: str  # screenshot, pdf
    media_type: str
    bytes: int
    url: str  # a signed link, valid until expires_at; GET /v1/artifacts/{id} with credentials too
    expires_at: str


class BrowserArtifactLink(msgspec.Struct):
    """A fresh signed link to one of the caller's artifacts."""

    id: str
    url: str  # a signed link, valid until expires_at
    expires_at: str


class BrowserTaskResult(msgspec.Struct):
    """The Browser task result (docs/browser.md)."""

    status: str  # completed, step_failed, timed_out, memory_cap, cpu_cap, goal_unfinished
    url: str
    title: str
    extracts: list[BrowserExtracted]
    answer: str | None  # a goal task's answer
    steps: list[BrowserStepLog]
    console_errors: list[str]
    blocked: list[BrowserBlocked]
    artifacts: list[BrowserArtifact]
    profile_id: str | None


class BrowserProfileIn(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1, max_length=100)]


class BrowserProfile(msgspec.Struct):
    id: str
    name: str
    created_at: str
    last_used_at: str | None


class BrowserProfileList(msgspec.Struct):
    profiles: list[BrowserProfile]


class BrowserProfileDeleted(msgspec.Struct):
    id: str
    deleted: bool
