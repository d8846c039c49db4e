"""A plugin of routes for the route runner's tests: a body checked by the route's
`check` (field errors, or a ValueError), a handler that runs a field check itself
(as the email quote does), and a listing with typed query parameters."""

from __future__ import annotations

from typing import Any

import msgspec

from tollway import FieldError, FieldErrors, QueryChoice, QueryFlag, QueryInt, QueryText, Route, RouteCall, hookimpl


class Draft(msgspec.Struct, forbid_unknown_fields=True):
    subject: str
    copies: int = 1


def check_draft(draft: Draft) -> None:
    errors = []
    if "\r" in draft.subject or "\n" in draft.subject:
        errors.append(FieldError("subject", "must be one line"))
    if draft.copies % 2:
        errors.append(FieldError("copies", "must be even"))
    if errors:
        raise FieldErrors(errors)


def check_plainly(draft: Draft) -> None:
    if draft.subject.startswith(" "):
        raise ValueError("the subject starts with a space")


async def echo(call: RouteCall) -> dict[str, Any]:
    return {"subject": call.body.subject, "copies": call.body.copies}


async def quote(call: RouteCall) -> dict[str, Any]:
    if "\r" in call.body.subject:  # the check runs in the handler, as email_quote's does
        raise FieldError("subject", "must be one line")
    return {"subject": call.body.subject}


LIMIT = QueryInt("limit", "1 to 50, default 10.", default=10, low=1, high=50)
NEWEST = QueryFlag("newest", "true for the newest first.")
ORDER = QueryChoice("order", "by name or by date.", ("name", "date"), default="name")
WORD = QueryText("word", "A word to look for.", max_length=20)


async def listing(call: RouteCall) -> dict[str, Any]:
    return {"limit": LIMIT.read(call.query), **call.args}


ROUTES = (
    Route(
        method="POST",
        path="/v1/test/routes/checked",
        name="test_route_checked",
        title="Checked",
        description="A body checked by the route.",
        handle=echo,
        body_type=Draft,
        check=check_draft,
    ),
    Route(
        method="POST",
        path="/v1/test/routes/plain",
        name="test_route_plain",
        title="Plainly checked",
        description="A check raising ValueError.",
        handle=echo,
        body_type=Draft,
        check=check_plainly,
    ),
    Route(
        method="POST",
        path="/v1/test/routes/quote",
        name="test_route_quote",
        title="Quote",
        description="A handler checking a field itself.",
        handle=quote,
        body_type=Draft,
    ),
    Route(
        method="GET",
        path="/v1/test/routes/items",
        name="test_route_items",
        title="Items",
        description="Typed query parameters.",
        handle=listing,
        query=(LIMIT, NEWEST, ORDER, WORD, ("note", "Free text.")),
    ),
)


class RoutesPlugin:
    @hookimpl
    def register_routes(self, register):
        for route in ROUTES:
            register(route)
