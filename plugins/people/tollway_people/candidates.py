"""Disambiguation: the people the pages and the enrichment record describe, grouped into
candidates, each scored against the hints given, and each candidate's profile taken from
what its sources say (extractive).

Grouping: mentions naming the same employer are one person; a mention naming no employer
joins the one candidate whose location it shares, or the only candidate there is, and is
otherwise left out; the enrichment record joins the candidate of its employer.

A candidate's match score is the mean over the hints given (company, location, email, url)
of: 1 when the hint fits what its sources say, 0 when they say something else, 0.5 when they
say nothing about it (a free-mail address says nothing about an employer; another page on the
`url`'s site says little, and scores 0.5 too). A value's
confidence grows with the sources that agree on it and with the candidate's score:
min(0.95, 0.45 + 0.2 × sources) × (0.5 + 0.5 × score), two decimals."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tollway_web.search_tool import normalise_url

from . import sensitive
from .extract import Mention
from .match import companies_agree, company_form, email_form, name_form, url_host
from .wire import Cited, PersonProfile

FREE_MAIL = frozenset(
    {"gmail.com", "googlemail.com", "yahoo.com", "outlook.com", "hotmail.com", "live.com", "icloud.com", "me.com",
     "aol.com", "proton.me", "protonmail.com", "gmx.com", "gmx.de", "mail.com", "yandex.com", "zoho.com"}
)  # fmt: skip
FIT = 0.5  # a candidate fits the hints from this score up
CLOSE = 0.2  # a second candidate this close to the best one makes the answer ambiguous
_LINK_FIELDS = ("linkedin_url", "github_url", "twitter_url", "facebook_url")


@dataclasses.dataclass(frozen=True)
class Record:
    """The enrichment provider's record of the person, in the terms used here."""

    source: str  # the URL cited for it: its public profile, or `enrichment:<provider>`
    full_name: str | None
    role: str | None
    employer: str | None
    employer_domain: str | None
    location: str | None
    work_email: str | None
    links: tuple[str, ...]


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _title(value: str | None) -> str | None:
    """PDL writes names, titles and places in lower case: "head of finance" -> "Head Of Finance"."""
    if value is None or value != value.lower():
        return value
    return " ".join(w[:1].upper() + w[1:] for w in value.split())


def _https(url: str) -> str:
    return url if "://" in url else "https://" + url


def record_of(person: Mapping[str, Any], provider: str) -> Record:
    links = tuple(_https(u) for f in _LINK_FIELDS if (u := _text(person.get(f))))
    return Record(
        source=links[0] if links else f"enrichment:{provider}",
        full_name=_title(_text(person.get("full_name"))),
        role=_title(_text(person.get("job_title"))),
        employer=_title(_text(person.get("job_company_name"))),
        employer_domain=_text(person.get("job_company_website")),
        location=_title(_text(person.get("location_name"))),
        work_email=_text(person.get("work_email")),
        links=links,
    )


@dataclasses.dataclass
class Group:
    """One candidate: the mentions and the record that describe the same person."""

    mentions: list[Mention] = dataclasses.field(default_factory=list)
    record: Record | None = None

    def employers(self) -> list[tuple[str, str]]:
        out = [(m.employer, m.url) for m in self.mentions if m.employer]
        if self.record is not None:
            out += [(e, self.record.source) for e in (self.record.employer, self.record.employer_domain) if e]
        return out

    def locations(self) -> list[tuple[str, str]]:
        out = [(m.location, m.url) for m in self.mentions if m.location]
        if self.record is not None and self.record.location:
            out.append((self.record.location, self.record.source))
        return out

    def roles(self) -> list[tuple[str, str]]:
        out = [(m.role, m.url) for m in self.mentions if m.role]
        if self.record is not None and self.record.role:
            out.append((self.record.role, self.record.source))
        return out

    def urls(self) -> list[str]:
        return [m.url for m in self.mentions] + ([self.record.source] if self.record is not None else [])

    def text(self) -> str:
        return " ".join(s for m in self.mentions for s in m.sentences)


def _places_agree(a: str, b: str) -> bool:
    """Two places agree when the first part of one (its city) is a part of the other."""
    pa = [name_form(p) for p in a.split(",") if name_form(p)]
    pb = [name_form(p) for p in b.split(",") if name_form(p)]
    return bool(pa and pb) and (pa[0] in pb or pb[0] in pa)


