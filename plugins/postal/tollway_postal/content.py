"""The letter's content: plain text made into printable HTML, and an estimate of how many
US Letter pages a content prints on, so a letter longer than the price covers is refused
before payment. The estimate counts lines of 80 characters, 50 to a page, with the top of
page one left to the address window; HTML is estimated from its visible text (tags
dropped, block elements as line breaks), so large fonts or images may print more pages
than estimated."""

from __future__ import annotations

import html
import math
from html.parser import HTMLParser

MAX_PAGES = 6
CHARS_PER_LINE = 80
LINES_PER_PAGE = 50
FIRST_PAGE_LINES = 32  # the upper third of page one carries the addresses

_BLOCKS = {
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "ul",
    "ol",
    "section",
    "article",
    "hr",
    "pre",
    "blockquote",
}
_HIDDEN = {"script", "style", "head", "title", "template"}


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(" ".join(data.split()) if data.strip() else " ")


def visible_text(markup: str) -> str:
    """The text an HTML document shows, one line per block element."""
    parser = _Visible()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


def estimated_pages(text: str) -> int:
    """US Letter pages `text` prints on, at 80 characters a line and 50 lines a page."""
    lines = sum(max(1, math.ceil(len(line) / CHARS_PER_LINE)) for line in text.splitlines()) or 1
    if lines <= FIRST_PAGE_LINES:
        return 1
    return 1 + math.ceil((lines - FIRST_PAGE_LINES) / LINES_PER_PAGE)


def text_letter(text: str) -> str:
    """Plain text as a printable HTML letter: line breaks kept, the top of page one left
    clear for the address window."""
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
        "@page{size:8.5in 11in;margin:0.6in 0.75in}"
        "body{margin:0;padding-top:2.9in;font-family:Georgia,'Times New Roman',serif;font-size:11pt;line-height:1.35;white-space:pre-wrap}"
        "</style></head><body>" + html.escape(text) + "</body></html>"
    )
