"""One SAM.gov contract opportunity as we serve it (`Solicitation`), read from an item of the
Get Opportunities API's `opportunitiesData` list.

SAM.gov's items are loosely typed: blank strings and nulls both mean "no value",
`active` is the text "Yes"/"No", deadlines come as ISO date-times with an offset or as
bare dates, addresses are partial objects whose city/state/country are sometimes
`{code, name}` objects and sometimes plain text, and its own examples write the
text "null" for a missing link. Every reader here tolerates all of these.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from tollway import source_text

NOTICE_ID = re.compile(r"^[0-9a-f]{32}$")
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ].*)?$")
_TRUE = {"yes", "true", "y", "1"}


class SolicitationContact(msgspec.Struct):
    """A point of contact SAM.gov publishes for the notice."""

    type: str | None  # "primary" or "secondary"
    name: str | None
    title: str | None
    email: str | None
    phone: str | None
    fax: str | None


class SolicitationOffice(msgspec.Struct):
    """The contracting office's address."""

    city: str | None
    state: str | None
    zip: str | None
    country_code: str | None


class SolicitationPlace(msgspec.Struct):
    """A place (of performance, or an awardee's address); names and codes as SAM.gov gives them."""

    street_address: str | None  # both street lines, joined by ", "
    city: str | None
    city_code: str | None
    state: str | None
    state_code: str | None
    zip: str | None
    country: str | None
    country_code: str | None


class SolicitationAwardee(msgspec.Struct):
    name: str | None
    uei_sam: str | None  # Unique Entity ID (SAM)
    cage_code: str | None
    duns: str | None
    location: SolicitationPlace | None


class SolicitationAward(msgspec.Struct):
    date: str | None  # YYYY-MM-DD
    number: str | None
    amount_usd: float | None
    awardee: SolicitationAwardee | None


class Solicitation(msgspec.Struct):
    """A contract opportunity (solicitation, presolicitation, award notice, ...) on SAM.gov."""

    notice_id: str  # SAM.gov's noticeId: 32 lower-case hexadecimal characters
    title: str | None
    solicitation_number: str | None
    agency_path: str | None  # the dotted path of organisation names, department first
    agency_path_code: str | None  # the same path as organisation codes
    department: str | None  # the first level of agency_path
    organization_type: str | None  # the level of the publishing organisation (OFFICE, SUB COMMAND, ...)
    posted_on: str | None  # YYYY-MM-DD
    type: str | None  # the notice's current type, e.g. "Solicitation"
    base_type: str | None  # the type it was first published as
    set_aside_code: str | None  # e.g. "SBA", "NONE"
    set_aside_description: str | None
    response_deadline: str | None  # ISO 8601 date-time with offset, or a bare date
    naics_codes: list[str]
    classification_code: str | None  # product or service code
    active: bool
    archive_type: str | None  # e.g. "auto15", "autocustom", "manual"
    archive_date: str | None  # YYYY-MM-DD
    award: SolicitationAward | None
    points_of_contact: list[SolicitationContact]
    office: SolicitationOffice | None
    place_of_performance: SolicitationPlace | None
    ui_link: str | None
    additional_info_link: str | None
    resource_links: list[str]  # the notice's attachments


def text(value: Any) -> str | None:
    """Trimmed text; null, blanks and the literal "null" are no value."""
    out = source_text(value)
    return None if out is None or out.lower() == "null" else out


def iso_date(value: Any) -> str | None:
    """`YYYY-MM-DD` from a date or the date part of a date-time (`2018-05-09 23:45:22+00`)."""
    m = _DATE.match(text(value) or "")
    if not m:
        return None
    try:
        return _dt.date.fromisoformat(m.group(1)).isoformat()
    except ValueError:
        return None


def deadline(value: Any) -> str | None:
    """SAM.gov's response deadline kept as written when it is an ISO 8601 date-time
    (`2026-03-02T16:00:00-05:00`) or a bare date (`2025-02-24`); anything else is null."""
    raw = text(value)
    if raw is None:
        return None
    try:
        if len(raw) == 10:
            return _dt.date.fromisoformat(raw).isoformat()
        _dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return raw


def flag(value: Any) -> bool:
    """SAM.gov's "Yes"/"No" (a JSON boolean too); anything else is false."""
    if isinstance(value, bool):
        return value
    return (text(value) or "").lower() in _TRUE


def link(value: Any) -> str | None:
    raw = text(value)
    return raw if raw is not None and raw.lower().startswith(("https://", "http://")) else None


