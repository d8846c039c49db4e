"""A page's copy: the brief's own content laid out as is, or written by the `llm` provider
from the brief and then checked — a sentence whose figures, addresses, links or claims of
standing (awards, certifications, "since 1990", "#1") are not in the brief is taken out."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from . import wire

MAX_BLOCKS = 200
ATTEMPTS = 2  # the model is told once which sentences the brief does not support


@dataclasses.dataclass(frozen=True)
class Block:
    kind: str  # p, h2, ul
    text: str = ""
    items: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class PageCopy:
    page: str  # the file name without .html
    title: str  # the page's name in the navigation and the <title>
    headline: str  # its one h1
    description: str  # its meta description
    blocks: tuple[Block, ...]


class Chat(Protocol):
    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]: ...


# -- the brief's content, as is -----------------------------------------------------------
def blocks_of(text: str) -> tuple[Block, ...]:
    """Paragraphs parted by blank lines; `## ` lines are headings, `- ` / `* ` lines list items."""
    out: list[Block] = []
    for chunk in re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip()):
        run: list[str] = []  # the lines of the paragraph or list being read
        kind = "p"
        for line in (line.strip() for line in chunk.split("\n")):
            if not line:
                continue
            heading = line.startswith(("# ", "## ", "### "))
            item = line.startswith(("- ", "* "))
            this = "h2" if heading else "ul" if item else "p"
            if run and (this != kind or heading):
                out.append(_block(kind, run))
                run = []
            kind = this
            run.append(line.lstrip("#").strip() if heading else line[2:].strip() if item else line)
        if run:
            out.append(_block(kind, run))
    return tuple(b for b in out if b.text or b.items)[:MAX_BLOCKS]


def _block(kind: str, lines: list[str]) -> Block:
    if kind == "ul":
        return Block("ul", items=tuple(lines))
    return Block(kind, " ".join(lines))


def as_is(slug: str, page: wire.PageBrief) -> PageCopy:
    return PageCopy(
        page=slug,
        title=page.title,
        headline=page.title,
        description=_one_line(page.purpose, 160),
        blocks=blocks_of(page.content or ""),
    )


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rsplit(" ", 1)[0] + "…"


# -- written by the model -----------------------------------------------------------------
SYSTEM = (
    "You write the copy of one page of a small business or project website. Use only facts given in the "
    "brief: never invent prices, figures, dates, awards, certifications, addresses, phone numbers, "
    "testimonials or links. Plain, concrete sentences. Answer by calling page_copy once."
)
PAGE_COPY = {
    "type": "function",
    "function": {
        "name": "page_copy",
        "description": "The page's copy.",
        "parameters": {
            "type": "object",
            "properties": {
                "headline": {"type": "string", "description": "The page's one heading."},
                "intro": {"type": "string", "description": "One or two opening sentences."},
                "sections": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "heading": {"type": "string"},
                            "paragraphs": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["heading", "paragraphs"],
                    },
                },
            },
            "required": ["headline", "intro", "sections"],
        },
    },
}


def brief_text(brief: wire.WebsiteBrief) -> str:
    """Everything the brief says: what a written sentence may draw its facts from."""
    parts = [brief.name, brief.description, brief.contact_email or "", brief.domain or ""]
    for page in brief.pages:
        parts += [page.title, page.purpose, page.content or ""]
    return "\n".join(parts)


def _prompt(brief: wire.WebsiteBrief, page: wire.PageBrief) -> str:
    others = ", ".join(p.title for p in brief.pages)
    given = f"\nWhat the owner wrote for this page:\n{page.content}" if page.content else ""
    return (
        f"Site: {brief.name}\nAbout it: {brief.description}\nPages of the site: {others}\n"
        f"Contact: {brief.contact_email or 'not given'}\n\nWrite the page “{page.title}”. Its purpose: "
        f"{page.purpose}{given}"
    )


async def written(llm: Chat, brief: wire.WebsiteBrief, slug: str, page: wire.PageBrief) -> tuple[PageCopy, list[str]]:
    """The model's copy of one page, with every unsupported sentence taken out; and those sentences."""
    source = brief_text(brief)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _prompt(brief, page)},
    ]
    removed: list[str] = []
    copy: PageCopy | None = None
    for attempt in range(ATTEMPTS):
        reply = await llm.chat(messages, [PAGE_COPY])
        args = _arguments(reply)
        copy = _copy_of(slug, page, args)
        bad = [s for s in sentences(copy) if untraceable(s, source)]
        if not bad:
            return copy, removed
        if attempt + 1 < ATTEMPTS:
            messages.append(reply)
            calls = reply.get("tool_calls") or [{"id": "page_copy"}]
            listed = "\n".join(f"- {s} ({'; '.join(untraceable(s, source))})" for s in bad)
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": calls[0].get("id", "page_copy"),
                    "content": "These sentences state what the brief does not say; write the page again "
                    f"without them:\n{listed}",
                }
            )
    assert copy is not None
    kept, removed = _without_unsupported(copy, source)
    return kept, removed


