"""Page bytes -> Markdown of the main content, title and description.

Pure and synchronous (CPU work): `web_read` runs it in a thread. trafilatura
finds the main content (navigation, footers and other boilerplate left out) and
writes it as Markdown; when it finds nothing (a page that is only a heading, say)
its plain-text baseline extraction stands in.
"""

from __future__ import annotations

import codecs
import copy
import dataclasses

import trafilatura
from lxml import html as lxml_html

MAX_MARKDOWN_BYTES = 50 * 1024  # "at most 50 KB" (docs/web.md), counted in UTF-8 bytes

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SNIFF_BYTES = 1024
_HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<!--", b"<meta", b"<title", b"<div", b"<p")
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclasses.dataclass(frozen=True)
class Extracted:
    markdown: str  # empty when the page has no readable text
    title: str | None
    description: str | None
    truncated: bool  # the markdown was cut to MAX_MARKDOWN_BYTES


def accepts(media_type: str | None) -> bool:
    """Content types worth downloading: HTML, any text/*, or none given (sniffed)."""
    return media_type is None or media_type in HTML_TYPES or media_type.startswith("text/")


def _looks_binary(body: bytes) -> bool:
    head = body[:_SNIFF_BYTES]
    if head.startswith(_BOMS[1:]):
        return False  # UTF-16 text has NUL bytes
    return head.startswith(b"%PDF-") or b"\x00" in head


def _looks_like_html(body: bytes) -> bool:
    head = body[:_SNIFF_BYTES].lstrip(codecs.BOM_UTF8 + b" \t\r\n").lower()
    return head.startswith(_HTML_STARTS)


def _decode_text(body: bytes, charset: str | None) -> str:
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return body.decode(encoding, errors="replace")
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except LookupError:
            pass
    return body.decode("utf-8", errors="replace")


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = " ".join(value.split())
    return value or None


def truncate_utf8(text: str, limit: int = MAX_MARKDOWN_BYTES) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    # errors="ignore" drops only the partial character the byte cut left at the end.
    return data[:limit].decode("utf-8", errors="ignore"), True


def _parse_html(body: bytes, charset: str | None) -> lxml_html.HtmlElement | None:
    # A charset named by the server wins; without one trafilatura reads the
    # page's own <meta charset> (or guesses) from the bytes.
    content: bytes | str = _decode_text(body, charset) if charset else body
    tree = trafilatura.load_html(content)
    if tree is None:
        # trafilatura refuses a bare fragment ("<h1>x</h1>" alone); wrapped, it reads it.
        text = content if isinstance(content, str) else _decode_text(body, None)
        tree = trafilatura.load_html(f"<html><body><div>{text}</div></body></html>")
    return tree


def _from_html(body: bytes, charset: str | None, url: str) -> tuple[str, str | None, str | None]:
    tree = _parse_html(body, charset)
    if tree is None:
        return "", None, None
    meta = trafilatura.extract_metadata(copy.deepcopy(tree), default_url=url)
    markdown = trafilatura.extract(
        copy.deepcopy(tree),
        url=url,
        output_format="markdown",
        include_comments=False,
        include_tables=True,
        include_links=True,
        include_images=False,
    )
    if not markdown or not markdown.strip():
        markdown = trafilatura.baseline(tree)[1]
    return markdown or "", _clean(meta.title), _clean(meta.description)


def extract_page(body: bytes, media_type: str | None, charset: str | None, url: str) -> Extracted:
    """Main content of a fetched page. The caller decides what an empty result means.

    Raises ValueError for a body that is binary whatever its label says.
    """
    if _looks_binary(body):
        raise ValueError("binary body")
    is_html = media_type in HTML_TYPES or (media_type is None and _looks_like_html(body))
    if is_html:
        markdown, title, description = _from_html(body, charset, url)
    else:
        # Plain text (text/plain, text/markdown, text/csv, ...) is already readable: kept as sent.
        markdown, title, description = _decode_text(body, charset), None, None
    markdown = markdown.strip()
    markdown, truncated = truncate_utf8(markdown)
    return Extracted(markdown=markdown, title=title, description=description, truncated=truncated)