def amount(value: Any) -> float | None:
    """A dollar amount sent as a number or as text (`"5000000.00"`)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float((text(value) or "").replace(",", "").lstrip("$"))
    except ValueError:
        return None


def _part(value: Any, key: str) -> str | None:
    """`name`/`code` of a `{code, name}` object; plain text counts as the name."""
    if isinstance(value, Mapping):
        return text(value.get(key))
    return text(value) if key == "name" else None


def place(value: Any) -> SolicitationPlace | None:
    """A place of performance or an awardee location; null when it says nothing."""
    if not isinstance(value, Mapping):
        return None
    streets = [s for s in (text(value.get("streetAddress")), text(value.get("streetAddress2"))) if s]
    city, state, country = value.get("city"), value.get("state"), value.get("country")
    out = SolicitationPlace(
        street_address=", ".join(streets) or None,
        city=_part(city, "name"),
        city_code=_part(city, "code"),
        state=_part(state, "name"),
        state_code=_part(state, "code"),
        zip=text(value.get("zip")) or text(value.get("zipcode")),
        country=_part(country, "name"),
        country_code=_part(country, "code") or text(value.get("countryCode")),
    )
    return None if all(v is None for v in msgspec.structs.astuple(out)) else out


def office(value: Any) -> SolicitationOffice | None:
    if not isinstance(value, Mapping):
        return None
    out = SolicitationOffice(
        city=_part(value.get("city"), "name"),
        state=_part(value.get("state"), "name"),
        zip=text(value.get("zipcode")) or text(value.get("zip")),
        country_code=text(value.get("countryCode")),
    )
    return None if all(v is None for v in msgspec.structs.astuple(out)) else out


def contacts(value: Any) -> list[SolicitationContact]:
    out: list[SolicitationContact] = []
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, Mapping):
            continue
        contact = SolicitationContact(
            type=text(item.get("type")),
            name=text(item.get("fullName")) or text(item.get("fullname")),
            title=text(item.get("title")),
            email=text(item.get("email")),
            phone=text(item.get("phone")),
            fax=text(item.get("fax")),
        )
        if any(v is not None for v in msgspec.structs.astuple(contact)):
            out.append(contact)
    return out


def award(value: Any) -> SolicitationAward | None:
    if not isinstance(value, Mapping):
        return None
    who = value.get("awardee")
    awardee = None
    if isinstance(who, Mapping):
        awardee = SolicitationAwardee(
            name=text(who.get("name")),
            uei_sam=text(who.get("ueiSAM")),
            cage_code=text(who.get("cageCode")),
            duns=text(who.get("duns")),
            location=place(who.get("location")),
        )
        if all(v is None for v in msgspec.structs.astuple(awardee)):
            awardee = None
    out = SolicitationAward(
        date=iso_date(value.get("date")),
        number=text(value.get("number")),
        amount_usd=amount(value.get("amount")),
        awardee=awardee,
    )
    return None if all(v is None for v in msgspec.structs.astuple(out)) else out


def naics(item: Mapping[str, Any]) -> list[str]:
    """`naicsCodes` in SAM.gov's order, then `naicsCode` when the list lacks it; no repeats."""
    listed = item.get("naicsCodes")
    codes = [text(c) for c in (listed if isinstance(listed, list) else [])]
    codes.append(text(item.get("naicsCode")))
    return list(dict.fromkeys(c for c in codes if c))


def department(path: str | None, codes: str | None) -> str | None:
    """The first level of the dotted agency path. The path is split only when the code
    path has as many levels, so a dot inside a name cannot cut it in two."""
    if path is None:
        return None
    names = path.split(".")
    if codes is not None and len(codes.split(".")) != len(names):
        return None
    return names[0].strip() or None


def notice_id(value: Any) -> str | None:
    raw = (text(value) or "").lower()
    return raw if NOTICE_ID.match(raw) else None


def parse_notice(item: Mapping[str, Any]) -> Solicitation | None:
    """One `opportunitiesData` item -> a Solicitation; None when it has no usable noticeId."""
    nid = notice_id(item.get("noticeId"))
    if nid is None:
        return None
    path, codes = text(item.get("fullParentPathName")), text(item.get("fullParentPathCode"))
    resources = item.get("resourceLinks")
    return Solicitation(
        notice_id=nid,
        title=text(item.get("title")),
        solicitation_number=text(item.get("solicitationNumber")),
        agency_path=path,
        agency_path_code=codes,
        department=department(path, codes),
        organization_type=text(item.get("organizationType")),
        posted_on=iso_date(item.get("postedDate")),
        type=text(item.get("type")),
        base_type=text(item.get("baseType")),
        set_aside_code=text(item.get("typeOfSetAside")),
        set_aside_description=text(item.get("typeOfSetAsideDescription")),
        response_deadline=deadline(item.get("responseDeadLine")),
        naics_codes=naics(item),
        classification_code=text(item.get("classificationCode")),
        active=flag(item.get("active")),
        archive_type=text(item.get("archiveType")),
        archive_date=iso_date(item.get("archiveDate")),
        award=award(item.get("award")),
        points_of_contact=contacts(item.get("pointOfContact")),
        office=office(item.get("officeAddress")),
        place_of_performance=place(item.get("placeOfPerformance")),
        ui_link=link(item.get("uiLink")),
        additional_info_link=link(item.get("additionalInfoLink")),
        resource_links=[u for u in (link(r) for r in (resources if isinstance(resources, list) else [])) if u],
    )
