"""Sites served by the service itself at `/sites/{slug}/`: the published build's files, under
a strict Content-Security-Policy (the pages run no script and load only their own files),
hashed assets cached for a year as immutable, pages revalidated on every visit."""

from __future__ import annotations

from tollway import Page, Route, RouteCall

from . import store
from .checks import CSP
from .render import HTML

PAGE_CACHE = "public, max-age=0, must-revalidate"
ASSET_CACHE = "public, max-age=31536000, immutable"
BASE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
TAGS = ("website",)


NOT_FOUND = (
    b"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Not found</title></head>"
    b"<body><h1>Not found</h1><p>There is no page at this address.</p></body></html>"
)


def _missing() -> Page:
    """Visitors are people: a page, not the API's error object."""
    return Page(NOT_FOUND, status=404, headers={**BASE_HEADERS, "Cache-Control": "no-store"}, media_type=HTML)


def _immutable(path: str) -> bool:
    """site.<hash>.css, favicon.<hash>.svg: a new build gives a new name."""
    parts = path.split(".")
    return len(parts) == 3 and len(parts[1]) == 12


async def _answer(slug: str, path: str) -> Page:
    site = await store.by_slug(slug)
    if site is None:
        return _missing()
    found = await store.file(site["id"], path)
    if found is None and "." not in path:
        path = f"{path}.html"  # /sites/x/about answers about.html, as GitHub Pages does
        found = await store.file(site["id"], path)
    if found is None:
        return _missing()
    cache = ASSET_CACHE if _immutable(path) else PAGE_CACHE
    return Page(bytes(found["body"]), headers={**BASE_HEADERS, "Cache-Control": cache}, media_type=found["media_type"])


async def home(call: RouteCall) -> Page:
    slug = call.params["slug"]
    if not (call.request.raw_path or call.request.path).endswith("/"):  # relative links need the folder's slash
        return Page(b"", status=308, headers={"Location": f"/sites/{slug}/"}, media_type=HTML)
    return await _answer(slug, "index.html")


async def one_file(call: RouteCall) -> Page:
    return await _answer(call.params["slug"], call.params["file"])


ROUTES = (
    Route(
        method="GET",
        path="/sites/{slug}",
        name="website_home",
        title="A site's home page",
        description="The home page of a site built by website_build, served by this service.",
        handle=home,
        auth="public",
        page=True,
        rate_limit=None,
        tags=TAGS,
        statuses=(308, 404),
        param_docs=(("slug", "The site's slug (its build result's `slug`)."),),
    ),
    Route(
        method="GET",
        path="/sites/{slug}/{file}",
        name="website_file",
        title="A file of a site",
        description="A page (about.html, or about), the stylesheet, the favicon, sitemap.xml or robots.txt of a site "
        "built by website_build.",
        handle=one_file,
        auth="public",
        page=True,
        rate_limit=None,
        tags=TAGS,
        statuses=(404,),
        param_docs=(("slug", "The site's slug."), ("file", "The file's name.")),
    ),
)