def group(mentions: Iterable[Mention], record: Record | None) -> list[Group]:
    groups: list[Group] = []
    loose: list[Mention] = []
    for found in mentions:
        if found.employer is None:
            loose.append(found)
            continue
        home = next((g for g in groups if any(companies_agree(found.employer, e) for e, _ in g.employers())), None)
        if home is None:
            groups.append(home := Group())
        home.mentions.append(found)
    if record is not None:
        named = [e for e in (record.employer, record.employer_domain) if e]
        home = next((g for g in groups if any(companies_agree(n, e) for n in named for e, _ in g.employers())), None)
        if home is None:
            groups.append(home := Group())
        home.record = record
    for found in loose:
        places = [
            g for g in groups if found.location and any(_places_agree(found.location, p) for p, _ in g.locations())
        ]
        if len(places) == 1:
            places[0].mentions.append(found)
        elif not groups:
            groups.append(Group(mentions=[found]))
        elif len(groups) == 1:
            groups[0].mentions.append(found)
    return groups


def _fit(known: list[str], agrees: Callable[[str], bool], said: bool = False) -> float:
    if said or any(agrees(k) for k in known):
        return 1.0
    return 0.0 if known else 0.5


def score(g: Group, hints: Mapping[str, str]) -> tuple[float, list[str]]:
    """The candidate's match score and the hints that fit (see the module docstring)."""
    text = company_text = name_form(g.text())
    parts: dict[str, float] = {}
    if company := hints.get("company"):
        said = bool(company_form(company)) and f" {company_form(company)} " in f" {company_text} "
        parts["company"] = _fit([e for e, _ in g.employers()], lambda e: companies_agree(company, e), said)
    if location := hints.get("location"):
        city = name_form(location.split(",")[0])
        said = bool(city) and f" {city} " in f" {text} "
        parts["location"] = _fit([p for p, _ in g.locations()], lambda p: _places_agree(location, p), said)
    if email := hints.get("email"):
        email = email_form(email)
        domain = email.rsplit("@", 1)[1]
        if (g.record is not None and email_form(g.record.work_email or "") == email) or email in g.text().lower():
            parts["email"] = 1.0
        elif domain in FREE_MAIL:
            parts["email"] = 0.5
        else:
            parts["email"] = _fit([e for e, _ in g.employers()], lambda e: companies_agree(domain, e))
    if url := hints.get("url"):
        page, host = normalise_url(url), url_host(url)
        if any(normalise_url(u) == page for u in g.urls()):
            parts["url"] = 1.0
        else:  # another page of the same site says little (a platform hosts everyone's profiles)
            parts["url"] = 0.5 if any(url_host(u) == host for u in g.urls()) else 0.0
    if not parts:
        return 0.0, []
    return round(sum(parts.values()) / len(parts), 2), sorted(k for k, v in parts.items() if v == 1.0)


def confidence(sources: int, match: float) -> float:
    return round(min(0.95, 0.45 + 0.2 * sources) * (0.5 + 0.5 * match), 2)


def _chosen(values: list[tuple[str, str]], same: Callable[[str, str], bool], match: float) -> Cited | None:
    """The value most sources agree on (the first given wins a tie), with those sources."""
    best, most = None, 0
    for value, _ in values:
        agreeing = sum(1 for other, _ in values if same(value, other))
        if agreeing > most:
            best, most = value, agreeing
    if best is None:
        return None
    sources = list(dict.fromkeys(u for v, u in values if same(best, v)))
    return Cited(value=best, sources=sources, confidence=confidence(len(sources), match))


def summary_of(g: Group, match: float, limit: int = 3) -> Cited | None:
    ordered = sorted(g.mentions, key=lambda m: not m.about)
    picked: list[tuple[str, str]] = []
    for m in ordered:
        for sentence in m.sentences:
            if len(sentence.split()) >= 5 and sentence not in (s for s, _ in picked):
                picked.append((sentence, m.url))
                break  # one sentence a page: the summary spreads over the sources
        if len(picked) == limit:
            break
    if not picked:
        return None
    sources = list(dict.fromkeys(u for _, u in picked))
    return Cited(value=" ".join(s for s, _ in picked), sources=sources, confidence=confidence(len(sources), match))


def profile_of(g: Group, name: str, match: float) -> PersonProfile:
    """The candidate's profile as its sources say it (extractive)."""
    full = (g.record.full_name if g.record is not None else None) or " ".join(w.capitalize() for w in name.split())
    every = list(dict.fromkeys(g.urls()))
    links: list[Cited] = []
    for m in g.mentions:
        if m.about:
            links.append(Cited(value=m.url, sources=[m.url], confidence=confidence(1, match)))
    if g.record is not None:
        links += [Cited(value=u, sources=[g.record.source], confidence=confidence(1, match)) for u in g.record.links]
    links = list({c.value.rstrip("/").lower(): c for c in reversed(links)}.values())[::-1]  # the first of each
    return PersonProfile(
        names=[Cited(value=full, sources=every, confidence=confidence(len(every), match))],
        role=_chosen(g.roles(), lambda a, b: name_form(a) == name_form(b), match),
        employer=_chosen(g.employers(), companies_agree, match),
        location=_chosen(g.locations(), _places_agree, match),
        links=[c for c in links if not sensitive.touches(c.value)],
        summary=summary_of(g, match),
    )
