"""`enrich_profile` (a person's public work profile from an email address or a profile URL)
and `enrich_email` (a person's work email from their name and company): one provider lookup
each, 0.05 USDC, nothing found is `enrichment_exhausted` and not charged. Personal data: no
facts are recorded, and the answer keeps only work-profile fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Protocol, cast

import msgspec
from msgspec import UNSET, Meta, UnsetType

from tollway import Example, FieldError, Tool, ToolContext, ToolError

FAMILY = "enrich"
PRICE = "0.05"
_EMAIL = r"^[^@\s]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$"
_DOMAIN = r"^(?=.{3,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"


class ProfileQuery(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Who to look up: exactly one of an email address or a profile URL (e.g. linkedin.com/in/…)."""

    email: Annotated[str, Meta(max_length=320, pattern=_EMAIL)] | UnsetType = UNSET
    profile_url: Annotated[str, Meta(min_length=8, max_length=500)] | UnsetType = UNSET


class EmailQuery(msgspec.Struct, forbid_unknown_fields=True):
    """Whose work email: their full name and their company's web domain."""

    name: Annotated[str, Meta(min_length=2, max_length=200)]
    company_domain: Annotated[str, Meta(max_length=253, pattern=_DOMAIN)]


class Profile(msgspec.Struct):
    full_name: str | None
    job_title: str | None
    company: str | None
    company_domain: str | None
    location: str | None
    linkedin_url: str | None
    work_email: str | None
    likelihood: int | None  # the provider's 1..10 confidence in the match


class FoundEmail(msgspec.Struct):
    email: str
    full_name: str | None
    company_domain: str
    likelihood: int | None


def _str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _profile(person: dict[str, Any]) -> Profile:
    return Profile(
        full_name=_str(person.get("full_name")),
        job_title=_str(person.get("job_title")),
        company=_str(person.get("job_company_name")),
        company_domain=_str(person.get("job_company_website")),
        location=_str(person.get("location_name")),
        linkedin_url=_str(person.get("linkedin_url")),
        work_email=_str(person.get("work_email")),
        likelihood=person.get("likelihood") if isinstance(person.get("likelihood"), int) else None,
    )


def _exhausted() -> ToolError:
    return ToolError("enrichment_exhausted", "No data was found for this person; supply more identifiers.", status=404)


def check_profile(query: ProfileQuery) -> None:
    if (query.email is UNSET) == (query.profile_url is UNSET):
        raise FieldError("email", "give exactly one of email and profile_url")


class Enrichment(Protocol):
    """What every `enrichment` provider's client offers (`PeopleDataLabs` is one)."""

    async def person(self, params: Mapping[str, str]) -> dict[str, Any] | None: ...


def _enrichment(ctx: ToolContext) -> Enrichment:
    return cast(Enrichment, ctx.provider("enrichment"))  # the kind's interface


async def run_profile(query: ProfileQuery, ctx: ToolContext) -> Profile:
    params = {"email": query.email} if query.email is not UNSET else {"profile": str(query.profile_url)}
    person = await _enrichment(ctx).person(params)
    if person is None:
        raise _exhausted()
    return _profile(person)


async def run_email(query: EmailQuery, ctx: ToolContext) -> FoundEmail:
    person = await _enrichment(ctx).person({"name": query.name, "company": query.company_domain.lower()})
    email = _str((person or {}).get("work_email"))
    if person is None or email is None or not email.lower().endswith("@" + query.company_domain.lower()):
        raise _exhausted()
    return FoundEmail(
        email=email,
        full_name=_str(person.get("full_name")),
        company_domain=query.company_domain.lower(),
        likelihood=person.get("likelihood") if isinstance(person.get("likelihood"), int) else None,
    )


ENRICH_PROFILE = Tool(
    name="enrich_profile",
    path="/v1/tools/enrich/profile",
    title="Enrich a person's profile",
    description="A person's public work profile (name, title, company, location, profile URL, work email) from an email address "
    "or a profile URL. Nothing found is enrichment_exhausted and costs nothing.",
    category="data",
    subcategory="enrichment",
    input_type=ProfileQuery,
    output_type=Profile,
    run=run_profile,
    price=PRICE,
    family=FAMILY,
    rate_limit="paid",
    idempotency="optional",
    check=check_profile,
    provider_kind="enrichment",
    exactly_one_of=(("email", "profile_url"),),
    examples=(Example(title="From a work email", input={"email": "dana.reyes@example.com"}),),
)
ENRICH_EMAIL = Tool(
    name="enrich_email",
    path="/v1/tools/enrich/email",
    title="Find a person's work email",
    description="A person's work email at a company, from their full name and the company's web domain. Nothing found is "
    "enrichment_exhausted and costs nothing.",
    category="data",
    subcategory="enrichment",
    input_type=EmailQuery,
    output_type=FoundEmail,
    run=run_email,
    price=PRICE,
    family=FAMILY,
    rate_limit="paid",
    idempotency="optional",
    provider_kind="enrichment",
    examples=(Example(title="A work email", input={"name": "Dana Reyes", "company_domain": "example.com"}),),
)
