"""The checks before publication, in headless Chromium: every page loads its files from the
build itself (nothing else answers: an external request is a failure), renders with no
console error, links only to pages and files the build has, gives every image an `alt`,
has one h1 and headings in order, a meta description, no sideways scrolling at 375 px, and
no serious or critical axe-core violation. Each page is screenshotted at 375 and 1280 px."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Route, async_playwright

from tollway_browser.session import CHROMIUM_ARGS, kill_group, marked

from . import wire
from .render import File

# On the checks' Chromium's command line (ignored by it): how its process group is found and
# ended; not the browser tasks' marker, so nothing counts it as a task's browser.
MARKER = "--tollway-site-check"
ORIGIN = "https://site.check"  # no such host: every request to it is answered from the build
AXE = (Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js").read_text()
FAILING_IMPACTS = ("serious", "critical")
WIDTHS = (375, 1280)
# The checks' Chromium reaches nothing: requests are answered from the build or refused, and a
# proxy nobody listens on stands behind that for anything the page's routing does not see.
DEAD_PROXY = "--proxy-server=http://127.0.0.1:9"
# The policy the served site carries (serve.py): the checks load pages under it, so a page
# the policy would break fails here.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

PAGE_FACTS = """() => {
  const headings = Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6')).map(h => Number(h.tagName[1]));
  const meta = document.querySelector('meta[name="description"]');
  return {
    headings,
    imagesWithoutAlt: Array.from(document.images).filter(i => !i.hasAttribute('alt')).map(i => i.getAttribute('src') || ''),
    description: meta ? (meta.getAttribute('content') || '') : null,
    links: Array.from(document.querySelectorAll('a[href], link[href]')).map(a => a.href),
    sources: Array.from(document.querySelectorAll('[src]')).map(e => e.src),
    scrollWidth: document.documentElement.scrollWidth,
    styled: Array.from(document.styleSheets).some(s => { try { return s.cssRules.length > 0; } catch (e) { return false; } }),
  };
}"""
AXE_RUN = """async () => {
  const out = await axe.run(document, {resultTypes: ['violations']});
  return out.violations.map(v => ({rule: v.id, impact: v.impact || 'minor', help: v.help, nodes: v.nodes.length}));
}"""


@dataclasses.dataclass
class Outcome:
    checks: list[wire.Check] = dataclasses.field(default_factory=list)
    violations: list[wire.Violation] = dataclasses.field(default_factory=list)
    shots: list[tuple[str, int, bytes]] = dataclasses.field(default_factory=list)  # page, width, PNG
    external: list[str] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def add(self, name: str, passed: bool, page: str | None = None, detail: str | None = None) -> None:
        self.checks.append(wire.Check(name=name, passed=passed, page=page, detail=detail))


Report = Callable[[str], Awaitable[object]]


def _target(url: str, files: dict[str, File]) -> str | None:
    """The build's file a same-origin URL names (`/` and `./` the home page), or None."""
    path = urlsplit(urldefrag(url)[0]).path.lstrip("/")
    path = path or "index.html"
    if path.endswith("/"):
        path += "index.html"
    return path if path in files else None


async def check_site(files: Sequence[File], chromium: str, timeout_s: float, report: Report) -> Outcome:
    """Load every page of the build in a fresh Chromium; what each check found."""
    outcome = Outcome()
    by_path = {f.path: f for f in files}
    token = uuid.uuid4().hex
    try:
        async with asyncio.timeout(timeout_s):
            await _run(by_path, chromium, token, outcome, report)
    except TimeoutError:
        outcome.add("renders", False, None, f"the checks did not finish within {timeout_s:.0f} s")
    except PlaywrightError as exc:
        outcome.add("renders", False, None, f"the browser failed: {str(exc).splitlines()[0][:200]}")
    finally:
        for pid in marked(f"{MARKER}={token}".encode()):
            kill_group(pid)
    outcome.add(
        "external_requests",
        not outcome.external,
        None,
        f"requests outside the site: {', '.join(sorted(set(outcome.external))[:10])}" if outcome.external else None,
    )
    return outcome


