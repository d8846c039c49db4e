"""The operator's opt-out list (`/v1/tools/internal/opt-outs`, operator token): people who
asked not to be researched, each entry an email address, a name with a company, or a domain.
A call naming one is refused 403 `opted_out` before any quote or payment (`admit`); a profile
found to match one (its work email, employer, links) fails the job, refunded (`refuse_found`)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Annotated

import msgspec
from msgspec import UNSET, Meta, UnsetType

from tollway import FieldError, Refusal, Route, RouteCall, RouteReply, iso, now_ms

from .match import company_form, domain_form, email_form, name_form, opt_out_keys
from .tables import OptOut

PATH = "/v1/tools/internal/opt-outs"
TAGS = ("operator",)
_EMAIL = r"^[^@\s]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$"
_DOMAIN = (
    r"^(?=.{3,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+\.?$"
)


class OptOutIn(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One of: `email`; `name` with `company`; `domain` (its subdomains too)."""

    email: Annotated[str, Meta(max_length=320, pattern=_EMAIL)] | UnsetType = UNSET
    name: Annotated[str, Meta(min_length=2, max_length=200)] | UnsetType = UNSET
    company: Annotated[str, Meta(min_length=1, max_length=200)] | UnsetType = UNSET
    domain: Annotated[str, Meta(max_length=253, pattern=_DOMAIN)] | UnsetType = UNSET
    note: Annotated[str, Meta(max_length=1000)] | UnsetType = UNSET


class OptOutEntry(msgspec.Struct):
    id: str
    kind: str  # email | name_company | domain
    email: str | None
    name: str | None
    company: str | None
    domain: str | None
    note: str | None
    created_at: str


class OptOutList(msgspec.Struct):
    opt_outs: list[OptOutEntry]
    count: int


class OptOutDeleted(msgspec.Struct):
    id: str
    deleted: bool


def _kind(body: OptOutIn) -> tuple[str, str]:
    """The entry's kind and key; refuses a body that is not exactly one kind."""
    given = [k for k in ("email", "name", "company", "domain") if getattr(body, k) is not UNSET]
    if given == ["email"]:
        return "email", f"email:{email_form(str(body.email))}"
    if given == ["domain"]:
        return "domain", f"domain:{domain_form(str(body.domain))}"
    if given == ["name", "company"] and company_form(str(body.company)) and name_form(str(body.name)):
        return "name_company", f"name_company:{name_form(str(body.name))}|{company_form(str(body.company))}"
    raise FieldError("email", "give exactly one of: email; name and company; domain")


def check(body: OptOutIn) -> None:
    _kind(body)


def _entry(row: dict) -> OptOutEntry:
    return OptOutEntry(
        id=row["id"],
        kind=row["kind"],
        email=row["email"],
        name=row["name"],
        company=row["company"],
        domain=row["domain"],
        note=row["note"],
        created_at=iso(int(row["created_ms"])),
    )


def _given(value: str | UnsetType) -> str | None:
    return None if value is UNSET else str(value)


async def add(call: RouteCall) -> RouteReply:
    """Adds the entry (201), or answers the one already there for the same identifier (200)."""
    body: OptOutIn = call.body
    kind, key = _kind(body)
    row = await OptOut.select().where(OptOut.key == key).first()
    if row is not None:
        return RouteReply(200, _entry(row))
    entry = OptOut(
        id=f"optout_{secrets.token_hex(12)}",
        kind=kind,
        key=key,
        email=_given(body.email),
        name=_given(body.name),
        company=_given(body.company),
        domain=_given(body.domain),
        note=_given(body.note),
        created_ms=now_ms(),
    )
    await OptOut.insert(entry)
    return RouteReply(201, _entry(await OptOut.select().where(OptOut.key == key).first()))


async def listing(call: RouteCall) -> OptOutList:
    rows = await OptOut.select().order_by(OptOut.created_ms)
    return OptOutList(opt_outs=[_entry(r) for r in rows], count=len(rows))


async def remove(call: RouteCall) -> OptOutDeleted:
    gone = await OptOut.delete().where(OptOut.id == call.params["opt_out_id"]).returning(OptOut.id)
    if not gone:
        raise Refusal("not_found", f"No opt-out {call.params['opt_out_id']!r}.", status=404)
    return OptOutDeleted(id=call.params["opt_out_id"], deleted=True)


def opted_out() -> Refusal:
    return Refusal(
        "opted_out",
        "This person has asked this service's operator not to be researched. Nothing was charged.",
        status=403,
    )


async def matches(keys: Iterable[str]) -> bool:
    wanted = list(keys)
    return bool(wanted) and await OptOut.exists().where(OptOut.key.is_in(wanted))


async def refuse_listed(
    *, name: str | None, companies: Iterable[str], emails: Iterable[str], domains: Iterable[str]
) -> None:
    """Raise `opted_out` when any of these identifiers is on the list."""
    companies = [c for c in companies if c]
    # a company given as a domain ("example.com") is matched as a domain too
    domains = [*domains, *(c for c in companies if "." in c and " " not in c.strip())]
    emails = [e for e in emails if e]
    domains += [e.rsplit("@", 1)[1] for e in emails if "@" in e]
    if await matches(opt_out_keys(name=name, companies=companies, emails=emails, domains=domains)):
        raise opted_out()


ROUTES = (
    Route(
        method="POST",
        path=PATH,
        name="operator_people_opt_out_add",
        title="Add a people-research opt-out",
        description="Adds a person who asked not to be researched: an email address, a name with a company, or a "
        "domain (its subdomains too). People research naming one, or finding a profile that matches one, is "
        "refused 403 opted_out. Answers 201, or 200 with the entry already there for the same identifier.",
        handle=add,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        body_type=OptOutIn,
        answer_type=OptOutEntry,
        status=201,
        check=check,
        also_answers=((200, "The identifier was already on the list."),),
        statuses=(400, 401),
    ),
    Route(
        method="GET",
        path=PATH,
        name="operator_people_opt_out_list",
        title="List the people-research opt-outs",
        description="Every opt-out entry, oldest first.",
        handle=listing,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        answer_type=OptOutList,
        statuses=(401,),
    ),
    Route(
        method="DELETE",
        path=f"{PATH}/{{opt_out_id}}",
        name="operator_people_opt_out_delete",
        title="Remove a people-research opt-out",
        description="Removes one opt-out entry by its id.",
        handle=remove,
        auth="operator",
        rate_limit=None,
        tags=TAGS,
        answer_type=OptOutDeleted,
        param_docs=(("opt_out_id", "The entry's id (optout_...)."),),
        statuses=(401, 404),
    ),
)