def _arguments(reply: dict[str, Any]) -> dict[str, Any]:
    for call in reply.get("tool_calls") or []:
        if call.get("function", {}).get("name") == "page_copy":
            try:
                found = json.loads(call["function"].get("arguments") or "{}")
            except ValueError:
                return {}
            return found if isinstance(found, dict) else {}
    content = reply.get("content")
    return {"headline": "", "intro": content if isinstance(content, str) else "", "sections": []}


def _text(value: Any, limit: int = 2000) -> str:
    return " ".join(str(value).split())[:limit] if isinstance(value, (str, int, float)) else ""


def _copy_of(slug: str, page: wire.PageBrief, args: dict[str, Any]) -> PageCopy:
    blocks: list[Block] = []
    intro = _text(args.get("intro"))
    if intro:
        blocks.append(Block("p", intro))
    sections = args.get("sections") if isinstance(args.get("sections"), list) else []
    for section in sections[:20]:
        if not isinstance(section, dict):
            continue
        heading = _text(section.get("heading"), 120)
        paragraphs = [p for p in (_text(x) for x in section.get("paragraphs") or [] if isinstance(x, str)) if p]
        if heading and paragraphs:
            blocks.append(Block("h2", heading))
        blocks += [Block("p", p) for p in paragraphs[:20]]
    headline = _text(args.get("headline"), 120) or page.title
    return PageCopy(slug, page.title, headline, _one_line(page.purpose, 160), tuple(blocks[:MAX_BLOCKS]))


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9“\"'(])")


def _split(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def sentences(copy: PageCopy) -> list[str]:
    out = [copy.headline]
    for block in copy.blocks:
        out += _split(block.text) if block.kind == "p" else [block.text, *block.items]
    return [s for s in out if s]


def _without_unsupported(copy: PageCopy, source: str) -> tuple[PageCopy, list[str]]:
    removed: list[str] = []
    blocks: list[Block] = []
    for block in copy.blocks:
        if block.kind == "p":
            kept = []
            for s in _split(block.text):
                (removed.append(s) if untraceable(s, source) else kept.append(s))
            if kept:
                blocks.append(Block("p", " ".join(kept)))
        elif block.kind == "h2":
            if untraceable(block.text, source):
                removed.append(block.text)
            else:
                blocks.append(block)
        else:
            items = []
            for item in block.items:
                (removed.append(item) if untraceable(item, source) else items.append(item))
            if items:
                blocks.append(Block("ul", items=tuple(items)))
    headline = copy.headline
    if untraceable(headline, source):
        removed.append(headline)
        headline = copy.title
    return dataclasses.replace(copy, headline=headline, blocks=tuple(blocks)), removed


# -- the claim check ----------------------------------------------------------------------
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_LINK = re.compile(
    r"(?:https?://|www\.)[^\s)]+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|dev|co|uk|de|fr|app)\b", re.I
)
_MONEY = re.compile(r"[$€£¥]|\b(?:usd|eur|gbp|dollars?|euros?|pounds?|cents?)\b", re.I)
# Words that claim standing or a record: they must come from the brief.
CLAIM_WORDS = (
    "award", "awarded", "award-winning", "winner", "winning", "certified", "certification", "accredited",
    "licensed", "licenced", "guarantee", "guaranteed", "#1", "number one", "no. 1", "best", "leading",
    "top-rated", "top rated", "rated", "trusted by", "official", "patented", "patent", "founded", "since",
    "established", "years of experience", "reviews", "testimonial", "free", "discount", "street",
    "avenue", "road", "suite", "floor", "phone", "call us",
)  # fmt: skip


def _normal(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


def _digits(number: str) -> str:
    return re.sub(r"[.,]", "", number)


def untraceable(sentence: str, source: str) -> list[str]:
    """Why `sentence` says what `source` does not: each figure, money word, address, link or
    claim word it has that the source lacks (empty: traceable)."""
    said = _normal(sentence)
    known = _normal(source)
    known_numbers = {_digits(n) for n in _NUMBER.findall(known)}
    reasons = [f"the figure {n}" for n in _NUMBER.findall(said) if _digits(n) not in known_numbers]
    reasons += [f"the address {e}" for e in _EMAIL.findall(said) if e not in known]
    reasons += [f"the link {u}" for u in _LINK.findall(said) if u.lower() not in known and "@" not in u]
    if _MONEY.search(said) and not _MONEY.search(known):
        reasons.append("a price")
    for word in CLAIM_WORDS:
        if re.search(rf"(?<![\w#]){re.escape(word)}(?!\w)", said) and not re.search(
            rf"(?<![\w#]){re.escape(word)}(?!\w)", known
        ):
            reasons.append(f"the claim “{word}”")
    return reasons


def page_slugs(titles: Sequence[str], taken: Sequence[str] = ()) -> list[str]:
    """A file name per page: `index` for the first, else its title's words, unique."""
    used = set(taken)
    out: list[str] = []
    for n, title in enumerate(titles):
        if n == 0 and "index" not in used:
            slug = "index"
        else:
            base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:50].strip("-") or "page"
            slug, k = base, 2
            while slug in used or slug == "index":
                slug, k = f"{base}-{k}", k + 1
        used.add(slug)
        out.append(slug)
    return out