async def _run(files: dict[str, File], chromium: str, token: str, outcome: Outcome, report: Report) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=[DEAD_PROXY, *CHROMIUM_ARGS, f"{MARKER}={token}"],
            timeout=30_000,
        )
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 800}, java_script_enabled=True)

            async def answer(route: Route) -> None:
                url = route.request.url
                if not url.startswith(ORIGIN + "/"):
                    if not url.startswith(("data:", "about:")):
                        outcome.external.append(url[:200])
                    await route.abort("blockedbyclient")
                    return
                found = _target(url, files)
                if found is None:
                    await route.fulfill(status=404, body=b"not found", content_type="text/plain")
                    return
                file = files[found]
                await route.fulfill(
                    status=200, body=file.body, content_type=file.media_type, headers={"Content-Security-Policy": CSP}
                )

            await context.route("**/*", answer)
            pages = sorted(p for p in files if p.endswith(".html"))
            for n, path in enumerate(pages, start=1):
                await report(f"checking page {n}/{len(pages)}: {path}")
                await _check_page(context, path, files, outcome)
        finally:
            with contextlib.suppress(PlaywrightError, TimeoutError):
                async with asyncio.timeout(5):
                    await browser.close()


async def _check_page(context, path: str, files: dict[str, File], outcome: Outcome) -> None:  # type: ignore[no-untyped-def]
    page = await context.new_page()
    errors: list[str] = []
    failed: list[str] = []
    page.on("console", lambda m: errors.append(m.text[:300]) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)[:300]))
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    try:
        response = await page.goto(f"{ORIGIN}/{path}", wait_until="load", timeout=20_000)
        ok = response is not None and response.status == 200
        outcome.add("renders", ok, path, None if ok else "the page did not load")
        if not ok:
            return
        facts = await page.evaluate(PAGE_FACTS)
        outcome.add("styled", facts["styled"], path, None if facts["styled"] else "the stylesheet was not applied")
        _structure(path, facts, files, outcome)
        for width in WIDTHS:
            await page.set_viewport_size({"width": width, "height": 800 if width > 500 else 812})
            if width == 375:
                wide = await page.evaluate("() => document.documentElement.scrollWidth")
                outcome.add("responsive", wide <= 375, path, None if wide <= 375 else f"{wide} px wide at 375 px")
            outcome.shots.append((path, width, await page.screenshot(full_page=True, timeout=20_000)))
        await page.evaluate(AXE)
        found = await page.evaluate(AXE_RUN)
        violations = [wire.Violation(page=path, **v) for v in found]
        outcome.violations += violations
        serious = [v for v in violations if v.impact in FAILING_IMPACTS]
        outcome.add(
            "accessibility",
            not serious,
            path,
            "; ".join(f"{v.rule} ({v.impact}, {v.nodes}): {v.help}" for v in serious)[:500] or None,
        )
        broken = [u for u in failed if u.startswith(ORIGIN)]
        outcome.add(
            "console",
            not errors and not broken,
            path,
            "; ".join([*errors, *(f"{u}: failed" for u in broken)])[:500] or None,
        )
    finally:
        with contextlib.suppress(PlaywrightError):
            await page.close()


def _structure(path: str, facts: dict, files: dict[str, File], outcome: Outcome) -> None:  # type: ignore[type-arg]
    headings: list[int] = facts["headings"]
    h1s = headings.count(1)
    skipped = [f"h{b} after h{a}" for a, b in zip(headings, headings[1:], strict=False) if b > a + 1]
    first_ok = bool(headings) and headings[0] == 1
    outcome.add(
        "headings",
        h1s == 1 and not skipped and first_ok,
        path,
        None if h1s == 1 and not skipped and first_ok else f"{h1s} h1; {', '.join(skipped) or 'order ok'}",
    )
    missing = facts["imagesWithoutAlt"]
    outcome.add("alt_text", not missing, path, f"images without alt: {', '.join(missing)[:300]}" if missing else None)
    description = (facts["description"] or "").strip()
    outcome.add("meta_description", bool(description), path, None if description else "no meta description")
    internal = [u for u in [*facts["links"], *facts["sources"]] if u.startswith(ORIGIN)]
    broken = sorted({urlsplit(u).path for u in internal if _target(u, files) is None})
    outcome.add("links", not broken, path, f"links to nothing: {', '.join(broken)[:300]}" if broken else None)
