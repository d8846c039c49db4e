"""The checks before publication find what is wrong with a page: each broken page below
fails exactly the check meant to catch it, and the build's own pages pass them all."""

from __future__ import annotations

import datetime

import pytest

from tollway_sites import checks, copywriting, render, wire

CSS = render.File(
    "site.aaaaaaaaaaaa.css", "text/css; charset=utf-8", b"body{font-family:sans-serif}.wide{width:2000px}"
)


def page(body: str, *, head: str = '<meta name="description" content="A page.">', title: str = "T") -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}'
        f'<link rel="stylesheet" href="site.aaaaaaaaaaaa.css"></head><body><main>{body}</main></body></html>'
    ).encode()


async def _quiet(message: str) -> None:
    return None


async def run(body: bytes) -> checks.Outcome:
    files = [render.File("index.html", render.HTML, body), CSS]
    return await checks.check_site(files, "/usr/bin/chromium", 60, _quiet)


def failed(outcome: checks.Outcome) -> set[str]:
    return {c.name for c in outcome.checks if not c.passed}


GOOD = "<h1>Ferries</h1><p>Boats every day.</p>"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (page(GOOD), set()),
        (page("<h1>One</h1><h1>Two</h1><p>x</p>"), {"headings"}),
        (page("<h1>One</h1><h3>Skipped a level</h3><p>x</p>"), {"headings"}),
        (page("<p>No heading at all</p>"), {"headings"}),
        (page(GOOD, head=""), {"meta_description"}),
        (page(GOOD + '<img src="site.aaaaaaaaaaaa.css">'), {"alt_text", "accessibility"}),
        (page(GOOD + '<a href="missing.html">gone</a>'), {"links"}),
        # refused by the page's policy before any request leaves: the console says so
        (page(GOOD + '<img alt="x" src="https://cdn.example.com/logo.png">'), {"console"}),
        (page(GOOD + "<script>console.error('boom')</script>"), {"console"}),  # blocked by the policy: an error
        (page(GOOD + '<div style="width:2000px">x</div>'), {"console"}),  # inline style is refused by the policy
        (page(GOOD + '<div class="wide">wide</div>'), {"responsive"}),
        (page(GOOD + '<p><span class="low">faint</span></p>', head='<meta name="description" content="d">'
              '<link rel="stylesheet" href="low.aaaaaaaaaaaa.css">'), {"links", "console"}),
    ],
    ids=["good", "two-h1", "skipped-level", "no-heading", "no-description", "image-without-alt", "broken-link",
         "external-image", "script", "inline-style", "too-wide", "missing-stylesheet"],
)  # fmt: skip
async def test_each_broken_page_fails_the_check_meant_for_it(body, expected):
    outcome = await run(body)
    assert failed(outcome) == expected, [c for c in outcome.checks if not c.passed]
    assert outcome.external == []  # nothing left the browser
    assert {s[1] for s in outcome.shots} == {375, 1280}


async def test_a_serious_accessibility_violation_fails_the_build():
    low = render.File("site.aaaaaaaaaaaa.css", "text/css", b".low{color:#bbbbbb;background:#ffffff}")
    body = page(GOOD + '<p class="low">Light grey on white is hard to read for many people.</p>'
                + '<form><input type="text"></form>')  # fmt: skip
    outcome = await checks.check_site(
        [render.File("index.html", render.HTML, body), low], "/usr/bin/chromium", 60, _quiet
    )
    rules = {v.rule for v in outcome.violations if v.impact in ("serious", "critical")}
    assert {"color-contrast", "label"} <= rules
    assert failed(outcome) == {"accessibility"}


@pytest.mark.parametrize("palette", ["harbour", "forest", "slate", "sunset", "plum", "#ffee00", "#00ffff", "#777777"])
async def test_every_palette_and_brand_colour_builds_a_site_that_passes(palette):
    brief = wire.WebsiteBrief(
        name="Ferries & <Co>",
        description="Boats.",
        pages=[wire.PageBrief(title="Home", purpose="Welcome", content="## Hello\n- a\n- b\n\nText <b>not bold</b>."),
               wire.PageBrief(title="Home", purpose="A second page with the same title", content="Again.")],
        style=wire.Style(palette=palette, font="mono"),
        contact_email="a@b.example",
    )  # fmt: skip
    slugs = copywriting.page_slugs([p.title for p in brief.pages])
    assert slugs == ["index", "home"]
    copies = [copywriting.as_is(s, p) for s, p in zip(slugs, brief.pages, strict=True)]
    files = render.build(brief, copies, "https://ferries.example/", datetime.date(2026, 11, 27))
    home = next(f for f in files if f.path == "index.html").body.decode()
    assert "Ferries &amp; &lt;Co&gt;" in home and "&lt;b&gt;not bold&lt;/b&gt;" in home
    outcome = await checks.check_site(files, "/usr/bin/chromium", 60, _quiet)
    assert outcome.passed, [c for c in outcome.checks if not c.passed]
    assert not [v for v in outcome.violations if v.impact in ("serious", "critical")]
