"""The static build: a site's pages through Jinja2 templates (autoescaped), its stylesheet and
favicon under content-hashed names, sitemap.xml and robots.txt — every file in memory as
bytes, the same files whether this service serves them or GitHub Pages does."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from collections.abc import Sequence
from pathlib import Path

import jinja2

from . import wire
from .copywriting import PageCopy

TEMPLATES = Path(__file__).parent / "templates"
HTML = "text/html; charset=utf-8"
MEDIA_TYPES = {
    ".html": HTML,
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
}
# Named palettes: brand colour and page colours. Every pair text is drawn in is checked for
# WCAG AA contrast (4.5:1) when the site is built, a brand colour given as hex included.
PALETTES = {
    "harbour": ("#1d4e89", "#ffffff", "#1b1f24", "#eef3f8"),
    "forest": ("#2f5d3a", "#ffffff", "#1c231d", "#eef4ef"),
    "slate": ("#37474f", "#ffffff", "#1d2327", "#eceff1"),
    "sunset": ("#a23b1c", "#ffffff", "#241a17", "#fbf0ea"),
    "plum": ("#5b2a6e", "#ffffff", "#1f1a22", "#f3edf5"),
}
FONTS = {
    "system": 'system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif',
    "serif": 'Georgia,"Iowan Old Style","Palatino Linotype",Palatino,"Times New Roman",serif',
    "humanist": '"Gill Sans","Gill Sans MT",Seravek,Calibri,"Trebuchet MS",sans-serif',
    "mono": 'ui-monospace,"SF Mono",Menlo,Consolas,"Liberation Mono",monospace',
}
AA = 4.5

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=jinja2.select_autoescape(("html", "xml", "svg", "html.j2", "xml.j2", "svg.j2")),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


@dataclasses.dataclass(frozen=True)
class File:
    path: str
    media_type: str
    body: bytes


@dataclasses.dataclass(frozen=True)
class Colours:
    brand: str
    brand_ink: str
    ink: str
    muted: str
    paper: str
    tint: str


# -- colour -------------------------------------------------------------------------------
def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _luminance(hex_colour: str) -> float:
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _darker(hex_colour: str, factor: float = 0.9) -> str:
    return "#" + "".join(f"{int(v * factor):02x}" for v in _rgb(hex_colour))


def readable(colour: str, against: Sequence[str]) -> str:
    """`colour`, darkened until it reaches 4.5:1 against each of `against`."""
    while any(contrast(colour, other) < AA for other in against) and colour != "#000000":
        colour = _darker(colour)
    return colour


def colours(style: wire.Style | None) -> Colours:
    palette = (style.palette if style else None) or "harbour"
    if palette in PALETTES:
        brand, brand_ink, ink, tint = PALETTES[palette]
    else:
        brand, brand_ink, ink, tint = palette.lower(), "#ffffff", "#1b1f24", "#f1f3f5"
    paper = "#ffffff"
    brand = readable(brand, (brand_ink, paper, tint))
    return Colours(brand, brand_ink, readable(ink, (paper, tint)), readable("#4a525a", (tint,)), paper, tint)


# -- the build ----------------------------------------------------------------------------
def _hashed(stem: str, suffix: str, body: bytes) -> str:
    return f"{stem}.{hashlib.sha256(body).hexdigest()[:12]}{suffix}"


def media_type(path: str) -> str:
    return MEDIA_TYPES.get(Path(path).suffix, "application/octet-stream")


def build(
    brief: wire.WebsiteBrief,
    pages: Sequence[PageCopy],
    base_url: str,
    today: datetime.date,
) -> list[File]:
    """Every file of the site; `base_url` (ending in /) is where its home page will be."""
    style = brief.style
    c = colours(style)
    font = FONTS[(style.font if style else None) or "system"]
    css = _ENV.get_template("site.css.j2").render(name=brief.name, c=c, font=font).encode()
    letter = next((ch for ch in brief.name if ch.isalnum()), "•").upper()
    favicon = _ENV.get_template("favicon.svg.j2").render(brand=c.brand, ink=c.brand_ink, letter=letter).encode()
    assets = {"css": _hashed("site", ".css", css), "favicon": _hashed("favicon", ".svg", favicon)}
    nav = [{"page": p.page, "title": p.title, "href": href(p.page)} for p in pages]
    site = {
        "name": brief.name,
        "lang": "en",
        "contact_email": brief.contact_email,
        "year": today.year,
        "base_url": base_url,
    }
    template = _ENV.get_template("page.html.j2")
    files = [
        File(
            f"{p.page}.html",
            HTML,
            template.render(
                site=site, page={**dataclasses.asdict(p), "canonical": canonical(p.page)}, nav=nav, assets=assets
            ).encode(),
        )
        for p in pages
    ]
    sitemap = _ENV.get_template("sitemap.xml.j2").render(
        urls=[f"{base_url}{canonical(p.page)}" for p in pages], lastmod=today.isoformat()
    )
    robots = _ENV.get_template("robots.txt.j2").render(sitemap=f"{base_url}sitemap.xml")
    files += [
        File(assets["css"], media_type(assets["css"]), css),
        File(assets["favicon"], media_type(assets["favicon"]), favicon),
        File("sitemap.xml", media_type("sitemap.xml"), sitemap.encode()),
        File("robots.txt", media_type("robots.txt"), robots.encode()),
    ]
    return files


def href(page: str) -> str:
    """The page's link, relative to the site's home (the home page is its folder)."""
    return "./" if page == "index" else f"{page}.html"


def canonical(page: str) -> str:
    """The page's address after the site's base URL."""
    return "" if page == "index" else f"{page}.html"
