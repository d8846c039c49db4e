"""What people research never answers: text about a person's health, religion, political
opinion, sexual orientation, ethnicity, criminal record or home address.

`category(text)` names the first category a text touches (None when it touches none); the
pipeline drops every sentence, field value and link that touches one, whether a page or the
language model wrote it, and counts what it dropped (`meta.withheld`). The word lists err
towards withholding: a false alarm costs a sentence of summary, a miss costs a person's
privacy."""

from __future__ import annotations

import re

_WORDS: dict[str, tuple[str, ...]] = {
    "health": (
        r"diagnos\w*", r"illness(es)?", r"disease", r"disorder", r"cancer", r"tumou?r", r"diabet\w*", r"hiv", r"aids",
        r"chemotherapy", r"therapy", r"therapist", r"psychiatr\w*", r"mental health", r"depression", r"anxiety",
        r"bipolar", r"schizophreni\w*", r"autis\w*", r"adhd", r"pregnan\w*", r"miscarriage", r"disabilit\w*",
        r"disabled", r"medication", r"rehab", r"addiction", r"alcoholi\w*", r"surgery", r"hospitali[sz]ed",
        r"medical condition", r"chronic", r"terminal(ly)? ill", r"health (issue|problem|condition)s?",
    ),
    "religion": (
        r"religio\w*", r"church(es)?", r"mosque", r"synagogue", r"temple", r"parish", r"congregation", r"worship\w*",
        r"christian\w*", r"catholic\w*", r"protestant\w*", r"evangelical", r"baptist", r"mormon", r"muslim",
        r"islam\w*", r"jewish", r"judaism", r"hindu\w*", r"buddhis\w*", r"sikh\w*", r"atheis\w*", r"agnostic",
        r"(his|her|their) faith", r"devout", r"pray\w*", r"bible study",
    ),
    "political opinion": (
        r"democrats?", r"democratic party", r"republicans?", r"republican party", r"gop", r"liberal", r"conservative",
        r"progressive", r"socialist", r"communist", r"libertarian", r"tories", r"tory", r"labour party",
        r"political (views?|opinions?|party|affiliation|leanings?)", r"politically", r"voted (for|against)",
        r"votes? for", r"registered voter", r"campaign (donation|donor|contribution)s?", r"donated to .{0,40}campaign",
        r"pro-?life", r"pro-?choice", r"maga", r"supporter of the .{0,30}party",
    ),
    "sexual orientation": (
        r"gay", r"lesbian", r"bisexual", r"homosexual", r"heterosexual", r"queer", r"lgbt\w*", r"sexual orientation",
        r"sexuality", r"came out", r"coming out", r"asexual", r"pansexual", r"transgender", r"same-sex",
    ),
    "ethnicity": (
        r"ethnicity", r"ethnic(ally)?", r"race", r"racial(ly)?", r"african[- ]american", r"black american",
        r"hispanic", r"latin[oax]", r"caucasian", r"white american", r"asian[- ]american", r"native american",
        r"indigenous", r"pacific islander", r"arab[- ]american", r"of .{0,20} descent", r"heritage",
    ),
    "criminal records": (
        r"arrest\w*", r"convict\w*", r"criminal", r"crimes?", r"felon\w*", r"misdemeanou?r", r"jail\w*",
        r"prison\w*", r"incarcerat\w*", r"inmate", r"sentenced", r"indict\w*", r"charged with", r"pleaded guilty",
        r"guilty plea", r"probation", r"parole", r"dui", r"dwi", r"mugshot", r"court records?", r"offen[cs]e",
        r"sex offender", r"police record",
    ),
    "home address": (
        r"home address", r"lives at", r"residing at", r"resides at", r"residence", r"house at", r"apartment",
        r"apt\.?", r"p\.?o\.? box",
    ),
}  # fmt: skip

_PATTERNS = {name: re.compile(r"\b(" + "|".join(words) + r")\b", re.IGNORECASE) for name, words in _WORDS.items()}
# A street address: a house number, one to four words, a street type (1234 Elm Street, 12 N Oak Ave.)
_STREET = re.compile(
    r"\b\d{1,6}\s+(?:[A-Za-z0-9.'-]+\s+){1,4}(?:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|"
    r"court|ct|place|pl|way|terrace|ter|circle|cir|highway|hwy|parkway|pkwy)\b\.?",
    re.IGNORECASE,
)
_POSTCODE = re.compile(r"\b[A-Z]{2}\s+\d{5}(?:-\d{4})?\b")  # a US state and ZIP code


def category(text: str | None) -> str | None:
    """The first sensitive category `text` touches, or None."""
    if not text:
        return None
    for name, pattern in _PATTERNS.items():
        if pattern.search(text):
            return name
    if _STREET.search(text) or _POSTCODE.search(text):
        return "home address"
    return None


def touches(text: str | None) -> bool:
    return category(text) is not None
