"""Extractive reading: what a page says about the person named, without a language model.

A page is about the person when it names them in full (every word of the name, in order,
case and accents aside). From the sentences that name them it takes the current role and
employer ("Dana Reyes is the head of finance at Example Corp", "Dana Reyes, CFO at
Example", a title "Dana Reyes - Head of Finance - Example Corp"), a location ("based in
Austin, Texas") and the sentences themselves for a summary. Sensitive sentences are
dropped before anything is taken from them (`sensitive.py`)."""

from __future__ import annotations

import dataclasses
import re
import unicodedata

from . import sensitive
from .match import name_form

MAX_SENTENCES = 6  # kept per page, for the summary and the language model
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"[*_`#>|]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_ORG = r"(?P<org>[A-Z0-9][\w&'.-]*(?:\s+(?:[A-Z0-9&][\w&'.-]*|of|and|for|the|de)){0,6})"
_ROLE = r"(?P<role>[A-Za-z][\w&/,' -]{1,70}?)"
_LOCATION = r"(?P<loc>[A-Z][\w.'-]*(?:[ ,]+[A-Z][\w.'-]*){0,4})"


@dataclasses.dataclass(frozen=True)
class Mention:
    """What one page says about the person."""

    url: str
    title: str | None
    role: str | None
    employer: str | None
    location: str | None
    sentences: tuple[str, ...]  # naming the person, sensitive ones dropped
    about: bool  # the page's title names the person: it is a page about them (a public link)
    withheld: int  # sentences dropped as sensitive


def plain(markdown: str) -> str:
    """Markdown as plain text: links as their text, emphasis and heading marks dropped."""
    return _MARKS.sub(" ", _LINK.sub(r"\1", markdown))


def sentences(text: str) -> list[str]:
    return [" ".join(s.split()) for s in _SENTENCE.split(text) if s and s.strip()]


def _name_pattern(name: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in name_form(name).split()]
    return re.compile(r"\b" + r"[\s.,'-]+".join(words) + r"\b", re.IGNORECASE)


def _fold(text: str) -> str:
    """Accents dropped, so "José" is found as "jose" (the pattern is in name form)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _clean(value: str | None, limit: int = 80) -> str | None:
    if value is None:
        return None
    value = " ".join(value.strip(" ,;:-–—.").split())
    return value if 1 < len(value) <= limit and not sensitive.touches(value) else None


def _role_and_employer(name_re: str, text: str) -> tuple[str | None, str | None]:
    """The first role and employer a sentence gives; the connectors are tried strongest first
    ("at" before "of", so "Head of Finance at Example" is not read as working at "Finance")."""
    lead = (
        name_re + r",?\s+(?:is|was named|serves as|works as)\s+(?:(?:a|an|the|our)\s+)?",
        name_re + r",\s+(?:(?:a|an|the)\s+)?",
        name_re + r"\s*[-–—|:]\s*",
    )
    for connector in (r"\s+at\s+", r"\s+(?:with|for)\s+", r"\s*[-–—|,]\s*", r"\s+of\s+"):
        for start in lead:
            found = re.search(start + _ROLE + connector + _ORG, text)
            if found:
                role, org = _clean(found.group("role")), _clean(found.group("org"))
                if org is not None and role is not None and len(role.split()) <= 8:
                    return role, org
    works = re.search(name_re + r"\s+(?:works|worked)\s+(?:at|for)\s+" + _ORG, text)
    return None, _clean(works.group("org")) if works else None


def _about_them(name: str, pattern: re.Pattern[str], lines: list[str]) -> list[int]:
    """Which sentences name the person, and each one right after such a sentence that goes on
    about them (it starts with a pronoun or one of their names: "She is based in Austin.")."""
    words = "|".join(re.escape(w) for w in name_form(name).split())
    goes_on = re.compile(r"^(?:he|she|they|his|her|their|" + words + r")\b", re.IGNORECASE)
    out: list[int] = []
    previous = False
    for i, line in enumerate(lines):
        previous = bool(pattern.search(line)) or (previous and bool(goes_on.match(line)))
        if previous:
            out.append(i)
    return out


def _location(name_re: str, text: str) -> str | None:
    found = re.search(
        r"(?:"
        + name_re
        + r"|\b(?:He|She|They)\b)[^.]{0,80}?\b(?:based in|located in|lives in|works in|from)\s+"
        + _LOCATION,
        text,
    )
    return _clean(found.group("loc"), 60) if found else None


def mention(name: str, url: str, title: str | None, markdown: str) -> Mention | None:
    """What the page says about `name`, or None when it does not name them."""
    pattern = _name_pattern(name)
    lines = sentences(plain(markdown))  # as written, for the summary
    folded = [_fold(line) for line in lines]  # accents dropped, for matching and values
    naming = _about_them(name, pattern, folded)
    head = _fold(title or "")
    if not naming and not pattern.search(head):
        return None
    kept_at = [i for i in naming if not sensitive.touches(lines[i])]
    kept = [folded[i] for i in kept_at]
    name_re = r"(?i:" + pattern.pattern + r")"  # the name in any case; the rest as written
    role = employer = location = None
    for text in ([head] if head and not sensitive.touches(head) else []) + kept:
        found_role, found_employer = _role_and_employer(name_re, text)
        if employer is None and found_employer is not None:
            role, employer = found_role, found_employer
        location = location or _location(name_re, text)
    if location is None and employer is not None:  # "... at Lincoln High School in Portland"
        near = re.search(re.escape(employer) + r",?\s+in\s+" + _LOCATION, " ".join(kept))
        location = _clean(near.group("loc"), 60) if near else None
    return Mention(
        url=url,
        title=title,
        role=role,
        employer=employer,
        location=location,
        sentences=tuple(lines[i] for i in kept_at[:MAX_SENTENCES]),
        about=bool(pattern.search(head)),
        withheld=len(naming) - len(kept),
    )
